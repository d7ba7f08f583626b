#pragma once
// NVTX ranges that name the engine's phases for profilers (Nsight Systems shows "mgjoin: sort", "mgjoin: merge R", ...).
// Without a profiler attached the calls cost next to nothing.
#include <nvtx3/nvToolsExt.h>

#include <string>

namespace mgjoin::detail {

/// One open range at a time: mark() closes the previous phase's range and opens the next one; the
/// destructor closes the last.
class PhaseRanges {
 public:
  PhaseRanges() = default;
  PhaseRanges(const PhaseRanges&) = delete;
  PhaseRanges& operator=(const PhaseRanges&) = delete;
  ~PhaseRanges() { close(); }

  void mark(const std::string& phase) {
    close();
    nvtxRangePushA(("mgjoin: " + phase).c_str());
    open_ = true;
  }
  void close() {
    if (open_) nvtxRangePop();
    open_ = false;
  }

 private:
  bool open_ = false;
};

}  // namespace mgjoin::detail
