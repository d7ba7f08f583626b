// `mgjoin join`: reads two tables from column files, joins them (mgjoin::join_tables: any kind, output
// form and number of columns; GPUs or the CPU path), and writes one .npy file per output column or
// prints the number of output rows.
#include "arrow_tables.hpp"
#include "cli_options.hpp"
#include "commands.hpp"
#include "engine_options.hpp"
#include "host_columns.hpp"
#include "interrupt.hpp"
#include "join_outputs.hpp"
#include "join_ranks.hpp"
#include "null_keys.hpp"

#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>
#include <mgjoin/join.hpp>
#include <mgjoin/table.hpp>

#include "alloc/host_memory.hpp"
#include "core/timing.hpp"
#include "core/device.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace mgjoin::cli {
namespace {

namespace fs = std::filesystem;
using timing::Clock;
using timing::seconds_since;

struct JoinArgs {
  std::string on, r_key, r_payload, s_key, s_payload, r_dir, s_dir, r_path, s_path, out_dir, format;
  std::string r_columns, s_columns, how = "inner", output, gather_on = "auto", rank_exchange = "auto";
  std::string type, r_type, s_type, r_payload_type, s_payload_type;
  bool count_only = false, json = false, overwrite = false, quiet = false, nulls_equal = false;
  EngineFlags engine;  // --gpus --gpu-ids --sort --exchange --gpu-memory-limit --tuning-file
};

/// One input column: its name in the table, the option that named it (for messages), its path and its
/// raw dtype if given.
struct ColumnSource {
  std::string name;
  std::string option;
  fs::path path;
  std::optional<DType> raw_type;
  std::string type_options;  // which options set raw_type, for the "needs a type" message
  ColumnFileInfo info;
  std::vector<fs::path> parts;  ///< a table in parts: this column's file in every part, in order (path: the first)
  /// A .npy column of fixed-width strings (NumPy's S or U): read in Arrow's form, as a Parquet table's
  /// strings are; `info` then says its rows and the type of its dictionary codes.
  std::optional<StringColumnFileInfo> strings;
  std::optional<ArrowColumnInfo> arrow_info;
};

/// One input table: its columns and the names of its key columns.
struct TableSource {
  std::vector<ColumnSource> columns;
  std::vector<std::string> key;
  std::optional<std::vector<std::string>> chosen;  ///< --r-columns / --s-columns
  std::optional<ArrowTableSource> arrow;           ///< a Parquet or Arrow IPC table (columns: its schema's)
  const ColumnSource* find(const std::string& name) const {
    for (const auto& c : columns)
      if (c.name == name) return &c;
    return nullptr;
  }
  /// The column's Arrow type where it has one (a Parquet or Arrow IPC table's, a .npy string column's).
  const ArrowColumnInfo* arrow_info(const std::string& name) const {
    if (arrow) return arrow->find(name);
    const ColumnSource* c = find(name);
    return c && c->arrow_info ? &*c->arrow_info : nullptr;
  }
};

std::optional<DType> parse_type_option(const std::string& value, const char* option) {
  if (value.empty()) return std::nullopt;
  const auto type = parse_dtype(value);
  MGJOIN_INPUT_EXPECTS(type.has_value(),
                       std::string(option) + " " + value +
                           ": unknown type (expected int8, uint8, int16, uint16, int32, uint32, int64, uint64, "
                           "float32, float64 or bool)");
  return type;
}

/// The first of `types` that is set (most specific first).
std::optional<DType> first_of(std::initializer_list<std::optional<DType>> types) {
  for (const auto& t : types)
    if (t) return t;
  return std::nullopt;
}

/// "a,b,c" -> {"a", "b", "c"}; empty names are refused.
std::vector<std::string> split_names(const std::string& text, const std::string& option) {
  std::vector<std::string> names;
  std::stringstream in(text);
  for (std::string name; std::getline(in, name, ',');) {
    MGJOIN_INPUT_EXPECTS(!name.empty(), option + " " + text + ": an empty column name");
    names.push_back(name);
  }
  MGJOIN_INPUT_EXPECTS(!names.empty(), option + ": no column named");
  return names;
}

/// Every .npy file of `dir` as a column named by its file stem, in name order.
std::vector<ColumnSource> npy_files_of(const fs::path& dir, const std::string& dir_opt) {
  std::vector<ColumnSource> columns;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file() || file_format_of(entry.path()) != FileFormat::Npy) continue;
    columns.push_back({entry.path().stem().string(), dir_opt, entry.path(), std::nullopt, "", {}, {}, {}, {}});
  }
  std::sort(columns.begin(), columns.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return columns;
}

/// The columns of a table in parts (`mpirun mgjoin join --out-dir DIR`'s manifest.json): each named by
/// its file's stem, read from every part in order.
std::vector<ColumnSource> parts_columns_of(const PartsTable& parts, const std::string& dir_opt) {
  std::vector<ColumnSource> columns;
  for (const std::string& file : parts.columns) {
    ColumnSource c{fs::path(file).stem().string(), dir_opt, parts.part_dirs.front() / file, std::nullopt, "", {}, {}, {}, {}};
    for (const fs::path& d : parts.part_dirs) c.parts.push_back(d / file);
    columns.push_back(std::move(c));
  }
  return columns;
}

/// "its columns: a, b, c" (the first ten), for messages about a column that is not there.
std::string column_list(const TableSource& t) {
  std::string list = "its columns: ";
  for (std::size_t i = 0; i < t.columns.size() && i < 10; ++i) (list += i ? ", " : "") += t.columns[i].name;
  if (t.columns.size() > 10) list += ", ... (" + std::to_string(t.columns.size()) + " in all)";
  return list;
}

