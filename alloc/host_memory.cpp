#include "alloc/host_memory.hpp"

#include "core/byte_size.hpp"
#include "core/checked_math.hpp"

#include <mgjoin/error.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace mgjoin::alloc {
namespace {

std::optional<std::string> read_text(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A number in a cgroup file; nullopt for "max" (no limit), a missing file or v1's "no limit" value.
std::optional<std::uint64_t> read_cgroup_number(const char* path) {
  const auto text = read_text(path);
  if (!text) return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text->c_str(), &end, 10);
  if (end == text->c_str()) return std::nullopt;  // "max"
  if (v >= (1ull << 60)) return std::nullopt;      // v1 writes ~2^63 for no limit
  return v;
}

std::optional<std::uint64_t> mem_available() {
  const auto text = read_text("/proc/meminfo");
  if (!text) return std::nullopt;
  const auto at = text->find("MemAvailable:");
  if (at == std::string::npos) return std::nullopt;
  const unsigned long long kib = std::strtoull(text->c_str() + at + 13, nullptr, 10);
  return static_cast<std::uint64_t>(kib) << 10;
}

bool virtio_mem_bound() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/bus/virtio/drivers/virtio_mem", ec))
    if (entry.path().filename().string().starts_with("virtio")) return true;
  return false;
}

std::uint64_t resident_bytes() {
  const auto text = read_text("/proc/self/statm");
  if (!text) return 0;
  unsigned long long size = 0, resident = 0;
  if (std::sscanf(text->c_str(), "%llu %llu", &size, &resident) != 2) return 0;
  return static_cast<std::uint64_t>(resident) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

/// A byte size from the environment; nullopt when unset. @throw InputError naming a bad value.
std::optional<std::uint64_t> env_bytes(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  const auto bytes = detail::parse_byte_size(v);
  MGJOIN_INPUT_EXPECTS(bytes.has_value(),
                       std::string(name) + " '" + v + "': expected a byte count like 4096, 512M or 64G");
  return bytes;
}

/// A field of a memory.stat file ("inactive_file 123\n"); 0 when absent.
std::uint64_t stat_field(const std::string& path, const std::string& field) {
  const auto text = read_text(path.c_str());
  if (!text) return 0;
  std::istringstream in(*text);
  std::string name;
  unsigned long long value = 0;
  while (in >> name >> value)
    if (name == field) return value;
  return 0;
}

/// The cgroup's limit and what counts against it: usage less the inactive page cache, which the kernel
/// reclaims before it kills (read input files fill the cache, and must not look like used memory).
struct CgroupReading {
  std::uint64_t limit = 0, usage = 0;
};

/// cgroup v2: the process's own cgroup (from /proc/self/cgroup) and its ancestors, the tightest room;
/// v1: the memory controller's root as mounted in the container.
std::optional<CgroupReading> cgroup_memory() {
  std::optional<CgroupReading> best;
  const auto consider = [&](std::uint64_t limit, std::uint64_t usage) {
    if (!best || limit - std::min(limit, usage) < best->limit - std::min(best->limit, best->usage)) best = {limit, usage};
  };
  std::string own = "/";
  if (const auto text = read_text("/proc/self/cgroup")) {
    const auto at = text->find("0::");
    if (at != std::string::npos) own = text->substr(at + 3, text->find('\n', at) - at - 3);
  }
  for (std::filesystem::path dir = "/sys/fs/cgroup" + own;; dir = dir.parent_path()) {
    if (const auto limit = read_cgroup_number((dir / "memory.max").c_str())) {
      const std::uint64_t current = read_cgroup_number((dir / "memory.current").c_str()).value_or(0);
      const std::uint64_t inactive = stat_field(dir / "memory.stat", "inactive_file");
      consider(*limit, current - std::min(current, inactive));
    }
    if (dir.string().size() <= std::string("/sys/fs/cgroup").size()) break;
  }
  if (const auto limit = read_cgroup_number("/sys/fs/cgroup/memory/memory.limit_in_bytes")) {
    const std::uint64_t usage = read_cgroup_number("/sys/fs/cgroup/memory/memory.usage_in_bytes").value_or(0);
    const std::uint64_t inactive = stat_field("/sys/fs/cgroup/memory/memory.stat", "total_inactive_file");
    consider(*limit, usage - std::min(usage, inactive));
  }
  return best;
}

void tighten(HostMemoryRoom& room, std::uint64_t bytes, const char* bound) {
  if (room.bytes && *room.bytes <= bytes) return;
  room.bytes = bytes;
  room.bound = bound;
}

}  // namespace

