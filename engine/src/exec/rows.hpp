#pragma once
// Row addressing in columns of fixed-width rows (keys, payloads; host or device memory alike).
#include <cstddef>
#include <cstdint>

namespace mgjoin::exec {

/// Row `row` of rows `width` bytes wide from `p`.
inline std::byte* row_at(void* p, std::int64_t row, int width) {
  return static_cast<std::byte*>(p) + static_cast<std::size_t>(row) * static_cast<std::size_t>(width);
}
inline const std::byte* row_at(const void* p, std::int64_t row, int width) {
  return static_cast<const std::byte*>(p) + static_cast<std::size_t>(row) * static_cast<std::size_t>(width);
}

}  // namespace mgjoin::exec
