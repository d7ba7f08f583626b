#pragma once
// The host rates `mgjoin tune` measures for the planner's cost model (engine/src/plan/cost_model.hpp): a
// copy between host buffers, the merge phase's multiway merge and a random gather by a row-index map, each
// with all OpenMP threads.
#include <cstddef>

namespace mgjoin::cli {

/// GB/s of a copy of `bytes` between two host buffers (bytes copied per second), median of `repeats`.
double measure_host_memcpy_gbps(std::size_t bytes, int repeats);

/// GB/s of the multiway merge of 4 sorted runs of 8-byte keys with 8-byte payloads, `bytes` of tuples
/// in all (bytes written per second), median of `repeats`.
double measure_cpu_merge_gbps(std::size_t bytes, int repeats);

/// GB/s of out[i] = column[map[i]] over `bytes` / 8 rows of 8-byte words, `map` an int64 random permutation of
/// the rows (bytes written per second), median of `repeats`. Over a column much larger than the caches each
/// row costs a cache miss whatever its width, so a planner prices a gather of any column by rows × 8 bytes.
double measure_cpu_gather_gbps(std::size_t bytes, int repeats);

}  // namespace mgjoin::cli
