#pragma once
// JoinOptions::keep_inputs: the flows that sort their inputs in place (the paper flow, the CPU path) sort
// copies instead, taken only when one of them runs; the co-partitioned flow reads its inputs as they are.
// So a caller that must keep its columns (join_tables: "the caller's inputs are never modified") pays
// for copies only where a flow would write them.
#include <mgjoin/join.hpp>

#include <vector>

namespace mgjoin::detail {

/// Copies of R's and S's columns (pinned, as inputs the GPUs copy from should be) and views of them.
struct KeptInputs {
  std::vector<HostColumn> columns;
  RelationView r, s;
};

/// A pinned copy of a column (one a flow may sort in place; pinned, so the GPUs read it at full speed),
/// copied on all threads.
HostColumn copy_column(const ColumnView& c);

/// Copies of `r` and `s` that a flow may sort in place (copied on all threads).
KeptInputs copy_inputs(const RelationView& r, const RelationView& s);

/// Refuses keep_inputs with OutputMode::Ranges: ranges index the sorted inputs, which it leaves unsorted.
/// @throw InputError naming the option.
void expect_inputs_keepable(const JoinSettings& options);

}  // namespace mgjoin::detail
