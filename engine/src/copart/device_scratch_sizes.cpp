// The scratch sizes of a plan as CUB on the current device tells them (copart_plan.hpp).
#include "engine/src/copart/copart_plan.hpp"

#include "engine/src/sort/local_sort.hpp"

#include <algorithm>

namespace mgjoin::copart {

ScratchSizes device_scratch_sizes() {
  ScratchSizes s;
  s.sort = [](std::int64_t rows, int key_bytes, int payload_bytes) {
    return sort::local_sort_temp_bytes({key_bytes, payload_bytes, false}, std::max<std::int64_t>(rows, 1));
  };
  s.partition = [](std::int64_t rows, int gpus) { return partition_scratch_bytes(rows, gpus); };
  s.scan = [](std::uint64_t n) { return scan_scratch_bytes(n); };
  return s;
}

}  // namespace mgjoin::copart
