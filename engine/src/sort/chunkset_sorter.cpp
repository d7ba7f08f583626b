// Part timeline of the chunkset sorters (see chunkset_sorter.hpp).
#include "engine/src/sort/chunkset_sorter.hpp"

#include <mgjoin/error.hpp>

namespace mgjoin::sort {

void PartTimeline::record_begin(SortPart p, cudaStream_t s) {
  const auto i = static_cast<int>(p);
  MGJOIN_CUDA_TRY(cudaEventRecord(begin[i], s));
}

void PartTimeline::record_end(SortPart p, cudaStream_t s) {
  const auto i = static_cast<int>(p);
  MGJOIN_CUDA_TRY(cudaEventRecord(end[i], s));
  recorded[i] = true;
}

}  // namespace mgjoin::sort
