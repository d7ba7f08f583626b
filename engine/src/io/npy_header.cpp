#include "engine/src/io/npy_header.hpp"

#include <mgjoin/error.hpp>

#include <cctype>
#include <charconv>
#include <cstring>
#include <optional>
#include <vector>

namespace mgjoin::detail {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

std::uint64_t read_le(std::string_view bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

/// A value of the header dict: a string, a boolean, a tuple of integers, or something else
/// (list = structured dtype, dict, ...) that mgjoin does not support.
struct DictValue {
  enum class Kind { String, Bool, Tuple, Other } kind = Kind::Other;
  std::string text;                 // String; Other: the raw text, for messages
  bool flag = false;                // Bool
  std::vector<std::int64_t> dims;   // Tuple
};

/// Reader of the Python literal dict that numpy writes (e.g. {'descr': '<u8', 'fortran_order':
/// False, 'shape': (10,), }); tolerant of spacing and quote style, strict about structure.
class DictReader {
 public:
  DictReader(std::string_view text, const std::string& file) : s_(text), file_(file) {}

  void expect(char c) {
    skip_space();
    if (pos_ >= s_.size() || s_[pos_] != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  std::string read_string() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("expected a quoted string");
    const char quote = s_[pos_++];
    const auto end = s_.find(quote, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  DictValue read_value() {
    skip_space();
    DictValue v;
    if (pos_ >= s_.size()) fail("missing value");
    const char c = s_[pos_];
    if (c == '\'' || c == '"') {
      v.kind = DictValue::Kind::String;
      v.text = read_string();
    } else if (s_.substr(pos_, 4) == "True" || s_.substr(pos_, 5) == "False") {
      v.kind = DictValue::Kind::Bool;
      v.flag = s_[pos_] == 'T';
      pos_ += v.flag ? 4 : 5;
    } else if (c == '(') {
      v.kind = DictValue::Kind::Tuple;
      v.dims = read_tuple();
    } else {
      v.text = skip_nested();
    }
    return v;
  }
  bool at_end() {
    skip_space();
    return pos_ >= s_.size();
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(file_ + ": malformed .npy header (" + what + ")");
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  std::vector<std::int64_t> read_tuple() {
    expect('(');
    std::vector<std::int64_t> dims;
    while (!accept(')')) {
      skip_space();
      std::int64_t d = 0;
      const auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), d);
      if (ec != std::errc{} || d < 0) fail("shape must hold non-negative integers");
      pos_ = static_cast<std::size_t>(end - s_.data());
      dims.push_back(d);
      skip_space();
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }
  // Skips a list or dict value (structured dtypes) so that the error can name it.
  std::string skip_nested() {
    const std::size_t begin = pos_;
    int depth = 0;
    for (; pos_ < s_.size(); ++pos_) {
      const char c = s_[pos_];
      if (c == '[' || c == '(' || c == '{') ++depth;
      if (c == ']' || c == ')' || c == '}') {
        if (depth == 0) break;
        --depth;
      }
      if (c == ',' && depth == 0) break;
    }
    return std::string(s_.substr(begin, pos_ - begin));
  }

  std::string_view s_;
  const std::string& file_;
  std::size_t pos_ = 0;
};

/// '<u8' -> UInt64 etc. '=' (native) is little-endian on every host mgjoin runs on.
DType parse_descr(const std::string& descr, const std::string& file) {
  const auto unsupported = [&](const std::string& why) {
    return InputError(file + ": unsupported dtype '" + descr + "' (" + why +
                      "; supported: little-endian int32, uint32, int64, uint64, float32, float64)");
  };
  if (descr.size() < 2) throw unsupported("unknown type");
  const char order = descr[0];
  if (order == '>') throw unsupported("big-endian");
  if (order != '<' && order != '=' && order != '|') throw unsupported("unknown byte order");
  const auto type = parse_dtype(descr.substr(1));
  if (!type) throw unsupported("unknown or unsupported type");
  if (order == '|') throw unsupported("byte order not applicable");
  return *type;
}

std::string shape_text(const std::vector<std::int64_t>& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

}  // namespace

NpyPrefix parse_npy_prefix(std::string_view start, const std::string& file) {
  if (start.size() < kNpyMagicBytes + 2 || std::memcmp(start.data(), kMagic, kNpyMagicBytes) != 0)
    throw InputError(file + ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(start[6]);
  const int minor = static_cast<unsigned char>(start[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw InputError(file + ": unsupported .npy format version " + std::to_string(major) + "." +
                     std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  const std::size_t prefix = major == 1 ? kNpyPrefixV1 : kNpyPrefixV2;
  if (start.size() < prefix) throw InputError(file + ": truncated .npy header");
  return {prefix, read_le(start.substr(8, prefix - 8))};
}

NpyHeader parse_npy_dict(std::string_view dict, const std::string& file) {
  DictReader reader(dict, file);
  std::optional<DictValue> descr, fortran, shape;
  reader.expect('{');
  while (!reader.accept('}')) {
    const std::string key = reader.read_string();
    reader.expect(':');
    DictValue value = reader.read_value();
    // numpy's reader refuses any other key, and a key given twice: so does this one.
    std::optional<DictValue>* slot = key == "descr" ? &descr : key == "fortran_order" ? &fortran : key == "shape" ? &shape : nullptr;
    if (!slot) reader.fail("unexpected key '" + key + "': numpy headers hold only 'descr', 'fortran_order' and 'shape'");
    if (*slot) reader.fail("key '" + key + "' given twice");
    *slot = std::move(value);
    if (!reader.accept(',')) {
      reader.expect('}');
      break;
    }
  }
  if (!descr || !fortran || !shape) reader.fail("needs 'descr', 'fortran_order' and 'shape'");
  if (descr->kind != DictValue::Kind::String)
    throw InputError(file + ": unsupported dtype " + descr->text + " (structured arrays are not supported)");
  if (fortran->kind != DictValue::Kind::Bool) reader.fail("'fortran_order' must be True or False");
  if (shape->kind != DictValue::Kind::Tuple) reader.fail("'shape' must be a tuple");

  NpyHeader header;
  header.type = parse_descr(descr->text, file);
  if (shape->dims.size() != 1)
    throw InputError(file + ": unsupported shape " + shape_text(shape->dims) + " (" +
                     std::to_string(shape->dims.size()) + "-D array; a column must be 1-D)");
  if (fortran->flag) throw InputError(file + ": unsupported fortran_order (a column must be C order)");
  header.size = shape->dims[0];
  return header;
}

std::string format_npy_header(DType type, std::int64_t size) {
  std::string dict = "{'descr': '<";
  dict += std::string(1, is_key_dtype(type) ? (is_signed_key(type) ? 'i' : 'u') : 'f');
  dict += std::to_string(dtype_size(type)) + "', 'fortran_order': False, 'shape': (" + std::to_string(size) +
          ",), }";
  const bool v1 = dict.size() + 1 + kNpyPrefixV1 <= 65535;
  const std::size_t prefix = v1 ? kNpyPrefixV1 : kNpyPrefixV2;
  const std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';

  std::string header(kMagic, kNpyMagicBytes);
  header += static_cast<char>(v1 ? 1 : 2);
  header += '\0';
  const std::uint64_t len = dict.size();
  for (std::size_t i = 0; i < prefix - 8; ++i) header += static_cast<char>((len >> (8 * i)) & 0xff);
  return header + dict;
}

}  // namespace mgjoin::detail
