#include "engine/src/exec/kept_inputs.hpp"

#include "host_merge/parallel_copy.hpp"

#include <mgjoin/error.hpp>

namespace mgjoin::detail {

HostColumn copy_column(const ColumnView& c) {
  HostColumn copy = HostColumn::allocate(c.type, c.size, MemoryKind::Pinned);
  host_merge::parallel_copy(copy.data(), c.data, copy.bytes());
  return copy;
}

namespace {

MutableColumnView copy_into(std::vector<HostColumn>& columns, const MutableColumnView& c) {
  HostColumn& copy = columns.emplace_back(copy_column({c.data, c.size, c.type}));
  return {copy.data(), c.size, c.type};
}

RelationView copy_relation(std::vector<HostColumn>& columns, const RelationView& rel) {
  RelationView v{copy_into(columns, rel.key), std::nullopt};
  if (rel.payload) v.payload = copy_into(columns, *rel.payload);
  return v;
}

}  // namespace

KeptInputs copy_inputs(const RelationView& r, const RelationView& s) {
  KeptInputs kept;
  kept.columns.reserve(4);  // (the views point into the columns: no reallocation)
  kept.r = copy_relation(kept.columns, r);
  kept.s = copy_relation(kept.columns, s);
  return kept;
}

void expect_inputs_keepable(const JoinSettings& options) {
  MGJOIN_INPUT_EXPECTS(!options.keep_inputs || options.output != OutputMode::Ranges,
                       "JoinOptions::keep_inputs: ranges index the sorted inputs, which keep_inputs leaves unsorted "
                       "(ask for Count or Materialize)");
}

}  // namespace mgjoin::detail
