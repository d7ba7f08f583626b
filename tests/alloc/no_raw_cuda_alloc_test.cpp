// Keeps the rule of alloc/stack_allocator.hpp honest: outside alloc/ (the library's modules, the CLI and
// the benchmarks) device and pinned memory come only from alloc/ (stack allocators, backings, host
// columns), never from the CUDA allocation functions, nor from Thrust/CUB paths that allocate on their own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = MGJOIN_SOURCE_DIR;
const std::vector<std::string> kScannedDirs = {"core", "p2p", "topology", "host_merge", "engine", "apps"};

// Files allowed to call the allocation functions, with the reason.
// (HostColumn's pinned memory, the user's input and output columns, comes from alloc/host_column.cpp.)
// (The benchmarks that time CUDA's allocators themselves are in alloc/bench/, which is not scanned.)
// core/src/device.cpp: cudaFree(nullptr) there allocates nothing; it is CUDA's way to make a device's
// primary context, which start_contexts() does for every GPU of an engine side by side.
const std::set<std::string> kAllowlist = {"core/src/device.cpp"};

struct Rule {
  std::regex pattern;
  std::string what;
};

const std::vector<Rule>& rules() {
  static const std::vector<Rule> r = {
      {std::regex(R"(\b(cudaMalloc|cudaMallocAsync|cudaMallocHost|cudaMallocManaged|cudaMallocPitch|)"
                  R"(cudaMalloc3D|cudaMallocFromPoolAsync|cudaHostAlloc|cudaFree|cudaFreeAsync|cudaFreeHost)\s*\()"),
       "calls a CUDA allocation function; take the memory from an alloc::StackAllocator"},
      {std::regex(R"(\bthrust::(device_vector|host_vector|universal_vector)\b)"),
       "uses a Thrust vector (allocates with cudaMalloc); use alloc::StackBuffer"},
      {std::regex(R"(\bthrust::device\b)"),
       "uses the thrust::device policy (temporaries via cudaMalloc); use thrust::cuda::par(alloc::ThrustAllocator)"},
      {std::regex(R"(\bpar(_nosync)?\s*\.\s*on\s*\()"),
       "uses thrust::cuda::par.on() without an allocator; use par(alloc::ThrustAllocator(stack)).on()"},
      {std::regex(R"(\bCachingDeviceAllocator\b)"), "uses CUB's caching allocator; use alloc::run_cub"},
  };
  return r;
}

bool is_source(const fs::path& p) {
  static const std::set<std::string> exts = {".cpp", ".cu", ".cuh", ".hpp", ".h", ".inl", ".cc"};
  return exts.count(p.extension().string()) > 0;
}

// The text of a line with comments blanked out; `in_block` carries a /* */ comment across lines.
std::string code_of(const std::string& line, bool& in_block) {
  std::string code;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (in_block) {
      if (line.compare(i, 2, "*/") == 0) {
        in_block = false;
        ++i;
      }
      continue;
    }
    if (line.compare(i, 2, "//") == 0) break;
    if (line.compare(i, 2, "/*") == 0) {
      in_block = true;
      ++i;
      continue;
    }
    code += line[i];
  }
  return code;
}

// "file:line: what" for every breach of the rules in one file.
std::vector<std::string> breaches_in(const fs::path& file, const std::string& relative) {
  std::vector<std::string> found;
  std::ifstream in(file);
  std::string line;
  bool in_block = false;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string code = code_of(line, in_block);
    for (const auto& rule : rules())
      if (std::regex_search(code, rule.pattern))
        found.push_back(relative + ":" + std::to_string(number) + ": " + rule.what + "\n    " + line);
  }
  return found;
}

TEST(NoRawCudaAllocation, PhasesTakeMemoryOnlyFromStackAllocators) {
  std::vector<std::string> breaches;
  std::size_t scanned = 0;
  for (const auto& dir : kScannedDirs) {
    const fs::path root = kSourceDir / dir;
    ASSERT_TRUE(fs::is_directory(root)) << root;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (!entry.is_regular_file() || !is_source(entry.path())) continue;
      const std::string relative = fs::relative(entry.path(), kSourceDir).generic_string();
      if (kAllowlist.count(relative)) continue;
      ++scanned;
      for (auto& b : breaches_in(entry.path(), relative)) breaches.push_back(std::move(b));
    }
  }
  EXPECT_GT(scanned, 0u) << "no sources found under " << kSourceDir;
  std::ostringstream report;
  for (const auto& b : breaches) report << b << "\n";
  EXPECT_TRUE(breaches.empty()) << breaches.size() << " raw allocation(s) outside alloc/:\n" << report.str();
}

TEST(NoRawCudaAllocation, AllowlistedFilesExist) {
  // A stale allowlist entry would silently exempt a future file of the same name.
  for (const auto& file : kAllowlist) EXPECT_TRUE(fs::exists(kSourceDir / file)) << file;
}

TEST(NoRawCudaAllocation, ScannerSeesCallsButNotComments) {
  bool in_block = false;
  EXPECT_TRUE(std::regex_search(code_of("  MGJOIN_CUDA_TRY(cudaMalloc (&p, n));", in_block), rules()[0].pattern));
  EXPECT_TRUE(std::regex_search(code_of("cudaFreeHost(p);", in_block), rules()[0].pattern));
  EXPECT_FALSE(std::regex_search(code_of("x = 1;  // no cudaMalloc(&p) here", in_block), rules()[0].pattern));
  EXPECT_FALSE(std::regex_search(code_of("my_cudaMalloc(p);", in_block), rules()[0].pattern));
  EXPECT_FALSE(std::regex_search(code_of("/* cudaFree(p);", in_block), rules()[0].pattern));
  EXPECT_TRUE(in_block);
  EXPECT_FALSE(std::regex_search(code_of("   cudaFree(p); */", in_block), rules()[0].pattern));
  EXPECT_FALSE(in_block);
  EXPECT_TRUE(std::regex_search(code_of("thrust::sort(thrust::device, a, b);", in_block), rules()[2].pattern));
  EXPECT_FALSE(std::regex_search(code_of("thrust::device_pointer_cast(p)", in_block), rules()[2].pattern));
  EXPECT_TRUE(std::regex_search(code_of("thrust::cuda::par.on(s)", in_block), rules()[3].pattern));
  EXPECT_FALSE(std::regex_search(code_of("thrust::cuda::par(a).on(s)", in_block), rules()[3].pattern));
}

}  // namespace