/// --r-dir DIR: every .npy file of DIR is a column (`mgjoin generate`'s layout, r_key.npy and
/// r_payload.npy beside S's files, reads as the columns key and payload; a table in parts, by its
/// manifest.json); the key is the names of `key_opt` (--r-key or --on), or the column named key.
TableSource table_from_dir(const std::string& side, const std::string& dir, const std::string& key_names,
                           const std::string& key_opt) {
  const std::string dir_opt = "--" + side + "-dir";
  const fs::path d = dir;
  MGJOIN_INPUT_EXPECTS(fs::is_directory(d), dir_opt + " " + dir + ": no such directory");
  TableSource t;
  const std::string prefix = side + "_";
  // mgjoin generate's layout: R's and S's files side by side (r_key.npy and s_key.npy), no key.npy.
  const bool generated = !fs::exists(d / "key.npy") && fs::exists(d / "r_key.npy") && fs::exists(d / "s_key.npy");
  std::optional<PartsTable> parts;
  try {
    parts = read_parts_manifest(d);
  } catch (const InputError& e) {
    throw InputError(dir_opt + " " + e.what());
  }
  for (ColumnSource& c : parts ? parts_columns_of(*parts, dir_opt) : npy_files_of(d, dir_opt)) {
    if (generated) {
      if (!c.name.starts_with(prefix)) continue;  // the other side's columns
      c.name = c.name.substr(prefix.size());
    }
    t.columns.push_back(std::move(c));
  }
  MGJOIN_INPUT_EXPECTS(!t.columns.empty(), dir_opt + " " + dir + ": holds no .npy file");
  if (!key_names.empty()) {
    t.key = split_names(key_names, key_opt);
  } else {
    MGJOIN_INPUT_EXPECTS(t.find("key"), dir_opt + " " + dir + ": holds no key.npy (or " + prefix +
                                            "key.npy): name the key column(s) with " + key_opt);
    t.key = {"key"};
  }
  for (const std::string& k : t.key) {
    const bool a_file = k.find('/') != std::string::npos || file_format_of(k) == FileFormat::Npy;
    MGJOIN_INPUT_EXPECTS(t.find(k) || !a_file, key_opt + " " + k + ": with " + dir_opt +
                                                   ", name key columns (file stems, such as key), not files");
    MGJOIN_INPUT_EXPECTS(t.find(k), key_opt + " " + k + ": " + dir + " holds no " + k + ".npy (" + column_list(t) + ")");
  }
  return t;
}

/// --r PATH (or --r-dir PATH) holding Parquet or Arrow IPC files: its schema's columns (hive-style
/// name=value folders' too); the key is the names of `key_opt`, or the column named key.
TableSource table_from_arrow(const std::string& opt, const fs::path& path, const std::string& key_names,
                             const std::string& key_opt) {
  TableSource t;
  t.arrow = inspect_arrow_table(path, opt);
  for (const ArrowColumnInfo& c : t.arrow->columns) {
    ColumnSource col{c.name, opt, t.arrow->files.front(), std::nullopt, "", {}, t.arrow->files, {}, {}};
    col.info.type = c.storage.value_or(c.dictionary_key.empty() ? DType::UInt64 : DType::Int32);  // a key: its codes
    col.info.size = t.arrow->rows;
    t.columns.push_back(std::move(col));
  }
  t.key = key_names.empty() ? std::vector<std::string>{"key"} : split_names(key_names, key_opt);
  for (const std::string& k : t.key) {
    const ArrowColumnInfo* c = t.arrow->find(k);
    MGJOIN_INPUT_EXPECTS(c, opt + " " + path.string() + ": no key column " + k + " (" + column_list(t) + ")" +
                                (key_names.empty() ? ": name the key column(s) with " + key_opt : ""));
    MGJOIN_INPUT_EXPECTS(c->storage || !c->dictionary_key.empty(),
                         opt + " " + t.arrow->files.front().string() + ": key column " + k + " is " + c->type_name +
                             ", which mgjoin cannot join on (keys: numbers, bool, dates, times, timestamps, strings, "
                             "binary, fixed_size_binary and decimals)");
  }
  return t;
}

/// --r-key FILE [--r-payload FILE]: the columns key and payload.
TableSource table_from_files(const std::string& side, const std::string& key, const std::string& key_opt,
                             const std::string& payload, std::optional<DType> key_type, std::optional<DType> payload_type) {
  const std::string types = "--" + side + "-type or --type";
  TableSource t;
  t.columns.push_back({"key", key_opt, key, key_type, types, {}, {}, {}, {}});
  if (!payload.empty())
    t.columns.push_back(
        {"payload", "--" + side + "-payload", payload, payload_type, "--" + side + "-payload-type, " + types, {}, {}, {}, {}});
  t.key = {"key"};
  return t;
}

