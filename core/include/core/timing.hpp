#pragma once
// The one wall clock of the library and its tools: phases, steps and runs are timed by it.
#include <chrono>

namespace mgjoin::timing {

using Clock = std::chrono::steady_clock;

/// Seconds from `t` to now.
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace mgjoin::timing
