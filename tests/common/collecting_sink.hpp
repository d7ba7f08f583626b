#pragma once
// A ResultSink (join.hpp) for the suites: it keeps the rows it is given, counts how often each row of each
// part came, and turns them back into result columns, so that a sunk join compares with the reference
// join as a join into columns does.
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

namespace mgjoin::test {

class CollectingSink final : public ResultSink {
 public:
  void write(ResultPart part, DType type, std::uint64_t first_row, std::uint64_t rows, const void* data) override {
    std::lock_guard lock(mutex_);
    Part& p = parts_[static_cast<std::size_t>(part)];
    if (p.type && *p.type != type) ADD_FAILURE() << "a part's rows came in two types";
    p.type = type;
    const std::size_t width = dtype_size(type);
    if (p.times.size() < first_row + rows) {
      p.times.resize(first_row + rows, 0);
      p.bytes.resize((first_row + rows) * width);
    }
    if (rows) std::memcpy(p.bytes.data() + first_row * width, data, rows * width);
    for (std::uint64_t i = first_row; i < first_row + rows; ++i) ++p.times[i];
    ++calls_;
  }

  /// `sunk`'s columns as if it had filled them: `sunk.count` rows of each part it has (its columns, empty,
  /// give their types). A failure where `sunk` is not marked sunk, or a row came other than `times` times
  /// (1; a row the paper flow rewrote after a failed co-partitioned run may come more often: 0 = any).
  JoinResult as_result(const JoinResult& sunk, int times = 1) const {
    EXPECT_TRUE(sunk.sunk);
    JoinResult out;
    out.count = sunk.count;
    const std::array<const HostColumn*, 3> given{&sunk.key, &sunk.r_payload, &sunk.s_payload};
    const std::array<HostColumn*, 3> columns{&out.key, &out.r_payload, &out.s_payload};
    for (std::size_t k = 0; k < 3; ++k) {
      const Part& p = parts_[k];
      EXPECT_EQ(given[k]->size(), 0) << "part " << k << ": a sunk result's columns are empty";
      if (!p.type) continue;  // no rows came (an empty output, or a part the join has not)
      EXPECT_EQ(*p.type, given[k]->type()) << "part " << k;
      EXPECT_GE(p.times.size(), sunk.count) << "part " << k;
      HostColumn c = HostColumn::allocate(*p.type, static_cast<std::int64_t>(sunk.count));
      if (c.bytes()) std::memcpy(c.data(), p.bytes.data(), std::min<std::size_t>(c.bytes(), p.bytes.size()));
      for (std::uint64_t i = 0; i < sunk.count && i < p.times.size(); ++i)
        if (times ? p.times[i] != times : p.times[i] == 0) {
          ADD_FAILURE() << "part " << k << ": row " << i << " came " << p.times[i] << " times";
          break;
        }
      *columns[k] = std::move(c);
    }
    return out;
  }

  /// Whether any row of `part` came.
  bool has(ResultPart part) const { return parts_[static_cast<std::size_t>(part)].type.has_value(); }
  /// How many write calls came (the co-partitioned flows: one per output window and column).
  std::uint64_t calls() const { return calls_; }

 private:
  struct Part {
    std::optional<DType> type;
    std::vector<unsigned char> bytes;
    std::vector<int> times;
  };
  mutable std::mutex mutex_;
  std::array<Part, 3> parts_;
  std::uint64_t calls_ = 0;
};

}  // namespace mgjoin::test