/// One side's table from its options; `on` (--on) names the key instead of --r-key / --s-key.
TableSource resolve_table(char side_char, const std::string& on, const std::string& key, const std::string& payload,
                          const std::string& dir, const std::string& table_path, const std::string& columns,
                          std::optional<DType> key_type, std::optional<DType> payload_type) {
  const std::string side(1, side_char);
  const std::string key_opt = on.empty() ? "--" + side + "-key" : "--on";
  const std::string payload_opt = "--" + side + "-payload", dir_opt = "--" + side + "-dir";
  const std::string& key_names = on.empty() ? key : on;
  const std::string path_opt = "--" + side;
  MGJOIN_INPUT_EXPECTS(table_path.empty() || (dir.empty() && payload.empty()),
                       path_opt + " excludes " + dir_opt + " and " + payload_opt + " (" + key_opt + " names key columns)");
  MGJOIN_INPUT_EXPECTS(!(dir.empty() && table_path.empty() && key_names.empty()),
                       path_opt + ", --" + side + "-key or " + dir_opt + " is required");
  // --r PATH: a Parquet or Arrow IPC file or dataset, or a directory of .npy files (as --r-dir).
  const std::string& table = table_path.empty() ? dir : table_path;
  const std::string& table_opt = table_path.empty() ? dir_opt : path_opt;
  bool arrow = false;
  if (!table.empty()) {
    MGJOIN_INPUT_EXPECTS(fs::exists(table), table_opt + " " + table + ": no such file or directory");
    arrow = table_format_of(table) != TableFormat::Npy;
    MGJOIN_INPUT_EXPECTS(arrow || fs::is_directory(table),
                         table_opt + " " + table + ": expected a Parquet file (.parquet), an Arrow IPC file (.arrow, "
                                                   ".feather), or a directory of them or of .npy column files");
  }
  TableSource t;
  if (arrow) {
    t = table_from_arrow(table_opt, table, key_names, key_opt);
  } else {
    MGJOIN_INPUT_EXPECTS(dir.empty() || payload.empty(), dir_opt + " excludes " + payload_opt + " (with " + dir_opt + ", " +
                                                             key_opt + " names key columns)");
    t = table.empty() ? table_from_files(side, key_names, key_opt, payload, key_type, payload_type)
                      : table_from_dir(side, table, key_names, key_opt);
  }
  if (!columns.empty()) {
    t.chosen = split_names(columns, "--" + side + "-columns");
    for (const std::string& c : *t.chosen) {
      if (t.find(c)) continue;
      const std::string where = arrow           ? " in " + table + " (" + column_list(t) + ")"
                                : table.empty() ? std::string(" (the columns are key and payload)")
                                                : " (" + table + " holds no " + c + ".npy; " + column_list(t) + ")";
      throw InputError("--" + side + "-columns " + c + ": no such column" + where);
    }
  }
  return t;
}

/// A .npy column of fixed-width strings: its header (every part's: one kind of strings) and its Arrow
/// type; false for a column of any other type.
bool inspect_strings(ColumnSource& column) {
  if (column.raw_type) return false;
  column.strings = inspect_string_column_file(column.path);
  if (!column.strings) return false;
  column.arrow_info = npy_strings_column_info(column.name, column.strings->unicode, column.path.string());
  column.info = {FileFormat::Npy, DType::Int32, column.strings->size, column.strings->data_offset};  // a key: its codes
  for (std::size_t i = 1; i < column.parts.size(); ++i) {
    const auto part = inspect_string_column_file(column.parts[i]);
    MGJOIN_INPUT_EXPECTS(part && part->unicode == column.strings->unicode,
                         column.parts[i].string() + ": not " + (column.strings->unicode ? "unicode" : "byte") +
                             " strings, but " + column.path.string() + " is");
    column.info.size += part->size;
  }
  return true;
}

/// Checks the file (header, dtype, size) without reading its data; messages start with the option.
void inspect(ColumnSource& column) {
  const std::string name = column.option + " " + column.path.string();
  MGJOIN_INPUT_EXPECTS(file_format_of(column.path) == FileFormat::Npy || column.raw_type,
                       name + ": raw file (not .npy) needs its type: give " + column.type_options);
  try {
    if (inspect_strings(column)) return;
    column.info = inspect_column_file(column.path, column.raw_type);
    for (std::size_t i = 1; i < column.parts.size(); ++i) {  // a table in parts: the rows of every part
      const ColumnFileInfo part = inspect_column_file(column.parts[i], column.raw_type);
      MGJOIN_INPUT_EXPECTS(part.type == column.info.type, column.parts[i].string() + ": " + std::string(dtype_name(part.type)) +
                                                              ", but " + column.path.string() + " is " +
                                                              std::string(dtype_name(column.info.type)));
      column.info.size += part.size;
    }
  } catch (const InputError& e) {
    throw InputError(column.option + " " + e.what());
  }
}

/// Every column's file and the lengths, before gigabytes are read.
void check_table_files(TableSource& t) {
  if (t.arrow) return;  // inspected as a whole (inspect_arrow_table)
  for (ColumnSource& c : t.columns) inspect(c);
  const ColumnSource& first = t.columns.front();
  for (const ColumnSource& c : t.columns)
    MGJOIN_INPUT_EXPECTS(c.info.size == first.info.size, c.option + " " + c.path.string() + ": " +
                                                             std::to_string(c.info.size) + " rows, but " +
                                                             first.path.string() + " has " +
                                                             std::to_string(first.info.size));
}

/// Each key column's type, where it is, and its dictionary key family (check_key_pairs).
std::vector<KeyColumnType> key_column_types(const TableSource& t) {
  std::vector<KeyColumnType> out;
  for (const std::string& k : t.key) {
    const ColumnSource& c = *t.find(k);
    const ArrowColumnInfo* a = t.arrow_info(k);
    const std::string table = t.arrow ? t.arrow->option + " " + t.arrow->path.string() : c.option + " " + c.path.string();
    out.push_back({"key column " + k + " of " + table, a ? a->type_name : std::string(dtype_name(c.info.type)),
                   a && !a->storage ? a->dictionary_key : "", a ? a->temporal : ""});
  }
  return out;
}

/// The key columns' types, before the files are read: keys through a dictionary against their own
/// family only (check_key_pairs), and the library's rules (check_key_types; such a key: its int32 codes).
void check_key_files(const TableSource& r, const TableSource& s, const TableJoinOptions& o) {
  check_key_pairs(key_column_types(r), key_column_types(s));
  const auto types = [](const TableSource& t) {
    std::vector<DType> out;
    for (const std::string& k : t.key) out.push_back(t.find(k)->info.type);
    return out;
  };
  check_key_types(types(r), types(s), o);
}

