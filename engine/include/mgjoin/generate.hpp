#pragma once
// The paper's synthetic join workloads (Section 4.1.3, Table 2), generated straight into memory.
//
//   workload  key/payload type   |R|          |S|
//   A         uint32 / uint32    f * 10^8     f * 10^9
//   B         uint64 / uint64    f * 10^9     f * 10^9
//
// R keys are unique and uniform over the whole 32- or 64-bit range (a keyed bijection of the row
// index, so R is also in random key order). S keys are foreign keys into R: each S row matches
// exactly one R row with probability `selectivity`, else it gets a key absent from R. S picks its
// R rows uniformly (zipf = 0) or by a Zipf(theta) law over R's rows (Gray et al., SIGMOD '94).
// Payloads are row indices (R payload i = i, S payload j = j; truncated to 32 bits in A), so any
// join output can be checked. Keys are unsigned: "uniform over the whole range" is then the
// natural [0, 2^w) and sorts identically on the CPU and the GPU.
//
// Deterministic: every row comes from a counter-based RNG keyed by (seed, row), so the same spec
// gives the same relations on any thread count.
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace mgjoin {

enum class Workload : std::uint8_t { A, B };

/// "A"/"B" (either case); nullopt otherwise.
std::optional<Workload> parse_workload(std::string_view name);

struct WorkloadSpec {
  Workload workload = Workload::B;
  double scale = 1;        ///< f in Table 2; fractions allowed
  double selectivity = 1;  ///< sigma in [0, 1]: fraction of S rows with a match in R
  double zipf = 0;         ///< theta in [0, 1]: 0 = uniform, 1 = classic Zipf
  double hot_key = 0;      ///< fraction of matching S rows that take R row 0's key instead (one hot key)
  std::uint64_t seed = 1;
};

/// Rows and types a spec produces.
struct WorkloadShape {
  std::int64_t r_rows = 0, s_rows = 0;
  DType key_type = DType::UInt64, payload_type = DType::UInt64;
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(r_rows + s_rows) * 2 * dtype_size(key_type); }
};

/// Validates the spec and computes its sizes.
/// @throw InputError naming the field ("WorkloadSpec::scale", "::selectivity", "::zipf", "::hot_key") when out of range.
WorkloadShape workload_shape(const WorkloadSpec& spec);

struct GeneratedWorkload {
  Relation r, s;
};

/// Generates R and S (with payloads) in parallel with all OpenMP threads. `progress`, if set, is
/// called from the calling thread with phase "generate" and the fraction done.
/// @throw InputError as workload_shape; OutOfMemory when the columns cannot be allocated.
GeneratedWorkload generate_workload(const WorkloadSpec& spec, MemoryKind memory = MemoryKind::Pageable,
                                    const ProgressCallback& progress = {});

/// Generates into caller-owned columns (e.g. pinned buffers from a stack allocator): `r` and `s`
/// must have payloads and the sizes and types of workload_shape(spec).
/// @throw InputError as workload_shape; Error when the views do not match the shape.
void generate_workload_into(const WorkloadSpec& spec, RelationView r, RelationView s,
                            const ProgressCallback& progress = {});

}  // namespace mgjoin
