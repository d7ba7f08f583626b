// `mgjoin join`: reads R and S from column files, joins them (GPUs or the CPU path), and writes
// key.npy r_payload.npy s_payload.npy or prints the number of matches.
#include "cli_options.hpp"
#include "commands.hpp"
#include "engine_options.hpp"
#include "interrupt.hpp"

#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>
#include <mgjoin/join.hpp>

#include "core/device.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mgjoin::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct JoinArgs {
  std::string r_key, r_payload, s_key, s_payload, r_dir, s_dir, out_dir;
  std::string type, r_type, s_type, r_payload_type, s_payload_type;
  bool count_only = false, json = false;
  EngineFlags engine;  // --gpus --gpu-ids --sort --exchange --gpu-memory-limit --tuning-file
};

/// One input column: the option that named it (for messages), its path and its raw dtype if given.
struct ColumnSource {
  std::string option;
  fs::path path;
  std::optional<DType> raw_type;
  std::string type_options;  // which options set raw_type, for the "needs a type" message
  ColumnFileInfo info;
};

struct RelationSource {
  ColumnSource key;
  std::optional<ColumnSource> payload;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::optional<DType> parse_type_option(const std::string& value, const char* option) {
  if (value.empty()) return std::nullopt;
  const auto type = parse_dtype(value);
  MGJOIN_INPUT_EXPECTS(type.has_value(), std::string(option) + " " + value +
                                             ": unknown type (expected int32, uint32, int64, uint64, float32 or float64)");
  return type;
}

/// The first of `types` that is set (most specific first).
std::optional<DType> first_of(std::initializer_list<std::optional<DType>> types) {
  for (const auto& t : types)
    if (t) return t;
  return std::nullopt;
}

/// --r-key/--r-payload, or --r-dir holding key.npy [payload.npy] or r_key.npy [r_payload.npy].
RelationSource resolve_relation(char side, const std::string& key, const std::string& payload, const std::string& dir,
                                std::optional<DType> key_type, std::optional<DType> payload_type) {
  const std::string s(1, side);
  const std::string key_opt = "--" + s + "-key", payload_opt = "--" + s + "-payload", dir_opt = "--" + s + "-dir";
  const std::string types = "--" + s + "-type or --type";
  const std::string payload_types = "--" + s + "-payload-type, " + types;
  MGJOIN_INPUT_EXPECTS(!(dir.empty() && key.empty()), key_opt + " or " + dir_opt + " is required");
  MGJOIN_INPUT_EXPECTS(dir.empty() || (key.empty() && payload.empty()),
                       dir_opt + " excludes " + key_opt + " and " + payload_opt);
  RelationSource rel;
  if (!dir.empty()) {
    const fs::path d = dir;
    MGJOIN_INPUT_EXPECTS(fs::is_directory(d), dir_opt + " " + dir + ": no such directory");
    const bool plain = fs::exists(d / "key.npy");
    const std::string prefix = plain ? "" : s + "_";
    MGJOIN_INPUT_EXPECTS(plain || fs::exists(d / (prefix + "key.npy")),
                         dir_opt + " " + dir + ": holds neither key.npy nor " + prefix + "key.npy");
    rel.key = {dir_opt, d / (prefix + "key.npy"), std::nullopt, types, {}};
    if (fs::exists(d / (prefix + "payload.npy")))
      rel.payload = ColumnSource{dir_opt, d / (prefix + "payload.npy"), std::nullopt, payload_types, {}};
    return rel;
  }
  rel.key = {key_opt, key, key_type, types, {}};
  if (!payload.empty()) rel.payload = ColumnSource{payload_opt, payload, payload_type, payload_types, {}};
  return rel;
}

/// Checks the file (header, dtype, size) without reading its data; messages start with the option.
void inspect(ColumnSource& column) {
  const std::string name = column.option + " " + column.path.string();
  MGJOIN_INPUT_EXPECTS(file_format_of(column.path) == FileFormat::Npy || column.raw_type,
                       name + ": raw file (not .npy) needs its type: give " + column.type_options);
  try {
    column.info = inspect_column_file(column.path, column.raw_type);
  } catch (const InputError& e) {
    throw InputError(column.option + " " + e.what());
  }
}

void check_relation(RelationSource& rel) {
  inspect(rel.key);
  MGJOIN_INPUT_EXPECTS(is_key_dtype(rel.key.info.type),
                       rel.key.option + " " + rel.key.path.string() + ": " + std::string(dtype_name(rel.key.info.type)) +
                           " is not a key type (keys: int32, uint32, int64, uint64)");
  if (!rel.payload) return;
  inspect(*rel.payload);
  MGJOIN_INPUT_EXPECTS(rel.payload->info.size == rel.key.info.size,
                       rel.payload->option + " " + rel.payload->path.string() + ": " +
                           std::to_string(rel.payload->info.size) + " rows, but the key file " +
                           rel.key.path.string() + " has " + std::to_string(rel.key.info.size));
}

Relation read_relation(const RelationSource& src, MemoryKind memory) {
  Relation rel{read_column(src.key.path, src.key.raw_type, memory), std::nullopt};
  if (src.payload) rel.payload = read_column(src.payload->path, src.payload->raw_type, memory);
  return rel;
}

JoinOptions join_options(const JoinArgs& args) {
  JoinOptions o;
  args.engine.apply(o);
  for (const int id : o.gpu_ids)
    MGJOIN_INPUT_EXPECTS(id >= 0, "--gpu-ids: GPU id " + std::to_string(id) + " is negative");
  o.output = args.count_only ? OutputMode::Count : OutputMode::Materialize;
  o.progress = with_test_interrupt(terminal_progress());
  o.cancel = &interrupt_flag();
  return o;
}

/// Stages key.npy and the payload files whose inputs exist, then renames them all at once.
std::vector<std::string> write_outputs(const fs::path& dir, const JoinResult& result, bool r_payload, bool s_payload) {
  std::vector<StagedColumnFile> files;
  files.push_back(stage_column(dir / "key.npy", result.key.view()));
  if (r_payload) files.push_back(stage_column(dir / "r_payload.npy", result.r_payload.view()));
  if (s_payload) files.push_back(stage_column(dir / "s_payload.npy", result.s_payload.view()));
  throw_if_interrupted();  // the staged files are removed as they go out of scope
  commit_all(files);
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.final_path().string());
  return names;
}