/// The columns a join reads: the key columns and, with `payloads`, the chosen (or all) others.
std::vector<const ColumnSource*> needed_columns(const TableSource& src, bool payloads) {
  std::vector<const ColumnSource*> out;
  for (const ColumnSource& c : src.columns) {
    const bool key = std::find(src.key.begin(), src.key.end(), c.name) != src.key.end();
    const bool chosen = !src.chosen || std::find(src.chosen->begin(), src.chosen->end(), c.name) != src.chosen->end();
    if (key || (payloads && chosen)) out.push_back(&c);
  }
  return out;
}

/// Bytes of host memory the columns a join reads take once read: column files only (a Parquet or Arrow
/// IPC table's decoded size is known once it is decoded; its columns are checked one by one as they are
/// allocated, as every host column is).
std::uint64_t input_bytes(const TableSource& src, bool payloads) {
  if (src.arrow) return 0;
  std::uint64_t bytes = 0;
  for (const ColumnSource* c : needed_columns(src, payloads))  // strings: the file's bytes, and Arrow's copy
    bytes += static_cast<std::uint64_t>(c->info.size) * (c->strings ? 2 * c->strings->element_bytes() : dtype_size(c->info.type));
  return bytes;
}

/// Refuses a join whose input columns (`rb` bytes of R's, `sb` of S's) cannot all be held in host memory,
/// before the first is read: one column at a time, the last one would fail after the others had been read
/// (minutes at terabyte sizes).
void expect_input_memory(std::uint64_t rb, std::uint64_t sb) {
  if (rb + sb < alloc::kCheckedHostBytes) return;  // as a column's allocation is
  alloc::expect_host_memory(rb + sb, "the input columns (R " + alloc::format_bytes(rb) + ", S " + alloc::format_bytes(sb) +
                                         ", read whole before the join)");
}

/// Reads the columns the join needs (needed_columns): of a Parquet or Arrow IPC table, only those; the
/// columns in Arrow's form into `arrow` (empty placeholders in the table: prepare_host_columns).
LoadedTable read_table(const TableSource& src, MemoryKind memory, bool payloads, ArrowColumns& arrow) {
  LoadedTable t;
  t.key = src.key;
  const std::vector<const ColumnSource*> needed = needed_columns(src, payloads);
  for (const ColumnSource* c : needed) t.names.push_back(c->name);
  if (src.arrow) {
    for (ReadColumn& c : read_arrow_columns(*src.arrow, t.names, memory)) {
      if (c.arrow) arrow.emplace_back(t.names[t.columns.size()], std::move(c.arrow));
      t.columns.push_back(std::move(c.values));
      t.valid.push_back(std::move(c.valid));
    }
    return t;
  }
  for (const ColumnSource* c : needed) {
    if (c->strings) {
      const std::vector<fs::path> files = c->parts.empty() ? std::vector<fs::path>{c->path} : c->parts;
      arrow.emplace_back(c->name, read_npy_strings(files, c->option).arrow);
      t.columns.emplace_back();  // a placeholder, as for a Parquet table's strings (prepare_host_columns)
    } else {
      t.columns.push_back(c->parts.empty() ? read_column(c->path, c->raw_type, memory)
                                           : read_column_concat(c->parts, c->raw_type, memory));
    }
    t.valid.emplace_back();
  }
  return t;
}

/// --format, else the inputs': .npy for .npy tables, Arrow IPC for Arrow IPC ones, else Parquet.
TableFormat output_format(const JoinArgs& a, const TableSource& r, const TableSource& s) {
  if (!a.format.empty()) {
    for (TableFormat f : {TableFormat::Npy, TableFormat::Parquet, TableFormat::ArrowIpc})
      if (a.format == table_format_name(f)) {
        if (f != TableFormat::Npy) expect_arrow_formats("--format " + a.format);
        return f;
      }
    throw InputError("--format " + a.format + ": expected parquet, arrow or npy");
  }
  if (!r.arrow && !s.arrow) return TableFormat::Npy;
  const bool ipc = r.arrow && s.arrow && r.arrow->format == TableFormat::ArrowIpc && s.arrow->format == TableFormat::ArrowIpc;
  return ipc ? TableFormat::ArrowIpc : TableFormat::Parquet;
}

/// "maps" writes the gather maps; "count" prints the rows; "columns" writes the joined columns.
TableOutput output_form(const JoinArgs& a) {
  if (a.count_only) {
    MGJOIN_INPUT_EXPECTS(a.output.empty() || a.output == "count", "--count and --output " + a.output + " exclude each other");
    return TableOutput::Count;
  }
  if (a.output.empty() || a.output == "columns") return TableOutput::Columns;
  if (a.output == "maps") return TableOutput::GatherMaps;
  MGJOIN_INPUT_EXPECTS(a.output == "count", "--output " + a.output + ": expected columns, maps or count");
  return TableOutput::Count;
}

TableJoinOptions join_options(const JoinArgs& args, TableOutput form, const TableSource& r, const TableSource& s) {
  TableJoinOptions o;
  args.engine.apply(o.join);
  for (const int id : o.join.gpu_ids)
    MGJOIN_INPUT_EXPECTS(id >= 0, "--gpu-ids: GPU id " + std::to_string(id) + " is negative");
  o.how = require_join_kind(args.how, "--how " + args.how);
  o.gather_on = require_gather_on(args.gather_on, "--gather-on " + args.gather_on);
  o.output = form;
  o.left_on = r.key;
  o.right_on = s.key;
  if (o.output == TableOutput::Columns) {  // only then are the chosen columns read (names checked already)
    o.left_columns = r.chosen;
    if (outputs_right_columns(o.how)) o.right_columns = s.chosen;
  }
  o.may_reorder_inputs = true;  // the columns are the CLI's own copies of the files
  o.join.cancel = &interrupt_flag();
  return o;
}

