#pragma once
// Column types, non-owning column views and owning host columns: the vocabulary of the public API.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace mgjoin {

/// Element type of a column. Keys of join() are the four 4- and 8-byte integer types; keys of
/// join_tables() may be composites of any integer columns; payloads may be any type.
enum class DType : std::uint8_t { Int32, UInt32, Int64, UInt64, Float32, Float64, Int8, UInt8, Int16, UInt16, Bool };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::Int8: case DType::UInt8: case DType::Bool: return 1;
    case DType::Int16: case DType::UInt16: return 2;
    case DType::Int32: case DType::UInt32: case DType::Float32: return 4;
    default: return 8;
  }
}
/// A key of join(): a 4- or 8-byte integer.
constexpr bool is_key_dtype(DType t) {
  return t == DType::Int32 || t == DType::UInt32 || t == DType::Int64 || t == DType::UInt64;
}
/// Any integer type (a component of a composite key; bool is not one).
constexpr bool is_integer_dtype(DType t) { return t != DType::Float32 && t != DType::Float64 && t != DType::Bool; }
constexpr bool is_signed_key(DType t) {
  return t == DType::Int32 || t == DType::Int64 || t == DType::Int8 || t == DType::Int16;
}

/// "int32", "uint32", "int64", "uint64", "float32", "float64", "int8", "uint8", "int16", "uint16", "bool".
std::string_view dtype_name(DType t);
/// Parses the names above (and numpy's "i4", "u8", "f4", "b1", ...); nullopt when unknown.
std::optional<DType> parse_dtype(std::string_view name);

/// Non-owning view of a column in host memory. The count may be any integer type:
/// `ColumnView{v.data(), v.size(), DType::Int64}` takes a std::size_t without a narrowing error.
struct ColumnView {
  const void* data = nullptr;
  std::int64_t size = 0;  ///< number of elements
  DType type = DType::UInt64;

  constexpr ColumnView() = default;
  template <std::integral Count>
  constexpr ColumnView(const void* data_, Count count, DType type_ = DType::UInt64)
      : data(data_), size(static_cast<std::int64_t>(count)), type(type_) {}

  template <class T> const T* as() const { return static_cast<const T*>(data); }
  std::size_t bytes() const { return static_cast<std::size_t>(size) * dtype_size(type); }
};

/// Non-owning mutable view of a column in host memory; its count may be any integer type, as ColumnView's.
struct MutableColumnView {
  void* data = nullptr;
  std::int64_t size = 0;
  DType type = DType::UInt64;

  constexpr MutableColumnView() = default;
  template <std::integral Count>
  constexpr MutableColumnView(void* data_, Count count, DType type_ = DType::UInt64)
      : data(data_), size(static_cast<std::int64_t>(count)), type(type_) {}

  template <class T> T* as() const { return static_cast<T*>(data); }
  std::size_t bytes() const { return static_cast<std::size_t>(size) * dtype_size(type); }
  operator ColumnView() const { return {data, size, type}; }
};

/// A relation to join: a key column and an optional payload column of the same length.
struct RelationView {
  MutableColumnView key;
  std::optional<MutableColumnView> payload;  ///< absent: key-only relation
  std::int64_t size() const { return key.size; }
};

/// Where an owning host column lives. Pinned memory is page-locked for fast DMA to GPUs. Pinning costs
/// about a second per ten gigabytes of fresh memory (pages faulted in by all threads, then locked by
/// the driver: ~1.5 s for 15.4 GiB on the H100 machine), so pinned blocks freed by columns
/// are kept for the next pinned allocation of a similar size, up to MGJOIN_PINNED_CACHE_BYTES in all
/// (environment: bytes, K/M/G/T suffixes; default a quarter of physical memory, 0 = keep none).
enum class MemoryKind : std::uint8_t { Pageable, Pinned };

/// Owning column in host memory (pageable or pinned), 64-byte aligned.
class HostColumn {
 public:
  HostColumn() = default;
  /// Allocates `size` uninitialised elements. Pinned allocation falls back to pageable memory
  /// when no CUDA driver is present (the CPU path), and says so through memory_kind().
  static HostColumn allocate(DType type, std::int64_t size, MemoryKind kind = MemoryKind::Pageable);

  DType type() const { return type_; }
  std::int64_t size() const { return size_; }
  std::size_t bytes() const { return static_cast<std::size_t>(size_) * dtype_size(type_); }
  MemoryKind memory_kind() const { return kind_; }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <class T> T* as() { return static_cast<T*>(data()); }
  template <class T> const T* as() const { return static_cast<const T*>(data()); }
  MutableColumnView view() { return {data(), size_, type_}; }
  ColumnView view() const { return {data(), size_, type_}; }
  /// Shrinks the logical size (no reallocation); used when the exact output size is known late.
  void truncate(std::int64_t size);

 private:
  struct Free {
    MemoryKind kind;
    std::size_t bytes;  ///< as allocated: pinned blocks go back to the pinned cache with their size
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_{nullptr, Free{MemoryKind::Pageable, 0}};
  std::int64_t size_ = 0;
  DType type_ = DType::UInt64;
  MemoryKind kind_ = MemoryKind::Pageable;
};

/// An owning relation (e.g. read from files or generated).
struct Relation {
  HostColumn key;
  std::optional<HostColumn> payload;
  std::int64_t size() const { return key.size(); }
  RelationView view() {
    RelationView v{key.view(), std::nullopt};
    if (payload) v.payload = payload->view();
    return v;
  }
};

}  // namespace mgjoin
