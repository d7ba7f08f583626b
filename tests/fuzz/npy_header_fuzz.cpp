// libFuzzer target for the .npy header parser (engine/src/io/npy_header.cpp). Any bytes, read as the
// start of a file and as a header dict alone, are either parsed or refused with a one-line InputError
// that names the file. Anything else is a finding: a crash, another exception, a sanitizer report, a
// message that breaks the rule, or an accepted header that does not survive a write and re-read.
// run_npy_header_fuzz.cmake builds it with clang++ and runs it (ctest NpyHeaderFuzz.*).
//
//   npy_header_fuzz --write-seeds=DIR   writes the seed corpus (valid headers and near misses) and exits
//   npy_header_fuzz -max_total_time=20 CORPUS   fuzzes (libFuzzer's flags)
#include "engine/src/io/npy_header.hpp"

#include <mgjoin/error.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace mgjoin::detail;

const std::string kFile = "fuzz.npy";

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "npy_header_fuzz: %s\n", what.c_str());
  std::abort();
}

void check_message(const mgjoin::InputError& e) {
  const std::string_view msg = e.what();
  if (!msg.starts_with(kFile + ": ")) finding("message does not name the file: " + std::string(msg));
  if (msg.size() > 300) finding("message longer than a line: " + std::string(msg.substr(0, 300)));
  for (const char c : msg)
    if (c < 0x20 || c > 0x7e) finding("message with a byte that is not printable ASCII: " + std::string(msg));
}

/// An accepted header is a 1-D column of a supported type, and the header mgjoin writes for it
/// parses back to the same.
void check_accepted(const NpyHeader& h) {
  if (h.size < 0) finding("accepted a negative row count");
  const std::string again = format_npy_header(h.type, h.size);
  const NpyPrefix prefix = parse_npy_prefix(again, kFile);
  if (prefix.prefix_bytes + prefix.dict_bytes != again.size()) finding("written header length is wrong");
  const NpyHeader back = parse_npy_dict(std::string_view(again).substr(prefix.prefix_bytes), kFile);
  if (back.type != h.type || back.size != h.size) finding("written header reads back differently");
}

template <class Parse>
void parse_or_refuse(Parse&& parse) {
  try {
    check_accepted(parse());
  } catch (const mgjoin::InputError& e) {
    check_message(e);
  }
}

// ------------------------------------------------------------------------------------------- seeds

/// Magic, version and little-endian header length (2 bytes for v1, 4 for v2/v3), then `dict`.
std::string npy_file(int major, const std::string& dict) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  return out + dict;
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }" +
         std::string(20, ' ') + "\n";
}

/// Valid headers of every supported type and format version, and near misses that reach the other
/// branches (unsupported types, shapes and orders), each as a whole file and as a dict alone.
std::vector<std::string> seeds() {
  std::vector<std::string> dicts;
  for (const char* descr : {"<i4", "<u4", "<i8", "<u8", "<f4", "<f8"})
    for (const char* shape : {"(0,)", "(1,)", "(1000000,)"}) dicts.push_back(dict(descr, shape));
  for (const char* descr : {">i8", "|O", "<U8", "|b1", "<f2", "=u8"}) dicts.push_back(dict(descr, "(2,)"));
  for (const char* shape : {"()", "(2, 3)", "(9223372036854775807,)"}) dicts.push_back(dict("<u8", shape));
  dicts.push_back(dict("<u8", "(2,)", "True"));
  dicts.push_back("{'descr': [('k', '<u4'), ('v', '<u4')], 'fortran_order': False, 'shape': (2,), }\n");
  dicts.push_back("{\"descr\": \"<u8\", \"fortran_order\": False, \"shape\": (2,)}\n");
  std::vector<std::string> out;
  for (const std::string& d : dicts) {
    out.push_back(d);
    for (const int major : {1, 2, 3}) out.push_back(npy_file(major, d));
  }
  out.push_back(format_npy_header(mgjoin::DType::UInt64, 42));
  return out;
}

void write_seeds(const std::string& dir) {
  const std::vector<std::string> all = seeds();
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::ofstream out(dir + "/seed-" + std::to_string(i), std::ios::binary);
    out.write(all[i].data(), static_cast<std::streamsize>(all[i].size()));
    if (!out) finding("cannot write the seed corpus under " + dir);
  }
}

}  // namespace

// libFuzzer hands its arguments here before it reads them (and it ignores those that start with "--").
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const std::string_view flag = "--write-seeds=";
  for (int i = 1; i < *argc; ++i)
    if (std::string_view arg = (*argv)[i]; arg.starts_with(flag)) {
      write_seeds(std::string(arg.substr(flag.size())));
      std::exit(0);
    }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // As a file: the prefix, then the dict it announces where the input holds all of it.
  parse_or_refuse([&] {
    const NpyPrefix prefix = parse_npy_prefix(bytes.substr(0, kNpyPrefixV2), kFile);
    if (prefix.dict_bytes > bytes.size() - prefix.prefix_bytes) throw mgjoin::InputError(kFile + ": truncated");
    return parse_npy_dict(bytes.substr(prefix.prefix_bytes, prefix.dict_bytes), kFile);
  });
  // As a dict alone, so that the fuzzer reaches the dict reader without first finding a prefix.
  parse_or_refuse([&] { return parse_npy_dict(bytes, kFile); });
  return 0;
}
