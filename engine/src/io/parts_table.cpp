// Tables written in parts (`mpirun -np N mgjoin join ... --out-dir D`): D/manifest.json names the
// columns and the part directories in order; a column is its part files one after the other.
#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>

#include "engine/src/io/file_handle.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <fstream>
#include <numeric>

namespace mgjoin {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "mgjoin-parts";

/// A name the manifest may use: a file or folder inside its directory, never a path out of it.
bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

}  // namespace

std::optional<PartsTable> read_parts_manifest(const fs::path& dir) {
  const fs::path path = dir / "manifest.json";
  if (!fs::exists(path)) return std::nullopt;
  std::ifstream in(path);
  MGJOIN_INPUT_EXPECTS(in.good(), path.string() + ": cannot be read");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path.string() + ": not JSON (" + e.what() + ")");
  }
  MGJOIN_INPUT_EXPECTS(j.is_object() && j.contains("format") && j["format"].is_string() && j["format"] == kFormat,
                       path.string() + ": not a manifest of parts (\"format\": \"mgjoin-parts\")");
  MGJOIN_INPUT_EXPECTS(j.value("version", 0) == 1, path.string() + ": version " + j.value("version", nlohmann::json()).dump() +
                                                        " (this mgjoin reads version 1)");
  PartsTable t;
  std::int64_t total = 0;
  try {
    for (const auto& c : j.at("columns")) t.columns.push_back(c.get<std::string>());
    for (const auto& p : j.at("parts")) {
      const std::string name = p.at("dir").get<std::string>();
      MGJOIN_INPUT_EXPECTS(plain_name(name), path.string() + ": part \"" + name + "\" is not a folder inside " + dir.string());
      t.part_dirs.push_back(dir / name);
      t.part_rows.push_back(p.at("rows").get<std::int64_t>());
      total += t.part_rows.back();
    }
    MGJOIN_INPUT_EXPECTS(j.at("rows").get<std::int64_t>() == total,
                         path.string() + ": " + j.at("rows").dump() + " rows, but its parts hold " + std::to_string(total));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path.string() + ": " + e.what());
  }
  MGJOIN_INPUT_EXPECTS(!t.columns.empty() && !t.part_dirs.empty(), path.string() + ": names no columns or no parts");
  for (const std::string& c : t.columns)
    MGJOIN_INPUT_EXPECTS(plain_name(c), path.string() + ": column \"" + c + "\" is not a file name");
  for (const std::string& c : t.columns)  // a table in parts, or one written whole: never both
    MGJOIN_INPUT_EXPECTS(!fs::exists(dir / c), dir.string() + " holds both " + c + " and a manifest of parts: "
                                                   "remove one of them");
  for (std::size_t i = 0; i < t.part_dirs.size(); ++i)
    for (const std::string& c : t.columns) {
      const ColumnFileInfo info = inspect_column_file(t.part_dirs[i] / c);
      MGJOIN_INPUT_EXPECTS(info.size == t.part_rows[i], (t.part_dirs[i] / c).string() + ": " + std::to_string(info.size) +
                                                            " rows, but " + path.string() + " says " +
                                                            std::to_string(t.part_rows[i]));
    }
  return t;
}

void write_parts_manifest(const fs::path& dir, const PartsTable& table) {
  std::int64_t total = 0;
  nlohmann::json j{{"format", kFormat}, {"version", 1}, {"ranks", table.part_dirs.size()}, {"columns", table.columns}};
  for (std::size_t i = 0; i < table.part_dirs.size(); ++i) {
    j["parts"].push_back({{"dir", table.part_dirs[i].filename().string()}, {"rows", table.part_rows[i]}});
    total += table.part_rows[i];
  }
  j["rows"] = total;
  const fs::path path = dir / "manifest.json";
  const fs::path temp = dir / (".manifest.json.tmp-" + std::to_string(::getpid()));
  {
    std::ofstream out(temp);
    out << j.dump(2) << "\n";
    out.close();
    if (!out) {
      std::error_code ignored;
      fs::remove(temp, ignored);
      throw InputError(path.string() + ": cannot be written");
    }
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw InputError(path.string() + ": cannot be written (" + ec.message() + ")");
  }
}

HostColumn read_column_concat(std::span<const fs::path> paths, std::optional<DType> raw_type, MemoryKind memory) {
  MGJOIN_INPUT_EXPECTS(!paths.empty(), "a column of no files");
  std::vector<ColumnFileInfo> infos;
  for (const fs::path& p : paths) {
    infos.push_back(inspect_column_file(p, raw_type));
    MGJOIN_INPUT_EXPECTS(infos.back().type == infos.front().type,
                         p.string() + ": " + std::string(dtype_name(infos.back().type)) + ", but " + paths.front().string() +
                             " is " + std::string(dtype_name(infos.front().type)));
  }
  const std::int64_t rows = std::accumulate(infos.begin(), infos.end(), std::int64_t{0},
                                            [](std::int64_t n, const ColumnFileInfo& i) { return n + i.size; });
  HostColumn column = HostColumn::allocate(infos.front().type, rows, memory);
  std::size_t at = 0;
  for (std::size_t i = 0; i < paths.size(); ++i) {  // each part straight into its place
    const std::size_t bytes = static_cast<std::size_t>(infos[i].size) * dtype_size(column.type());
    detail::FileHandle::open_read(paths[i]).read_exact(column.as<std::byte>() + at, bytes, infos[i].data_offset);
    at += bytes;
  }
  return column;
}

}  // namespace mgjoin