/// The Arrow types of the output's columns where the inputs had them: r.<name> and s.<name> their
/// column's, a key column its tables' where both sides have one type.
OutputTypes output_types(const TableSource& r, const TableSource& s) {
  OutputTypes types;
  for (const TableSource* t : {&r, &s})
    for (const ColumnSource& c : t->columns)
      if (const ArrowColumnInfo* a = t->arrow_info(c.name)) types[(t == &r ? "r." : "s.") + c.name] = a->type;
  for (std::size_t k = 0; k < r.key.size(); ++k) {
    const ArrowColumnInfo* a = r.arrow_info(r.key[k]);
    const ArrowColumnInfo* b = s.arrow_info(s.key[k]);
    if (a && b && a->type_name == b->type_name)
      types[r.key.size() == 1 ? std::string("key") : "key." + r.key[k]] = a->type;
  }
  return types;
}

/// Renames the staged `files` into place all at once (with --overwrite, the table an earlier run left in
/// `dir` goes in the same step); their final names.
std::vector<std::string> commit_outputs(const fs::path& dir, std::vector<StagedColumnFile>& files, bool overwrite) {
  throw_if_interrupted();  // the staged files are removed as they go out of scope
  commit_all(files, overwrite ? table_files_in(dir) : std::vector<fs::path>{});
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.final_path().string());
  return names;
}

/// Stages one .npy file per output column, or the gather maps, or one Parquet or Arrow IPC file of them,
/// then commits them (commit_outputs).
std::vector<std::string> write_outputs(const fs::path& dir, NullKeyJoin& join, const TableJoinOptions& o, bool overwrite,
                                       TableFormat format, const OutputTypes& types, const HostColumns& host) {
  if (format == TableFormat::Npy) {  // refuses nulls, which .npy files cannot hold
    drop_validity_columns(join);
    expect_npy_strings_hold(join, o, host);
  }
  prepare_output_directory(dir, "--out-dir");
  std::vector<StagedColumnFile> files;
  if (format == TableFormat::Npy)
    files = stage_npy_join_outputs(dir, join, o, types, host);
  else  // one file, named for its format (part-0.parquet, part-0.arrow)
    files.push_back(stage_arrow_join_output(dir / ("part-0." + std::string(table_format_name(format))), join, o, format, types,
                                            &host));
  return commit_outputs(dir, files, overwrite);
}

/// Whether the join's output may stream into .npy files as it is made: columns to .npy, and no column that
/// the host makes after the join (strings: keys decoded, payloads gathered by row numbers). The table
/// layer then streams a carried join's columns (TableJoinOptions::join's sink), and the null keys' parts
/// never.
bool streams_output(TableOutput form, TableFormat format, const HostColumns& host) {
  return form == TableOutput::Columns && format == TableFormat::Npy && host.gathered.empty() && host.dictionaries.empty();
}

/// Whether the output may stream at all: MGJOIN_STREAM_OUTPUT=0 writes it after the join instead (to
/// compare the two). @throw InputError for another value.
bool output_streaming_allowed() {
  const char* env = std::getenv("MGJOIN_STREAM_OUTPUT");
  if (!env) return true;
  const std::string v = env;
  MGJOIN_INPUT_EXPECTS(v == "0" || v == "1" || v == "off" || v == "on",
                       "MGJOIN_STREAM_OUTPUT=" + v + ": expected 1 or on (the default), 0 or off");
  return v == "1" || v == "on";
}

/// The files a streamed join wrote (NpyResultFiles), named for the result's columns ("key", "r.<name>",
/// "s.<name>": TableJoinOptions::join says which part each is), their headers written, committed.
std::vector<std::string> commit_streamed_outputs(const fs::path& dir, const TableJoinResult& result, NpyResultFiles& files,
                                                 bool overwrite) {
  std::array<fs::path, 3> paths;
  for (const NamedColumn& c : result.columns) {
    const auto part = c.name.starts_with("r.") ? ResultPart::RPayload : c.name.starts_with("s.") ? ResultPart::SPayload : ResultPart::Key;
    MGJOIN_EXPECTS(paths[static_cast<int>(part)].empty(), "a streamed join's columns: one for each part");
    paths[static_cast<int>(part)] = dir / (c.name + ".npy");
  }
  std::vector<StagedColumnFile> staged = files.finish(result.join, paths);
  return commit_outputs(dir, staged, overwrite);
}

nlohmann::json summary(const TableJoinResult& result, const JoinArgs& args, const TableView& r, const TableView& s,
                       double read_s, double write_s, const std::vector<std::string>& outputs) {
  nlohmann::json j = run_summary(result);
  j["count"] = result.count;
  j["how"] = args.how;
  j["r_rows"] = r.rows();
  j["s_rows"] = s.rows();
  j["read_seconds"] = read_s;
  j["write_seconds"] = write_s;  // with output_streamed: the headers and the commit (the rows went during the join)
  j["output_streamed"] = result.join.sunk;
  j["output_files"] = outputs;
  j["peak_rss_bytes"] = alloc::peak_resident_bytes();
  return j;
}

