// A user's column views built from std::size_t counts, as the README's pattern reads: no narrowing.
#include <mgjoin/join.hpp>

#include <cstdint>
#include <optional>
#include <vector>

std::int64_t rows() {
  std::vector<std::int64_t> keys(3), values(3);
  mgjoin::RelationView r{{keys.data(), keys.size(), mgjoin::DType::Int64},
                         mgjoin::MutableColumnView{values.data(), values.size(), mgjoin::DType::Int64}};
  const mgjoin::ColumnView view{keys.data(), keys.size(), mgjoin::DType::Int64};
  return r.size() + view.size;
}