nlohmann::json summary(const JoinResult& result, const Relation& r, const Relation& s, double read_s, double write_s,
                       const std::vector<std::string>& outputs) {
  nlohmann::json phases = nlohmann::json::array();
  for (const PhaseStat& p : result.phases)
    phases.push_back({{"name", p.name}, {"seconds", p.seconds}, {"bytes_pcie", p.bytes_pcie},
                      {"bytes_nvlink", p.bytes_nvlink}});
  return {{"count", result.count},
          {"seconds", result.seconds},
          {"executor", result.executor},
          {"strategy", strategy_name(result.strategy)},
          {"strategy_reason", result.strategy_reason},
          {"phases", phases},
          {"r_rows", r.size()},
          {"s_rows", s.size()},
          {"key_type", std::string(dtype_name(r.key.type()))},
          {"read_seconds", read_s},
          {"write_seconds", write_s},
          {"peak_host_bytes", result.peak_host_bytes},
          {"output_files", outputs}};
}

void run_join(const JoinArgs& args) {
  MGJOIN_INPUT_EXPECTS(args.count_only || !args.out_dir.empty(),
                       "one of --out-dir (write the joined columns) or --count (print the number of matches) is required");
  MGJOIN_INPUT_EXPECTS(!(args.count_only && !args.out_dir.empty()), "--count and --out-dir exclude each other");
  JoinOptions options = join_options(args);
  const auto type = parse_type_option(args.type, "--type");
  const auto r_type = parse_type_option(args.r_type, "--r-type");
  const auto s_type = parse_type_option(args.s_type, "--s-type");
  const auto r_payload_type = parse_type_option(args.r_payload_type, "--r-payload-type");
  const auto s_payload_type = parse_type_option(args.s_payload_type, "--s-payload-type");

  // Everything that can be checked cheaply is checked before reading gigabytes.
  RelationSource r_src = resolve_relation('r', args.r_key, args.r_payload, args.r_dir, first_of({r_type, type}),
                                          first_of({r_payload_type, r_type, type}));
  RelationSource s_src = resolve_relation('s', args.s_key, args.s_payload, args.s_dir, first_of({s_type, type}),
                                          first_of({s_payload_type, s_type, type}));
  check_relation(r_src);
  check_relation(s_src);
  MGJOIN_INPUT_EXPECTS(r_src.key.info.type == s_src.key.info.type,
                       "key types differ: " + r_src.key.path.string() + " is " +
                           std::string(dtype_name(r_src.key.info.type)) + ", " + s_src.key.path.string() + " is " +
                           std::string(dtype_name(s_src.key.info.type)));
  const fs::path out_dir = args.out_dir;
  if (!args.count_only) prepare_output_directory(out_dir, "--out-dir");

  // Pinned host memory lets the GPUs copy at full PCIe speed; the CPU path needs none.
  const bool gpus_used = args.engine.gpus != 0 && gpu::device_count() > 0;
  const MemoryKind memory = gpus_used ? MemoryKind::Pinned : MemoryKind::Pageable;
  const auto t_read = Clock::now();
  Relation r = read_relation(r_src, memory);
  Relation s = read_relation(s_src, memory);
  const double read_s = seconds_since(t_read);
  throw_if_interrupted();

  const JoinResult result = join(r.view(), s.view(), options);
  std::fprintf(stderr, "mgjoin: executor: %s%s\n", result.executor.c_str(),
               args.engine.gpus < 0 && !gpus_used ? " (no CUDA GPU found, so the CPU path ran)" : "");
  if (gpus_used) std::fprintf(stderr, "mgjoin: strategy: %s\n", result.strategy_reason.c_str());

  std::vector<std::string> outputs;
  const auto t_write = Clock::now();
  if (!args.count_only) outputs = write_outputs(out_dir, result, r.payload.has_value(), s.payload.has_value());
  const double write_s = seconds_since(t_write);

  if (args.json) {
    std::printf("%s\n", summary(result, r, s, read_s, write_s, outputs).dump(2).c_str());
  } else if (args.count_only) {
    std::printf("%llu\n", static_cast<unsigned long long>(result.count));
  } else {
    std::fprintf(stderr, "mgjoin: %llu rows joined in %.3f s (read %.3f s, write %.3f s) into %s\n",
                 static_cast<unsigned long long>(result.count), result.seconds, read_s, write_s, out_dir.c_str());
  }
}

}  // namespace