/// Both input tables, resolved from the options and checked (headers, lengths) before any data is read.
std::pair<TableSource, TableSource> resolve_inputs(const JoinArgs& a) {
  const auto type = parse_type_option(a.type, "--type");
  const auto r_type = parse_type_option(a.r_type, "--r-type");
  const auto s_type = parse_type_option(a.s_type, "--s-type");
  const auto r_payload_type = parse_type_option(a.r_payload_type, "--r-payload-type");
  const auto s_payload_type = parse_type_option(a.s_payload_type, "--s-payload-type");
  TableSource r = resolve_table('r', a.on, a.r_key, a.r_payload, a.r_dir, a.r_path, a.r_columns,
                                first_of({r_type, type}), first_of({r_payload_type, r_type, type}));
  TableSource s = resolve_table('s', a.on, a.s_key, a.s_payload, a.s_dir, a.s_path, a.s_columns,
                                first_of({s_type, type}), first_of({s_payload_type, s_type, type}));
  check_table_files(r);
  check_table_files(s);
  return {std::move(r), std::move(s)};
}

/// Whether `folder` is `out` or one of its part-N folders: where --overwrite would replace files.
bool in_output(const fs::path& folder, const fs::path& out) {
  return folder == out || (folder.parent_path() == out && is_part_folder_name(folder.filename().string()));
}

/// --out-dir, checked before any data is read: a place a table can be written that holds no table
/// unless --overwrite, and no input of this join (the output would replace what it was made from):
/// every input file (each part's, for a table in parts) is compared by where its name lies and by where
/// its data lies (a link followed), both with links resolved.
void check_out_dir(const JoinArgs& a, const TableSource& r, const TableSource& s) {
  check_output_directory(a.out_dir, "--out-dir", a.overwrite ? ExistingTable::Replace : ExistingTable::Refuse,
                         "--overwrite");
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(a.out_dir, ec);
  if (ec) return;  // what cannot be resolved holds nothing of ours
  for (const TableSource* src : {&r, &s})
    for (const ColumnSource& c : src->columns)
      for (const fs::path& file : c.parts.empty() ? std::vector<fs::path>{c.path} : c.parts) {
        const fs::path name_folder = fs::weakly_canonical(file.parent_path().empty() ? "." : file.parent_path(), ec);
        const fs::path data_folder = fs::weakly_canonical(file, ec).parent_path();
        MGJOIN_INPUT_EXPECTS(!in_output(name_folder, out) && !in_output(data_folder, out),
                             "--out-dir " + a.out_dir + ": holds this join's input " + file.string() + " (" +
                                 c.option + "): write the output elsewhere");
      }
}

/// The files of one side that every rank reads its rows of (of a table in parts, every part's file and
/// its rows: a rank's rows may span parts).
std::vector<RankColumn> rank_columns(const TableSource& src, bool payloads) {
  std::vector<RankColumn> out;
  for (const ColumnSource* c : needed_columns(src, payloads)) {
    RankColumn column{c->name, c->path.string(), c->raw_type, {}, {}};
    for (const fs::path& part : c->parts) {
      column.parts.push_back(part.string());
      column.part_rows.push_back(inspect_column_file(part, c->raw_type).size);
    }
    out.push_back(std::move(column));
  }
  return out;
}

/// `mgjoin join` under an MPI launcher (join_ranks.hpp): the same tables, kinds and output forms as one
/// process, checked the same way on every rank.
RankJoinRequest rank_request(const JoinArgs& a, TableOutput form) {
  MGJOIN_INPUT_EXPECTS(form == TableOutput::Count ? a.out_dir.empty() : !a.out_dir.empty(),
                       "one of --out-dir (write the joined columns or --output maps) or --count is required, not both");
  const auto [r_src, s_src] = resolve_inputs(a);
  MGJOIN_INPUT_EXPECTS(!r_src.arrow && !s_src.arrow && output_format(a, r_src, s_src) == TableFormat::Npy,
                       "under an MPI launcher, mgjoin join reads and writes .npy tables only (Parquet and Arrow IPC: one process)");
  if (!a.out_dir.empty()) check_out_dir(a, r_src, s_src);
  RankJoinRequest q;
  q.options = join_options(a, form, r_src, s_src);
  check_key_files(r_src, s_src, q.options);
  q.options.join.progress = {};  // one bar per rank would interleave; rank 0 prints the summary
  const bool payloads = form == TableOutput::Columns;
  q.left = rank_columns(r_src, payloads);
  q.right = rank_columns(s_src, payloads && outputs_right_columns(q.options.how));
  q.left_rows = r_src.columns.front().info.size;  // every column's, checked by resolve_inputs
  q.right_rows = s_src.columns.front().info.size;
  q.out_dir = a.out_dir;
  q.overwrite = a.overwrite;
  q.json = a.json;
  MGJOIN_INPUT_EXPECTS(a.rank_exchange == "auto" || a.rank_exchange == "mpi" || a.rank_exchange == "nccl",
                       "--rank-exchange " + a.rank_exchange + ": expected auto, mpi or nccl");
  q.rank_exchange = a.rank_exchange;
  return q;
}

/// .npy output: refuses, in one line, an output column that .npy cannot hold (a Parquet or Arrow IPC
/// input's, or a .npy input's strings: no .npy string writer yet).
void expect_npy_outputs(const TableSource& r_src, const TableSource& s_src, const TableJoinOptions& options) {
  for (const TableSource* t : {&r_src, &s_src})
    if (t == &r_src || outputs_right_columns(options.how)) {
      std::vector<NpyOutputCheck> columns;
      for (const ColumnSource* c : needed_columns(*t, true))
        if (const ArrowColumnInfo* a = t->arrow_info(c->name))
          columns.push_back({a, t->arrow ? t->arrow->option + " " + t->arrow->path.string() : c->option + " " + c->path.string()});
      expect_npy_holds(columns, t->key, t == &r_src ? "r." : "s.");
    }
}

