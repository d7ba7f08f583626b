// The layer order of docs/DESIGN.md, checked on the sources: a module includes only its own headers and
// those of the modules below it. (The build holds it too: a module sees only the include roots of the
// modules it links; this test says which include broke the order, and covers <mgjoin/...> headers.)
//
//   core  <-  alloc  <-  p2p  <-  topology      core  <-  host_merge      all of them  <-  engine  <-  dist
//
// Inside engine/src, where every folder sees the repository root, the rule is this test's alone:
//   exec/ (building blocks) includes no flow, no plan, not the face, not the table layer;
//   flows/<flow>/ includes no other flow and not the face; sort/, join/, copart/, plan/, io/,
//   generate/ (phases, kernels, plans) include no flow and not the face; table/ includes no flow;
//   api/ (the face and the internal API) may include them all. dist/ reaches the engine's internals only
//   through engine/src/api/.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <utility>
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

/// engine/src/<path> of each quoted include of engine's internals in `text`, with its line.
std::vector<std::pair<std::string, std::string>> engine_includes(const std::string& text) {
  static const std::regex internal(R"re(^\s*#\s*include\s*"engine/src/([a-z_0-9/.]+)")re");
  std::vector<std::pair<std::string, std::string>> found;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::smatch m;
    if (std::regex_search(line, m, internal)) found.emplace_back(m[1], "line " + std::to_string(number) + ": " + line);
  }
  return found;
}

bool under(const std::string& path, const std::string& folder) { return path.rfind(folder + "/", 0) == 0; }

/// "line N: include X: why" for each include of `text`, a file of engine/src/<folder>, that breaks the
/// order inside engine/src (the top of this file).
std::vector<std::string> engine_breaches(const std::string& folder, const std::string& text) {
  const bool block = folder == "exec";
  const bool flow = under(folder, "flows");
  const bool below_flows = folder == "sort" || folder == "join" || folder == "copart" || folder == "plan" ||
                           folder == "io" || folder == "generate";
  std::vector<std::string> found;
  for (const auto& [target, where] : engine_includes(text)) {
    std::string why;
    if (block && (under(target, "flows") || under(target, "api") || under(target, "plan") || under(target, "table")))
      why = "a building block includes a flow, a plan, the face or the table layer";
    else if (flow && under(target, "flows") && !under(target, folder))
      why = "a flow includes another flow";
    else if ((flow || below_flows) && under(target, "api"))
      why = "the face's headers are included only above the flows";
    else if ((below_flows || folder == "table") && under(target, "flows"))
      why = folder + " sits below the flows";
    if (!why.empty()) found.push_back(where + ": " + why);
  }
  return found;
}

/// The same for a file of dist/: the engine's internals only through its internal API (engine/src/api).
std::vector<std::string> dist_breaches(const std::string& text) {
  std::vector<std::string> found;
  for (const auto& [target, where] : engine_includes(text))
    if (!under(target, "api")) found.push_back(where + ": dist/ includes the engine's internals beside engine/src/api");
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

/// Every source file of `dir`, with its path relative to `dir`.
std::vector<std::pair<fs::path, std::string>> sources(const fs::path& dir) {
  std::vector<std::pair<fs::path, std::string>> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh")) continue;
    out.emplace_back(entry.path(), read(entry.path()));
  }
  return out;
}

TEST(Layering, EngineFoldersKeepTheirOrder) {
  const fs::path root = MGJOIN_SOURCE_DIR;
  const fs::path src = root / "engine" / "src";
  std::vector<std::string> all;
  std::set<std::string> folders;
  for (const auto& [path, text] : sources(src)) {
    const std::string folder = fs::relative(path.parent_path(), src).generic_string();
    folders.insert(folder);
    if (folder == ".") all.push_back(fs::relative(path, root).string() + ": a file outside engine/src's folders");
    for (const auto& b : engine_breaches(folder, text)) all.push_back(fs::relative(path, root).string() + ": " + b);
  }
  for (const auto& [path, text] : sources(root / "dist"))
    for (const auto& b : dist_breaches(text)) all.push_back(fs::relative(path, root).string() + ": " + b);
  for (const char* f : {"api", "exec", "flows/copart", "flows/paper", "plan", "copart", "sort", "join", "table"})
    EXPECT_TRUE(folders.count(f)) << "engine/src/" << f << " is gone: update this test and docs/DESIGN.md";
  std::string report;
  for (const auto& b : all) report += b + "\n";
  EXPECT_TRUE(all.empty()) << report;
}

TEST(Layering, APlantedIncludeInsideTheEngineIsCaught) {
  // A building block including a flow, or a plan.
  EXPECT_EQ(engine_breaches("exec", "#include \"engine/src/exec/lanes.hpp\"\n"
                                    "#include \"engine/src/flows/copart/partition_pairs.hpp\"\n").size(), 1u);
  EXPECT_EQ(engine_breaches("exec", "  # include \"engine/src/plan/flow_choice.hpp\"\n").size(), 1u);
  EXPECT_TRUE(engine_breaches("exec", "#include \"engine/src/copart/copart_kernels.hpp\"\n").empty());
  // A flow including another flow, or the face; its own files and the building blocks are fine.
  EXPECT_EQ(engine_breaches("flows/paper", "#include \"engine/src/flows/copart/copart_flow.hpp\"\n").size(), 1u);
  EXPECT_EQ(engine_breaches("flows/copart", "#include \"engine/src/flows/paper/paper_flow.hpp\"\n").size(), 1u);
  EXPECT_EQ(engine_breaches("flows/copart", "#include \"engine/src/api/engine_resources.hpp\"\n").size(), 1u);
  EXPECT_TRUE(engine_breaches("flows/copart", "#include \"engine/src/flows/copart/streamed.hpp\"\n"
                                              "#include \"engine/src/exec/chunk_router.hpp\"\n").empty());
  // Phases and plans below the flows; the face above them all.
  EXPECT_EQ(engine_breaches("sort", "#include \"engine/src/flows/paper/merge_phase.hpp\"\n").size(), 1u);
  EXPECT_EQ(engine_breaches("table", "#include \"engine/src/flows/copart/copart_flow.hpp\"\n").size(), 1u);
  EXPECT_TRUE(engine_breaches("table", "#include \"engine/src/api/engine_resources.hpp\"\n").empty());
  EXPECT_TRUE(engine_breaches("api", "#include \"engine/src/flows/paper/paper_flow.hpp\"\n").empty());
  // dist/: the internal API only.
  EXPECT_EQ(dist_breaches("#include \"engine/src/copart/splitters.hpp\"\n").size(), 1u);
  EXPECT_TRUE(dist_breaches("#include \"engine/src/api/copart.hpp\"\n#include <mgjoin/join.hpp>\n").empty());
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
