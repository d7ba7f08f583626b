#include "topology/log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mgjoin::topology {

namespace {
bool verbose_from_env() {
  const char* v = std::getenv("MGJOIN_VERBOSE");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}
std::atomic<bool>& verbose_flag() {
  static std::atomic<bool> flag{verbose_from_env()};
  return flag;
}
}  // namespace

void set_verbose(bool on) { verbose_flag() = on; }
bool verbose() { return verbose_flag(); }

void log_verbose(std::string_view message) {
  if (verbose()) std::fprintf(stderr, "mgjoin: %.*s\n", static_cast<int>(message.size()), message.data());
}

void log_warning(std::string_view message) {
  std::fprintf(stderr, "mgjoin: warning: %.*s\n", static_cast<int>(message.size()), message.data());
}

}  // namespace mgjoin::topology