/// The engine of a join on GPUs, made on a thread of its own so that the driver's start (device_count()
/// starts it), the contexts' and the device memory's overlap the reads: none (an invalid future) for the
/// CPU path, nullptr where no GPU is found (join() then runs the CPU path or refuses GPUs asked for by
/// name, with its own message). Its errors come out of get(), where the join begins.
std::future<std::unique_ptr<Engine>> start_engine(Executor where, const EngineOptions& options) {
  if (where != Executor::Gpus) return {};
  return std::async(std::launch::async, [options]() -> std::unique_ptr<Engine> {
    if (gpu::device_count() == 0) return nullptr;
    return std::make_unique<Engine>(options);
  });
}

void run_join(const JoinArgs& args) {
  install_interrupt_handler();
  // One join a process: no later join repays pinning its result columns afresh on several GPUs
  // (exec::pin_result_columns says when they go through the staging instead).
  alloc::expect_later_joins(false);
  // Across ranks every check runs inside the ranks' agreement, so that an error is printed once.
  if (launched_as_ranks()) return run_join_ranks([&] { return rank_request(args, output_form(args)); });
  const TableOutput form = output_form(args);
  const bool writes = form != TableOutput::Count;
  MGJOIN_INPUT_EXPECTS(!writes || !args.out_dir.empty(),
                       "one of --out-dir (write the joined columns or --output maps) or --count (print the number of "
                       "output rows) is required");
  MGJOIN_INPUT_EXPECTS(writes || args.out_dir.empty(),
                       std::string(args.count_only ? "--count" : "--output count") + " and --out-dir exclude each other");
  // Everything that can be checked cheaply is checked before reading gigabytes.
  const auto [r_src, s_src] = resolve_inputs(args);
  const TableJoinOptions options = join_options(args, form, r_src, s_src);
  check_key_files(r_src, s_src, options);
  if (form == TableOutput::Columns && output_format(args, r_src, s_src) == TableFormat::Npy)
    expect_npy_outputs(r_src, s_src, options);
  const fs::path out_dir = args.out_dir;
  if (writes) check_out_dir(args, r_src, s_src);  // created only once there is an output to write (its first rows)
  const bool may_stream = writes && output_streaming_allowed();

  // A small join with the GPUs left to choose never starts them (choose_executor): no CUDA call at all.
  const ExecutorChoice where = choose_executor(options.join, r_src.columns.front().info.size, s_src.columns.front().info.size);
  // The GPUs start (the driver, contexts, device memory, pinned ranges: 0.4-2 s) while this thread reads
  // the files into pageable memory; the engine pins or stages what its flow copies when the join runs.
  // Reading into pinned memory instead would wait for the driver's start (the first pinned allocation
  // does), so the two would follow each other again.
  std::future<std::unique_ptr<Engine>> starting = start_engine(where.executor, options.join);
  const MemoryKind memory = MemoryKind::Pageable;
  const bool payloads = options.output == TableOutput::Columns;
  const bool s_payloads = payloads && outputs_right_columns(options.how);
  const std::uint64_t r_bytes = input_bytes(r_src, payloads), s_bytes = input_bytes(s_src, s_payloads);
  expect_input_memory(r_bytes, s_bytes);
  const auto t_read = Clock::now();
  const TableFormat format = output_format(args, r_src, s_src);
  ArrowColumns r_arrow, s_arrow;
  LoadedTable r = read_table(r_src, memory, payloads, r_arrow);
  LoadedTable s = read_table(s_src, memory, s_payloads, s_arrow);
  TableJoinOptions engine_options = options;  // the chosen columns as the engine sees them
  const HostColumns host = prepare_host_columns(r, s, r_arrow, s_arrow, engine_options, memory);
  const double read_s = seconds_since(t_read);
  throw_if_interrupted();
  const auto t_wait = Clock::now();
  const std::unique_ptr<Engine> engine = starting.valid() ? starting.get() : nullptr;
  const PhaseStat waited{"start.wait", seconds_since(t_wait), 0, 0};  // the start the reads did not hide
  const bool gpus_used = engine != nullptr;

  // .npy columns the join's flow outputs as they are go to their files while it runs (NpyResultFiles).
  std::optional<NpyResultFiles> streamed;
  if (may_stream && streams_output(form, format, host)) streamed.emplace(out_dir, "--out-dir");  // made on its first rows
  NullKeyJoin joined;
  {
    ProgressBar bar(progress_wanted(args.quiet));
    TableJoinOptions with_bar = engine_options;
    with_bar.join.progress = with_test_interrupt(bar.callback());
    if (streamed) with_bar.join.sink = &*streamed;
    // Payload nulls travel as hidden bool columns; rows with null keys match nothing (SQL), or each
    // other with --nulls-equal.
    if (payloads) carry_payload_validity(r, with_bar.left_columns);
    if (s_payloads) carry_payload_validity(s, with_bar.right_columns);
    joined = join_with_null_keys(r, s, with_bar, args.nulls_equal, [&](const TableView& a, const TableView& b, const TableJoinOptions& o) {
      return engine ? join_tables(*engine, a, b, o) : join_tables(a, b, o);
    });
    if (engine) {
      auto& phases = joined.result.join.phases;
      phases.insert(phases.begin(), waited);
      phases.insert(phases.begin(), engine->startup().begin(), engine->startup().end());
    }
  }
  TableJoinResult& result = joined.result;
  std::string note = where.executor == Executor::Cpu ? "" : !gpus_used ? " (no CUDA GPU found, so the CPU path ran)" : "";
  if (!gpus_used && args.engine.strategy != "auto")
    note += " (--strategy " + args.engine.strategy + " chooses between the GPU flows: the CPU path has one)";
  if (!args.quiet) {
    std::fprintf(stderr, "mgjoin: executor: %s%s\n", result.join.executor.c_str(), note.c_str());
    if (gpus_used || where.executor == Executor::Cpu)
      std::fprintf(stderr, "mgjoin: strategy: %s\n", result.join.strategy_reason.c_str());
    if (gpus_used && !result.gathers.empty()) std::fprintf(stderr, "mgjoin: %s\n", result.gathers.c_str());
  }

  std::vector<std::string> outputs;
  const auto t_write = Clock::now();
  if (writes && result.join.sunk)
    outputs = commit_streamed_outputs(out_dir, joined.result, *streamed, args.overwrite);
  else if (writes)
    outputs = write_outputs(out_dir, joined, options, args.overwrite, format, output_types(r_src, s_src), host);
  const double write_s = seconds_since(t_write);

  if (args.json) {
    nlohmann::json j = summary(result, args, r.view(), s.view(), read_s, write_s, outputs);
    if (!r_src.arrow && !s_src.arrow) j["input_bytes"] = r_bytes + s_bytes;
    std::printf("%s\n", j.dump(2).c_str());
  } else if (!writes) {
    std::printf("%llu\n", static_cast<unsigned long long>(result.count));
  } else if (!args.quiet) {
    std::fprintf(stderr, "mgjoin: %llu rows joined (%s) in %.3f s (read %.3f s, write %.3f s) into %s\n",
                 static_cast<unsigned long long>(result.count), join_kind_name(options.how), result.seconds, read_s,
                 write_s, out_dir.c_str());
  }
}

}  // namespace

