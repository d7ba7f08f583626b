#pragma once
// Option parsing shared by the subcommands (generate, join, bench): byte sizes with suffixes,
// workload options, and a progress line for terminals. Errors are one-line InputErrors naming the option.
#include <mgjoin/error.hpp>
#include <mgjoin/generate.hpp>
#include <mgjoin/join.hpp>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace mgjoin::cli {

/// "8G", "512MiB", "1.5T", "4096" -> bytes (K/M/G/T are powers of 1024).
inline std::uint64_t parse_byte_size(const std::string& text, const char* option) {
  const auto bad = [&] {
    return InputError(std::string(option) + " '" + text + "': expected a byte count like 4096, 512M or 8G");
  };
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  std::string suffix = text.substr(used);
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.pop_back();
  if (suffix.size() == 2 && suffix[1] == 'i') suffix.pop_back();
  int shift = 0;
  if (suffix.size() == 1) {
    const std::string units = "KMGT";
    const auto at = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0]))));
    if (at == std::string::npos) throw bad();
    shift = 10 * static_cast<int>(at + 1);
  } else if (!suffix.empty()) {
    throw bad();
  }
  const double bytes = std::ldexp(value, shift);
  if (!(bytes >= 0) || bytes >= 0x1p64) throw bad();
  return static_cast<std::uint64_t>(bytes);
}

/// Registers --workload --scale --selectivity --zipf --seed; call finish_workload_spec() in the callback.
struct WorkloadOptions {
  std::string workload;
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
    cmd.add_option("--seed", spec.seed, "random seed; the same seed gives the same data")->capture_default_str();
  }

  /// Parses the workload name and validates every value. @throw InputError naming the option.
  const WorkloadSpec& finish() {
    const auto parsed = parse_workload(workload);
    MGJOIN_INPUT_EXPECTS(parsed.has_value(), "--workload " + workload + ": unknown workload (expected A or B)");
    spec.workload = *parsed;
    workload_shape(spec);  // validates scale, selectivity and zipf
    return spec;
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
