// Tables written in parts (`mpirun -np N mgjoin join ... --out-dir D`): D/manifest.json names the
// columns and the part directories in order; a column is its part files one after the other.
#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>

#include "engine/src/io/file_handle.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <numeric>

namespace mgjoin {

namespace fs = std::filesystem;

std::optional<PartsTable> read_parts_manifest(const fs::path& dir) {
  const fs::path path = dir / "manifest.json";
  if (!fs::exists(path)) return std::nullopt;
  std::ifstream in(path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path.string() + ": not JSON (" + e.what() + ")");
  }
  MGJOIN_INPUT_EXPECTS(j.is_object() && j.value("format", "") == "mgjoin-parts",
                       path.string() + ": not a manifest of parts (\"format\": \"mgjoin-parts\")");
  PartsTable t;
  try {
    for (const auto& c : j.at("columns")) t.columns.push_back(c.get<std::string>());
    for (const auto& p : j.at("parts")) {
      t.part_dirs.push_back(dir / p.at("dir").get<std::string>());
      t.part_rows.push_back(p.at("rows").get<std::int64_t>());
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path.string() + ": " + e.what());
  }
  MGJOIN_INPUT_EXPECTS(!t.columns.empty() && !t.part_dirs.empty(), path.string() + ": names no columns or no parts");
  for (std::size_t i = 0; i < t.part_dirs.size(); ++i)
    for (const std::string& c : t.columns) {
      const ColumnFileInfo info = inspect_column_file(t.part_dirs[i] / c);
      MGJOIN_INPUT_EXPECTS(info.size == t.part_rows[i], (t.part_dirs[i] / c).string() + ": " + std::to_string(info.size) +
                                                            " rows, but " + path.string() + " says " +
                                                            std::to_string(t.part_rows[i]));
    }
  return t;
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
