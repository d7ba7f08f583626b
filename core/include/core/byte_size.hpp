#pragma once
// Byte counts written by people: "4096", "512M", "8G", "1.5T", "64GiB" (K/M/G/T are powers of 1024).
// The one parser for every option and environment variable that takes a size.
#include <cstdint>
#include <optional>
#include <string_view>

namespace mgjoin::detail {

/// The bytes `text` names; nullopt when it is not a size (empty, negative, not a number, an unknown
/// suffix, 2^64 or more).
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

}  // namespace mgjoin::detail