void add_join_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("join", "inner equi-join of R and S column files (.npy or raw)");
  auto a = std::make_shared<JoinArgs>();
  cmd->add_option("--r-key", a->r_key, "R key column file (.npy, or raw with --type)");
  cmd->add_option("--r-payload", a->r_payload, "R payload column file (optional)");
  cmd->add_option("--s-key", a->s_key, "S key column file");
  cmd->add_option("--s-payload", a->s_payload, "S payload column file (optional)");
  cmd->add_option("--r-dir", a->r_dir, "directory with key.npy [payload.npy] or r_key.npy [r_payload.npy]");
  cmd->add_option("--s-dir", a->s_dir, "directory with key.npy [payload.npy] or s_key.npy [s_payload.npy]");
  cmd->add_option("--type", a->type, "element type of raw (non-.npy) files: int32 uint32 int64 uint64 float32 float64");
  cmd->add_option("--r-type", a->r_type, "element type of R's raw files (overrides --type)");
  cmd->add_option("--s-type", a->s_type, "element type of S's raw files (overrides --type)");
  cmd->add_option("--r-payload-type", a->r_payload_type, "element type of a raw R payload file");
  cmd->add_option("--s-payload-type", a->s_payload_type, "element type of a raw S payload file");
  cmd->add_option("--out-dir", a->out_dir, "write key.npy r_payload.npy s_payload.npy here");
  cmd->add_flag("--count", a->count_only, "print only the number of matches");
  cmd->add_flag("--json", a->json, "print a JSON summary (count, seconds, executor, phases, output files)");
  a->engine.add_to(*cmd);
  cmd->callback([a] { run_join(*a); });
}

}  // namespace mgjoin::cli
