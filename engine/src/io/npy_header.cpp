#include "engine/src/io/npy_header.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

namespace mgjoin::detail {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

std::uint64_t read_le(std::string_view bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

std::string hex_byte(unsigned char byte) { return {"0123456789abcdef"[byte >> 4], "0123456789abcdef"[byte & 0xf]}; }

/// `text` for a message: quoted, control characters escaped, cut after 40 characters (a corrupt
/// header may hold a megabyte of anything, and the message must stay one short line).
std::string quoted(std::string_view text) {
  constexpr std::size_t kMaxQuoted = 40;
  std::string out = "'";
  for (const char c : text.substr(0, kMaxQuoted)) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (byte < 0x80 && std::isprint(byte)) out += c;
    else out += "\\x" + hex_byte(byte);
  }
  return out + (text.size() > kMaxQuoted ? "...'" : "'");
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
    if (pos_ >= s_.size()) fail("the dict is not closed");
    if (s_[pos_] != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  std::string read_string() {
    skip_space();
    if (pos_ >= s_.size()) fail("the dict is not closed");
    if (s_[pos_] != '\'' && s_[pos_] != '"') fail("expected a quoted string");
    const char quote = s_[pos_++];
    // A Python string literal ends on its line.
    const auto end = s_.find_first_of(std::string{quote, '\n'}, pos_);
    if (end == std::string_view::npos || s_[end] == '\n') fail("unterminated string");
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  /// The value of `key`: only 'shape' is read as a tuple of sizes.
  DictValue read_value(const std::string& key) {
    skip_space();
    DictValue v;
    if (pos_ >= s_.size()) fail("the dict is not closed");
    const char c = s_[pos_];
    if (c == '\'' || c == '"') {
      v.kind = DictValue::Kind::String;
      v.text = read_string();
    } else if (const auto word = identifier(); word == "True" || word == "False") {
      v.kind = DictValue::Kind::Bool;
      v.flag = word == "True";
      pos_ += word.size();
    } else if (c == '(' && key == "shape") {
      v.kind = DictValue::Kind::Tuple;
      v.dims = read_shape();
    } else {
      v.text = skip_nested();
      if (v.text.empty()) fail("missing value for " + quoted(key));
    }
    return v;
  }
  /// What follows the dict, up to the header's closing whitespace.
  std::string_view rest() {
    skip_space();
    std::string_view r = s_.substr(pos_);
    while (!r.empty() && std::isspace(static_cast<unsigned char>(r.back()))) r.remove_suffix(1);
    return r;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(file_ + ": malformed .npy header (" + what + ")");
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  std::string_view identifier() const {
    std::size_t end = pos_;
    while (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) ++end;
    return s_.substr(pos_, end - pos_);
  }
  // (3,) is a tuple, (3) the integer 3: numpy refuses the latter, and so does mgjoin.
  std::vector<std::int64_t> read_shape() {
    expect('(');
    std::vector<std::int64_t> dims;
    bool comma = false;
    while (!accept(')')) {
      dims.push_back(read_size());
      comma = accept(',');
      if (!comma) {
        expect(')');
        break;
      }
    }
    if (dims.size() == 1 && !comma) fail("'shape' must be a tuple: (" + std::to_string(dims[0]) + ",), with its comma");
    return dims;
  }
  std::int64_t read_size() {
    skip_space();
    const char* begin = s_.data() + pos_;
    std::int64_t d = 0;
    const auto [end, ec] = std::from_chars(begin, s_.data() + s_.size(), d);
    const std::string_view digits(begin, static_cast<std::size_t>(end - begin));
    if (ec == std::errc::result_out_of_range && digits.front() == '-')
      fail("'shape' holds the negative size " + quoted(digits));
    if (ec == std::errc::result_out_of_range) fail("'shape' size " + quoted(digits) + " is more than 2^63 - 1");
    pos_ += digits.size();
    skip_space();
    const bool ends = pos_ < s_.size() && (s_[pos_] == ',' || s_[pos_] == ')');
    if (ec != std::errc{} || !ends) fail("'shape' must hold non-negative integers");
    if (d < 0) fail("'shape' holds the negative size " + std::to_string(d));
    return d;
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

/// What a numpy type string's kind is, for the message that refuses it ('b' -> "bool").
std::string kind_name(char kind, std::string_view size) {
  const bool numeric_size = !size.empty() && size.size() <= 2 &&
                            std::all_of(size.begin(), size.end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::string bits = numeric_size ? std::to_string(8 * std::stoi(std::string(size))) : "";
  switch (kind) {
    case 'b': return "bool";
    case 'i': return numeric_size ? "int" + bits : "unknown type";
    case 'u': return numeric_size ? "uint" + bits : "unknown type";
    case 'f': return numeric_size ? "float" + bits : "unknown type";
    case 'c': return "complex";
    case 'U': return "unicode strings";
    case 'S': case 'a': return "byte strings";
    case 'O': return "Python objects";
    case 'M': return "datetime";
    case 'm': return "timedelta";
    case 'V': return "raw bytes";
    default: return "unknown type";
  }
}

/// numpy's type code of a supported type: kind letter and size ("u8", "f4", "b1").
std::string npy_code(DType type) {
  const char kind = type == DType::Bool ? 'b' : !is_integer_dtype(type) ? 'f' : is_signed_key(type) ? 'i' : 'u';
  return std::string{kind, static_cast<char>('0' + dtype_size(type))};  // sizes are 1, 2, 4 or 8
}

/// '<u8' -> UInt64 etc. '=' (native) is little-endian on every host mgjoin runs on. numpy writes type
/// codes, never names: '<uint64' is refused.
DType parse_descr(const std::string& descr, const std::string& file) {
  const auto unsupported = [&](const std::string& why) {
    return InputError(file + ": unsupported dtype " + quoted(descr) + " (" + why +
                      "; supported: little-endian int8/16/32/64, uint8/16/32/64, float32, float64, bool)");
  };
  if (descr.size() < 2) throw unsupported("unknown type");
  const char order = descr[0];
  if (order == '>') throw unsupported("big-endian");
  if (order != '<' && order != '=' && order != '|') throw unsupported("unknown byte order");
  const std::string_view code = std::string_view(descr).substr(1);
  // Type codes are two characters; parse_dtype's names ('uint64') are longer and refused here.
  const std::optional<DType> known = code.size() == 2 ? parse_dtype(code) : std::nullopt;
  if (!known) throw unsupported(kind_name(code[0], code.substr(1)));
  // numpy writes '|' (no byte order) for 1-byte types, '<' for wider ones.
  if (order == '|' && dtype_size(*known) > 1) throw unsupported("byte order not applicable");
  return *known;
}

/// '|S5' (or '|a5') -> 5 bytes, '<U3' (or '=U3') -> 3 code points; nullopt for every other descr,
/// which parse_descr then names. NumPy writes '|' for S and '<' for U on little-endian hosts.
std::optional<NpyStrings> parse_string_descr(std::string_view descr) {
  if (descr.size() < 3) return std::nullopt;
  const char order = descr[0], kind = descr[1];
  const bool bytes = (kind == 'S' || kind == 'a') && order == '|';
  const bool unicode = kind == 'U' && (order == '<' || order == '=');
  if (!bytes && !unicode) return std::nullopt;
  std::int64_t width = 0;
  const std::string_view digits = descr.substr(2);
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), width);
  if (ec != std::errc{} || end != digits.data() + digits.size() || width <= 0) return std::nullopt;
  return NpyStrings{unicode, width};
}

/// The shape for a message: its first four sizes (a corrupt header may hold thousands).
std::string shape_text(const std::vector<std::int64_t>& dims) {
  constexpr std::size_t kMaxShown = 4;
  std::string s = "(";
  for (std::size_t i = 0; i < std::min(dims.size(), kMaxShown); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  if (dims.size() > kMaxShown) s += ", ...";
  return s + (dims.size() == 1 ? ",)" : ")");
}

/// numpy writes the dict in ASCII and ends the header with '\n' (after padding spaces): a header that
/// does not is corrupt, or its length field is wrong.
void check_header_text(std::string_view dict, const std::string& file) {
  const auto malformed = [&](const std::string& what) {
    return InputError(file + ": malformed .npy header (" + what + ")");
  };
  if (dict.empty()) throw malformed("empty header");
  for (const char c : dict) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80 && (std::isprint(byte) || std::isspace(byte))) continue;
    throw malformed("byte 0x" + hex_byte(byte) + " in the header is not ASCII text");
  }
  if (dict.back() != '\n') throw malformed("it does not end with '\\n': is its header length right?");
}

/// The three entries of a header dict, as written.
struct HeaderDict {
  std::optional<DictValue> descr, fortran, shape;
};

/// Reads the dict and checks that only whitespace follows it.
HeaderDict read_header_dict(DictReader& reader) {
  HeaderDict d;
  if (!reader.accept('{')) reader.fail("expected '{': the header is not a dict");
  while (!reader.accept('}')) {
    const std::string key = reader.read_string();
    reader.expect(':');
    DictValue value = reader.read_value(key);
    // numpy's reader refuses any other key, and a key given twice: so does this one.
    std::optional<DictValue>* slot = key == "descr"           ? &d.descr
                                     : key == "fortran_order" ? &d.fortran
                                     : key == "shape"         ? &d.shape
                                                              : nullptr;
    if (!slot)
      reader.fail("unexpected key " + quoted(key) + ": numpy headers hold only 'descr', 'fortran_order' and 'shape'");
    if (*slot) reader.fail("key " + quoted(key) + " given twice");
    *slot = std::move(value);
    if (reader.accept(',')) continue;
    if (!reader.accept('}')) reader.fail("expected ',' or '}' after the value of " + quoted(key));
    break;
  }
  if (const auto rest = reader.rest(); !rest.empty()) reader.fail("text after the dict: " + quoted(rest));
  return d;
}

}  // namespace

NpyPrefix parse_npy_prefix(std::string_view start, const std::string& file) {
  if (start.empty()) throw InputError(file + ": empty file (not a .npy file)");
  if (std::memcmp(start.data(), kMagic, std::min(start.size(), kNpyMagicBytes)) != 0)
    throw InputError(file + ": not a .npy file (bad magic)");
  const auto truncated = [&] {
    return InputError(file + ": truncated .npy header (the file ends after " + std::to_string(start.size()) +
                      (start.size() == 1 ? " byte)" : " bytes)"));
  };
  if (start.size() < kNpyMagicBytes + 2) throw truncated();
  const int major = static_cast<unsigned char>(start[6]);
  const int minor = static_cast<unsigned char>(start[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw InputError(file + ": unsupported .npy format version " + std::to_string(major) + "." +
                     std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  const std::size_t prefix = major == 1 ? kNpyPrefixV1 : kNpyPrefixV2;
  if (start.size() < prefix) throw truncated();
  return {prefix, read_le(start.substr(8, prefix - 8))};
}

NpyHeader parse_npy_dict(std::string_view dict, const std::string& file, bool strings) {
  check_header_text(dict, file);
  DictReader reader(dict, file);
  const auto [descr, fortran, shape] = read_header_dict(reader);
  if (!descr || !fortran || !shape) reader.fail("needs 'descr', 'fortran_order' and 'shape'");
  if (descr->kind == DictValue::Kind::Other && descr->text.front() == '[')
    throw InputError(file + ": unsupported dtype " + quoted(descr->text) + " (structured arrays are not supported)");
  if (descr->kind != DictValue::Kind::String) reader.fail("'descr' must be a dtype string like '<u8'");
  if (fortran->kind != DictValue::Kind::Bool) reader.fail("'fortran_order' must be True or False");
  if (shape->kind != DictValue::Kind::Tuple) reader.fail("'shape' must be a tuple");

  NpyHeader header;
  if (strings) header.strings = parse_string_descr(descr->text);
  if (!header.strings) header.type = parse_descr(descr->text, file);
  if (shape->dims.size() != 1)
    throw InputError(file + ": unsupported shape " + shape_text(shape->dims) + " (" +
                     std::to_string(shape->dims.size()) + "-D array; a column must be 1-D)");
  if (fortran->flag) throw InputError(file + ": unsupported fortran_order (a column must be C order)");
  header.size = shape->dims[0];
  return header;
}

namespace {

/// A v1 header (v2 if the dict could not fit) for `size` elements of numpy's type string `descr`, padded
/// to `bytes` where that is longer.
std::string format_header(const std::string& descr, std::int64_t size, std::size_t bytes = 0) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(size) + ",), }";
  const bool v1 = dict.size() + 1 + kNpyPrefixV1 <= 65535;
  const std::size_t prefix = v1 ? kNpyPrefixV1 : kNpyPrefixV2;
  const std::size_t total = std::max(bytes, (prefix + dict.size() + 1 + 63) / 64 * 64);
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';

  std::string header(kMagic, kNpyMagicBytes);
  header += static_cast<char>(v1 ? 1 : 2);
  header += '\0';
  const std::uint64_t len = dict.size();
  for (std::size_t i = 0; i < prefix - 8; ++i) header += static_cast<char>((len >> (8 * i)) & 0xff);
  return header + dict;
}

}  // namespace

std::string format_npy_header(DType type, std::int64_t size, std::size_t bytes) {
  MGJOIN_EXPECTS(bytes % 64 == 0, "format_npy_header: a length of whole 64-byte lines");
  std::string header = format_header((dtype_size(type) == 1 ? "|" : "<") + npy_code(type), size, bytes);
  MGJOIN_EXPECTS(bytes == 0 || header.size() == bytes, "format_npy_header: the header outgrew the bytes given");
  return header;
}

std::size_t npy_header_bytes_for_any_size(DType type) {
  return format_npy_header(type, std::numeric_limits<std::int64_t>::max()).size();
}

std::string format_npy_header(const NpyStrings& strings, std::int64_t size) {
  return format_header((strings.unicode ? "<U" : "|S") + std::to_string(strings.width), size);
}

}  // namespace mgjoin::detail
