// The layer order of docs/DESIGN.md, checked on the sources: a module includes only its own headers and
// those of the modules below it. (The build holds it too: a module sees only the include roots of the
// modules it links; this test says which include broke the order, and covers <mgjoin/...> headers.)
//
//   core  <-  alloc  <-  p2p  <-  topology      core  <-  host_merge      all of them  <-  engine  <-  dist
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// What each module may include: module folders ("alloc/...") and public engine headers ("<mgjoin/join.hpp>").
struct Layer {
  std::set<std::string> modules;
  bool engine_api = false;  ///< join.hpp, engine.hpp, io.hpp, generate.hpp
};

const std::map<std::string, Layer>& layers() {
  static const std::map<std::string, Layer> l = {
      {"core", {{"core"}}},
      {"alloc", {{"alloc", "core"}}},
      {"p2p", {{"p2p", "alloc", "core"}}},
      {"topology", {{"topology", "p2p", "alloc", "core"}}},
      {"host_merge", {{"host_merge", "core"}}},
      {"engine", {{"engine", "topology", "p2p", "alloc", "core", "host_merge"}, true}},
      {"dist", {{"dist", "engine", "topology", "p2p", "alloc", "core", "host_merge"}, true}},
  };
  return l;
}

const std::set<std::string> kModules = {"core", "alloc", "p2p", "topology", "host_merge", "engine", "dist"};
/// core's public headers, which every layer may include.
const std::set<std::string> kCoreApi = {"error.hpp", "types.hpp"};

/// "line N: include X reaches above module M" for each include of `text` that `module` may not make.
std::vector<std::string> breaches(const std::string& module, const std::string& text) {
  static const std::regex quoted(R"(^\s*#\s*include\s*"([a-z_0-9]+)/)");
  static const std::regex angled(R"(^\s*#\s*include\s*<mgjoin/([a-z_0-9.]+)>)");
  const Layer& layer = layers().at(module);
  std::vector<std::string> found;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::smatch m;
    const bool bad = (std::regex_search(line, m, quoted) && kModules.count(m[1]) && !layer.modules.count(m[1])) ||
                     (std::regex_search(line, m, angled) && !kCoreApi.count(m[1]) && !layer.engine_api);
    if (bad) found.push_back("line " + std::to_string(number) + ": " + line + " reaches above " + module);
  }
  return found;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Layering, EveryModuleIncludesOnlyItselfAndLowerLayers) {
  const fs::path root = MGJOIN_SOURCE_DIR;
  std::vector<std::string> all;
  std::size_t files = 0;
  for (const auto& [module, layer] : layers()) {
    ASSERT_TRUE(fs::is_directory(root / module)) << module;
    for (const auto& entry : fs::recursive_directory_iterator(root / module)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh")) continue;
      ++files;
      for (const auto& b : breaches(module, read(entry.path())))
        all.push_back(fs::relative(entry.path(), root).string() + ": " + b);
    }
  }
  EXPECT_GT(files, 50u);
  std::string report;
  for (const auto& b : all) report += b + "\n";
  EXPECT_TRUE(all.empty()) << report;
}

TEST(Layering, APlantedUpwardIncludeIsCaught) {
  EXPECT_EQ(breaches("alloc", "#include \"alloc/stack_set.hpp\"\n#include \"p2p/all_to_all.hpp\"\n").size(), 1u);
  EXPECT_EQ(breaches("core", "#include <mgjoin/error.hpp>\n#include \"alloc/backings.hpp\"\n").size(), 1u);
  EXPECT_EQ(breaches("p2p", "#include <mgjoin/join.hpp>\n").size(), 1u);
  EXPECT_EQ(breaches("host_merge", "  #  include \"topology/log.hpp\"\n").size(), 1u);
  EXPECT_EQ(breaches("topology", "#include \"engine/src/nvtx.hpp\"\n").size(), 1u);
  EXPECT_TRUE(breaches("engine", "#include \"topology/log.hpp\"\n#include <mgjoin/join.hpp>\n").empty());
  EXPECT_EQ(breaches("engine", "#include \"dist/x.hpp\"\n").size(), 1u);
  EXPECT_TRUE(breaches("topology", "#include \"p2p/peer_access.hpp\"\n#include <mgjoin/types.hpp>\n").empty());
}

}  // namespace
