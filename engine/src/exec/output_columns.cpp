// OutputColumns (output_columns.hpp).
#include "engine/src/exec/output_columns.hpp"

#include "alloc/host_memory.hpp"
#include "core/checked_math.hpp"
#include "engine/src/exec/output_writer.hpp"
#include "engine/src/join/output_count.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace mgjoin::exec {

OutputColumns::OutputColumns(const RelationView& r, const RelationView& s, const Widths& rw, const Widths& sw,
                             JoinResult& result, int gpus, ResultSink* sink)
    : result_(result), gpus_(gpus), sink_(sink), types_{r.key.type, r.payload ? r.payload->type : DType::UInt8, s.payload ? s.payload->type : DType::UInt8},
      present_{true, rw.payload_bytes > 0, sw.payload_bytes > 0},
      row_bytes_(output_row_bytes(rw, sw)) {
  if (!sink_) return;
  // The rows go to the sink: the present columns stay empty, of their types, which the windows name.
  const std::array<HostColumn*, 3> columns{&result_.key, &result_.r_payload, &result_.s_payload};
  for (int c = 0; c < 3; ++c)
    if (present_[c]) *columns[c] = HostColumn::allocate(types_[c], 0);
}

std::uint64_t OutputColumns::reserve(std::uint64_t rows, double arrived) {
  CheckedSum end{next_};
  end.add(rows);
  if (end.overflowed) detail::throw_output_overflow("the joined parts");
  if (sink_) return std::exchange(next_, end.value);  // the rows go to the sink: nothing to take
  if (end.value > capacity_) {
    std::uint64_t wanted = end.value;
    if (arrived < 1) {
      const double guess = static_cast<double>(end.value) / std::max(arrived, 1e-9) * 1.05 + 1024;
      wanted = std::max({end.value, capacity_ + capacity_ / 2, static_cast<std::uint64_t>(std::min(guess, 1.8e19))});
    }
    // The pinned cache may hold blocks of a previous join's output: taking from it needs no new
    // memory, so the guess is tried first and the exact need (checked, or refused) after it.
    try {
      take(wanted);
    } catch (const OutOfMemory&) {
      if (wanted == end.value) throw;
      take(end.value);
    }
  }
  return std::exchange(next_, end.value);
}

void OutputColumns::finish() {
  if (sink_) {  // the columns stay as the constructor left them: empty, of their types
    result_.count = next_;
    result_.sunk = true;
    return;
  }
  if (capacity_ == 0) take(0);
  for (HostColumn* c : {&result_.key, &result_.r_payload, &result_.s_payload})
    if (c->size()) c->truncate(static_cast<std::int64_t>(next_));
  result_.count = next_;
}

/// New columns of `rows` rows holding the rows written so far.
void OutputColumns::take(std::uint64_t rows) {
  const std::int64_t n = detail::output_rows(rows, row_bytes_);
  const std::array<HostColumn*, 3> columns{&result_.key, &result_.r_payload, &result_.s_payload};
  std::vector<ByteCopy> copies;
  std::array<HostColumn, 3> fresh;
  for (int c = 0; c < 3; ++c) {
    if (!present_[c]) continue;
    const bool pin = pin_result_columns(gpus_, alloc::later_joins_expected(), alloc::pinned_cache_serves(types_[c], n));
    fresh[c] = HostColumn::allocate(types_[c], n, pin ? MemoryKind::Pinned : MemoryKind::Pageable);
    copies.push_back({fresh[c].as<std::byte>(), columns[c]->as<std::byte>(), next_ * dtype_size(types_[c])});
  }
  if (next_) copy_in_blocks(copies);
  for (int c = 0; c < 3; ++c) *columns[c] = std::move(fresh[c]);
  capacity_ = rows;
}

void pour_into_sink(JoinResult& result, ResultSink* sink) {
  if (!sink || result.sunk) return;
  const std::array<std::pair<ResultPart, HostColumn*>, 3> parts{
      {{ResultPart::Key, &result.key}, {ResultPart::RPayload, &result.r_payload}, {ResultPart::SPayload, &result.s_payload}}};
  for (auto& [part, column] : parts) {
    if (column->size()) sink->write(part, column->type(), 0, static_cast<std::uint64_t>(column->size()), column->data());
    *column = HostColumn::allocate(column->type(), 0);
  }
  result.sunk = true;
}

}  // namespace mgjoin::exec
