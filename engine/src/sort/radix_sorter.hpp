#pragma once
// The radix-partitioning multi-GPU sort of one chunkset (paper, Section 3.1.2), behind ChunksetSorter:
//   1. each GPU partitions its chunk on the top 8 bits (primary → secondary buffer) and sends its
//      histogram to the host (the histogram exchange: one host synchronisation);
//   2. bucket distribution; spanning buckets are partitioned again on their next 8 bits, in place in
//      the secondary buffer, until every GPU boundary sits at a bucket edge (or inside a single key);
//   3. one all-to-all bucket swap (copy engines or NCCL) into the primary buffers, laid out as sort units;
//   4. each unit is sorted by CUB over its remaining bits, and copied back while later units sort.
#include "engine/src/sort/chunkset_sorter.hpp"

#include <mgjoin/join.hpp>

#include <memory>

namespace mgjoin::p2p {
class NcclComms;
}

namespace mgjoin::sort {

/// `nccl` is required for Exchange::Nccl (its ranks in the order of the chunkset's GPUs), else unused.
std::unique_ptr<ChunksetSorter> make_radix_sorter(Exchange exchange, const p2p::NcclComms* nccl);

}  // namespace mgjoin::sort
