#pragma once
// The NumPy .npy header (format versions 1.0, 2.0, 3.0):
//   "\x93NUMPY" major minor  header_len (u16 for v1, u32 for v2/v3)  "{'descr': '<u8',
//   'fortran_order': False, 'shape': (N,), }" padded with spaces and '\n' to a multiple of 64 bytes.
// Spec: numpy.lib.format. Only 1-D, C-order, little-endian int32/uint32/int64/uint64/float32/float64.
#include <mgjoin/types.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mgjoin::detail {

/// Bytes of the fixed prefix (magic, version, header length) for each major version.
constexpr std::size_t kNpyMagicBytes = 6;
constexpr std::size_t kNpyPrefixV1 = 10;
constexpr std::size_t kNpyPrefixV2 = 12;

/// NumPy's fixed-width strings: '|S<n>' (n bytes an element) or '<U<n>' (n UCS-4 code points).
struct NpyStrings {
  bool unicode = false;
  std::int64_t width = 0;  ///< characters an element (bytes for S, code points for U)
};

struct NpyHeader {
  DType type = DType::UInt64;     ///< where `strings` is unset
  std::optional<NpyStrings> strings;
  std::int64_t size = 0;
  std::uint64_t data_offset = 0;  ///< prefix + header length
};

/// Length of the prefix and of the dict that follows, from the first kNpyPrefixV2 bytes (or fewer
/// when the file is that short). @throw InputError "<file>: not a .npy file (bad magic)" etc.
struct NpyPrefix {
  std::size_t prefix_bytes = 0;
  std::uint64_t dict_bytes = 0;
};
NpyPrefix parse_npy_prefix(std::string_view start, const std::string& file);

/// Parses the header dict (the text after the prefix), which must be ASCII, end with '\n' and hold
/// nothing after the dict. @throw InputError naming `file` on malformed text, or on an unsupported
/// dtype (big-endian, float16, object, structured; fixed-width strings unless `strings` allows them),
/// shape (0-D, 2-D) or fortran order.
NpyHeader parse_npy_dict(std::string_view dict, const std::string& file, bool strings = false);

/// A complete v1 header (v2 if the dict could not fit, which never happens for 1-D) for `size`
/// elements of `type`; its length is a multiple of 64 so that the data stays aligned, and `bytes` where
/// given (a multiple of 64, at least the header's own length: a file whose data was written before its
/// row count was known).
std::string format_npy_header(DType type, std::int64_t size, std::size_t bytes = 0);
/// The length of format_npy_header(type, n) for the largest n: where a file's data may start before n
/// is known.
std::size_t npy_header_bytes_for_any_size(DType type);
/// The same for `size` fixed-width strings: descr '<U<width>' or '|S<width>'.
std::string format_npy_header(const NpyStrings& strings, std::int64_t size);

}  // namespace mgjoin::detail
