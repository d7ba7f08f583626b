#pragma once
// Option parsing shared by the subcommands (generate, join, bench): byte sizes with suffixes,
// workload options, and a progress line for terminals. Errors are one-line InputErrors naming the option.
#include "core/byte_size.hpp"

#include <mgjoin/error.hpp>
#include <mgjoin/generate.hpp>
#include <mgjoin/join.hpp>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace mgjoin::cli {

/// "8G", "512MiB", "1.5T", "4096" -> bytes (K/M/G/T are powers of 1024; core/byte_size.hpp's rule).
inline std::uint64_t parse_byte_size(const std::string& text, const char* option) {
  const auto bytes = detail::parse_byte_size(text);
  MGJOIN_INPUT_EXPECTS(bytes.has_value(),
                       std::string(option) + " '" + text + "': expected a byte count like 4096, 512M or 8G");
  return *bytes;
}

/// A number for a message: "1e+300", not the 300 digits std::to_string writes.
inline std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

/// A decimal whole number in [0, 2^64). CLI11 would take "-1" as 2^64 - 1 and 2^64 as 2^64 - 1 without
/// a word, and "010" as octal.
inline std::uint64_t parse_uint64(const std::string& text, const char* option) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  MGJOIN_INPUT_EXPECTS(!text.empty() && ec == std::errc{} && stop == end,
                       std::string(option) + " " + text + ": expected a whole number from 0 to 18446744073709551615");
  return value;
}

/// Registers --workload --scale --selectivity --zipf --seed; call finish() in the callback.
struct WorkloadOptions {
  std::string workload;
  std::string seed = "1";
  WorkloadSpec spec;

  void add_to(CLI::App& cmd) {
    cmd.add_option("--workload", workload, "A (uint32 keys and payloads, |S| = 10|R|) or B (uint64, |R| = |S|)")
        ->required();
    cmd.add_option("--scale", spec.scale, "scale factor f: |R| = f*10^8 (A) or f*10^9 (B); fractions allowed")
        ->required();
    cmd.add_option("--selectivity", spec.selectivity, "fraction of S rows with a match in R, in [0, 1]")
        ->capture_default_str();
    cmd.add_option("--zipf", spec.zipf, "skew theta of S's choice of R rows, in [0, 1]; 0 = uniform")
        ->capture_default_str();
    cmd.add_option("--hot-key", spec.hot_key, "fraction of matching S rows given one hot key (R row 0's), in [0, 1]")
        ->capture_default_str();
    cmd.add_option("--seed", seed, "random seed (0 to 2^64 - 1); the same seed gives the same data")
        ->capture_default_str();
  }

  /// Parses the workload name and validates every value. @throw InputError naming the option.
  const WorkloadSpec& finish() {
    const auto parsed = parse_workload(workload);
    MGJOIN_INPUT_EXPECTS(parsed.has_value(), "--workload " + workload + ": unknown workload (expected A or B)");
    spec.workload = *parsed;
    spec.seed = parse_uint64(seed, "--seed");
    const WorkloadShape shape = workload_shape(spec);  // validates scale, selectivity and zipf
    // workload_shape() allows up to 2^62 rows, whose bytes wrap past 2^64 in the allocation's arithmetic
    // (a crash, not an error): far beyond any host memory, so refused here.
    const auto rows = static_cast<std::uint64_t>(shape.r_rows) + static_cast<std::uint64_t>(shape.s_rows);
    MGJOIN_INPUT_EXPECTS(rows <= (std::uint64_t{1} << 62) / dtype_size(shape.key_type),
                         "--scale " + number_text(spec.scale) + ": more than 2^62 bytes of data, past any host memory");
    return spec;
  }

  /// generate_workload(); host memory that cannot hold the workload is blamed on --scale.
  GeneratedWorkload generate(MemoryKind memory, const ProgressCallback& progress) const {
    try {
      return generate_workload(spec, memory, progress);
    } catch (const OutOfMemory& e) {
      throw InputError("--scale " + number_text(spec.scale) + ": the workload does not fit: " + e.what());
    }
  }
};

/// A progress callback that redraws one stderr line ("mgjoin: generate  42%") at most 10 times a
/// second, or an empty callback when stderr is not a terminal (logs stay clean).
inline ProgressCallback terminal_progress() {
  if (!::isatty(STDERR_FILENO)) return {};
  struct State {
    std::chrono::steady_clock::time_point last{};
  };
  auto state = std::make_shared<State>();
  return [state](const std::string& phase, double fraction) {
    const auto now = std::chrono::steady_clock::now();
    if (fraction < 1 && now - state->last < std::chrono::milliseconds(100)) return;
    state->last = now;
    std::fprintf(stderr, "\rmgjoin: %-12s %3d%%%s", phase.c_str(), static_cast<int>(fraction * 100),
                 fraction >= 1 ? "\n" : "");
    std::fflush(stderr);
  };
}

}  // namespace mgjoin::cli
