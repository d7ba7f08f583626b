#include "core/byte_size.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace mgjoin::detail {

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  // The number: digits with at most one '.', then at most a unit (no signs, exponents or hex).
  std::size_t digits = 0, points = 0, at = 0;
  for (; at < text.size() && (std::isdigit(static_cast<unsigned char>(text[at])) || text[at] == '.'); ++at)
    (text[at] == '.' ? points : digits) += 1;
  if (digits == 0 || points > 1) return std::nullopt;
  const double value = std::strtod(std::string(text.substr(0, at)).c_str(), nullptr);
  std::string suffix(text.substr(at));
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.pop_back();
  if (suffix.size() == 2 && suffix[1] == 'i') suffix.pop_back();
  int shift = 0;
  if (suffix.size() == 1) {
    const std::string_view units = "KMGT";
    const auto unit = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0]))));
    if (unit == std::string_view::npos) return std::nullopt;
    shift = 10 * static_cast<int>(unit + 1);
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  const double bytes = std::ldexp(value, shift);
  if (!(bytes >= 0) || bytes >= 0x1p64) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace mgjoin::detail
