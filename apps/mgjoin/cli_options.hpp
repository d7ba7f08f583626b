#pragma once
// Option parsing shared by the subcommands (generate, join, bench): byte sizes with suffixes,
// workload options, and a progress bar for terminals. Errors are one-line InputErrors naming the option.
#include "core/byte_size.hpp"

#include <mgjoin/error.hpp>
#include <mgjoin/generate.hpp>
#include <mgjoin/join.hpp>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
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

/// Whether a command draws a progress bar: only on a terminal (stderr), so that logs stay clean, and
/// not with --quiet.
inline bool progress_wanted(bool quiet) { return !quiet && ::isatty(STDERR_FILENO) == 1; }

/// The progress bar of one command on stderr ("mgjoin: sort         [#######.......]  52%  3.1 s"): one
/// line, drawn only once the command has run a second (a short join leaves no trace), redrawn at most ten
/// times a second, and cleared when the command ends. MGJOIN_TEST_PROGRESS_AFTER_MS replaces the second
/// (a test hook).
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : state_(std::make_shared<State>()) {
    state_->enabled = enabled;
    state_->start = std::chrono::steady_clock::now();
    if (const char* after = std::getenv("MGJOIN_TEST_PROGRESS_AFTER_MS"))
      state_->after = std::chrono::milliseconds(std::atoll(after));
  }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar() { clear(); }

  /// The engine's progress callback; empty (no reports at all) when the bar is off.
  ProgressCallback callback() const {
    if (!state_->enabled) return {};
    return [state = state_](const std::string& phase, double fraction) { state->draw(phase, fraction); };
  }

  /// Removes the bar's line, if drawn, so that what follows starts on a clean line.
  void clear() {
    const std::lock_guard lock(state_->mutex);
    if (!state_->drawn) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    state_->drawn = false;
  }

 private:
  struct State {
    bool enabled = false, drawn = false;
    std::chrono::milliseconds after{1000};
    std::chrono::steady_clock::time_point start, last{};

    std::mutex mutex;  // a join may report from more than one thread

    void draw(const std::string& phase, double fraction) {
      const std::lock_guard lock(mutex);
      const auto now = std::chrono::steady_clock::now();
      if (now - start < after || (drawn && now - last < std::chrono::milliseconds(100))) return;
      last = now;
      drawn = true;
      constexpr int kWidth = 24;
      const double f = std::clamp(fraction, 0.0, 1.0);
      const int filled = static_cast<int>(f * kWidth);
      const std::string bar = std::string(static_cast<std::size_t>(filled), '#') +
                              std::string(static_cast<std::size_t>(kWidth - filled), '.');
      std::fprintf(stderr, "\rmgjoin: %-12s [%s] %3d%%  %.1f s\033[K", phase.c_str(), bar.c_str(),
                   static_cast<int>(f * 100), std::chrono::duration<double>(now - start).count());
      std::fflush(stderr);
    }
  };
  std::shared_ptr<State> state_;
};

}  // namespace mgjoin::cli