HostMemoryReadings read_host_memory() {
  HostMemoryReadings r;
  r.mem_available = mem_available();
  r.memory_grows = virtio_mem_bound();
  if (const auto cgroup = cgroup_memory()) {
    r.cgroup_limit = cgroup->limit;
    r.cgroup_usage = cgroup->usage;
  }
  r.env_limit = env_bytes("MGJOIN_HOST_MEMORY_LIMIT");
  if (r.env_limit) r.resident = resident_bytes();
  return r;
}

void check_host_memory_environment() {
  env_bytes("MGJOIN_HOST_MEMORY_LIMIT");
  env_bytes("MGJOIN_PINNED_CACHE_BYTES");
}

std::optional<std::uint64_t> pinned_cache_bytes_from_environment() {
  try {
    return env_bytes("MGJOIN_PINNED_CACHE_BYTES");
  } catch (const InputError&) {
    return std::nullopt;
  }
}

HostMemoryRoom host_memory_room(const HostMemoryReadings& r) {
  HostMemoryRoom room;
  if (r.mem_available && !r.memory_grows) tighten(room, *r.mem_available, "MemAvailable");
  if (r.cgroup_limit)
    tighten(room, *r.cgroup_limit - std::min(*r.cgroup_limit, r.cgroup_usage), "the cgroup's memory limit");
  if (r.env_limit) tighten(room, *r.env_limit - std::min(*r.env_limit, r.resident), "MGJOIN_HOST_MEMORY_LIMIT");
  return room;
}

std::string format_bytes(std::uint64_t bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", v, units[u]);
  return text;
}

void expect_host_memory(std::uint64_t bytes, const std::string& what, const HostMemoryReadings& readings) {
  const HostMemoryRoom room = host_memory_room(readings);
  if (!room.bytes) return;
  const std::uint64_t usable = *room.bytes - std::min(*room.bytes, kHostMemoryReserve);
  if (bytes <= usable) return;
  throw OutOfMemory("host memory: " + what + " needs " + format_bytes(bytes) + " more, but only " +
                    format_bytes(usable) + " can be had (" + room.bound + ", less a " +
                    format_bytes(kHostMemoryReserve) + " reserve)");
}

void expect_host_memory(std::uint64_t bytes, const std::string& what) {
  try {
    expect_host_memory(bytes, what, read_host_memory());
  } catch (const OutOfMemory&) {
    if (release_pinned_cache() == 0) throw;
    expect_host_memory(bytes, what, read_host_memory());  // the freed blocks are available now
  }
}

bool host_memory_would_hold(std::uint64_t bytes, const HostMemoryReadings& readings, std::uint64_t cached) {
  const HostMemoryRoom room = host_memory_room(readings);
  if (!room.bytes) return true;
  // What expect_host_memory would see once it freed the cached blocks: their bytes back in the room,
  // then the reserve taken off it.
  const std::uint64_t freed = *room.bytes + cached;
  return bytes <= freed - std::min(freed, kHostMemoryReserve);
}

bool host_memory_would_hold(std::uint64_t bytes) {
  return host_memory_would_hold(bytes, read_host_memory(), pinned_cache_bytes());
}

void expect_host_rows(std::uint64_t rows, std::uint64_t row_bytes, const std::string& what) {
  std::uint64_t bytes = 0;
  if (mul_overflows(rows, row_bytes, &bytes)) bytes = ~std::uint64_t{0};
  expect_host_memory(bytes, what);
}

std::uint64_t peak_resident_bytes() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

}  // namespace mgjoin::alloc