void add_join_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("join", "equi-join of two tables of column files (.npy or raw): any kind, key or maps");
  auto a = std::make_shared<JoinArgs>();
  auto* r_key = cmd->add_option("--r-key", a->r_key,
                                "R's key: a column file (.npy, or raw with --type); with --r-dir, the key column "
                                "name(s), comma-separated for a composite key (default: key)");
  cmd->add_option("--r-payload", a->r_payload, "R payload column file (optional; not with --r-dir)");
  auto* s_key = cmd->add_option("--s-key", a->s_key, "S's key, as --r-key");
  cmd->add_option("--on", a->on, "the key column name(s) of both tables: --r-key NAME --s-key NAME")
      ->excludes(r_key)
      ->excludes(s_key);
  cmd->add_option("--s-payload", a->s_payload, "S payload column file (optional; not with --s-dir)");
  cmd->add_option("--r", a->r_path,
                  "R's table: a Parquet file, a directory of Parquet files (a dataset; hive-style name=value folders "
                  "read as columns), an Arrow IPC file (.arrow, .feather) or a directory of .npy files");
  cmd->add_option("--s", a->s_path, "S's table, as --r");
  cmd->add_option("--format", a->format,
                  "output files: parquet (part-0.parquet), arrow (part-0.arrow, Arrow IPC) or npy (one file per "
                  "column); default: the inputs' (npy for .npy tables, else parquet)");
  cmd->add_option("--r-dir", a->r_dir,
                  "directory whose .npy files are R's columns, each named by its file stem (mgjoin generate's "
                  "r_key.npy and r_payload.npy read as key and payload)");
  cmd->add_option("--s-dir", a->s_dir, "directory whose .npy files are S's columns, as --r-dir");
  cmd->add_option("--r-columns", a->r_columns, "R's columns in the output, comma-separated (default: all but the key)");
  cmd->add_option("--s-columns", a->s_columns, "S's columns in the output, comma-separated (default: all but the key)");
  cmd->add_option("--how", a->how, "join kind: inner, left, right, full or outer (outer joins), semi or anti (left semi/anti)")
      ->capture_default_str();
  cmd->add_flag("--nulls-equal", a->nulls_equal,
                "null keys match each other (SQL's IS NOT DISTINCT FROM: a composite key's rows match where each "
                "column is equal or null on both sides); default: a null key matches nothing (SQL's =). Nulls come "
                "from Parquet and Arrow IPC tables (.npy tables hold none)");
  cmd->add_option("--gather-on", a->gather_on,
                  "where output columns are gathered by the join's row ids: auto (the CPU threads or the GPUs, by "
                  "a cost model), cpu or gpus")
      ->capture_default_str();
  cmd->add_option("--rank-exchange", a->rank_exchange,
                  "under an MPI launcher, how rows travel between ranks: mpi (host memory), nccl (GPU to GPU), or "
                  "auto (nccl where every rank has a GPU of its own and --gpus is not 0)")
      ->capture_default_str();
  cmd->add_option("--output", a->output,
                  "columns (key.npy, r.<name>.npy, s.<name>.npy, r.valid.npy/s.valid.npy for outer joins), maps "
                  "(r.row.npy, s.row.npy: int64 row indices, -1 where missing) or count (default: columns)");
  cmd->add_option("--type", a->type, "element type of raw (non-.npy) files: int8 ... uint64, float32, float64, bool");
  cmd->add_option("--r-type", a->r_type, "element type of R's raw files (overrides --type)");
  cmd->add_option("--s-type", a->s_type, "element type of S's raw files (overrides --type)");
  cmd->add_option("--r-payload-type", a->r_payload_type, "element type of a raw R payload file");
  cmd->add_option("--s-payload-type", a->s_payload_type, "element type of a raw S payload file");
  cmd->add_option("--out-dir", a->out_dir,
                  "write the output files here (created if missing; refused if it holds a table, unless --overwrite)");
  cmd->add_flag("--overwrite", a->overwrite,
                "replace the table (.npy files, or manifest.json and part-N folders) an earlier run left in --out-dir");
  cmd->add_flag("--count", a->count_only, "print only the number of output rows (--output count)");
  cmd->add_flag("--json", a->json,
                "print a JSON summary (count, seconds, executor, phases, output files); errors as {\"error\": ...}");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress bar and no summary lines on stderr (errors still print)");
  a->engine.add_to(*cmd);
  cmd->callback([a] { run_join(*a); });
}

}  // namespace mgjoin::cli
