// `mgjoin bench`: generates a workload straight into (pinned) host memory, joins it --repeat times after
// --warmup runs on one engine (resources made once), and reports the median per phase, the bytes over
// PCIe and NVLink, the throughput and the time over the PCIe floor. Count-only by default, as in the
// paper's Section 4.1.2.
#include "commands.hpp"
#include "bench_tables.hpp"
#include "engine_options.hpp"
#include "interrupt.hpp"

#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/generate.hpp>
#include <mgjoin/join.hpp>
#include <mgjoin/table.hpp>

#include "benchmarks/pcie_rate.hpp"
#include "alloc/host_memory.hpp"
#include "alloc/stack_set.hpp"
#include "host_merge/parallel_copy.hpp"
#include "core/device.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mgjoin::cli {
namespace {

/// Default aggregate host-to-device bandwidth: DEVICE.md's 55.4 GB/s per GPU, 204.8 GB/s for four.
double default_h2d_gbps(int gpus) { return gpus <= 0 ? 0 : std::min(55.4 * gpus, 204.8); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

HostColumn copy_of(const HostColumn& c) {
  HostColumn out = HostColumn::allocate(c.type(), c.size(), MemoryKind::Pageable);
  host_merge::parallel_copy(out.data(), c.data(), c.bytes());
  return out;
}

/// How each run finds its inputs unsorted: the paper flow and the CPU path sort them in place (the
/// co-partitioned flow leaves them untouched, and then nothing is restored). Pageable copies of the
/// generated relations are copied back when the host has room for them beside the join; otherwise the
/// generator writes the relations again (untimed; slower, but it takes no memory). A single run (no
/// warm-up, --repeat 1, no --verify) restores nothing.
class Pristine {
 public:
  Pristine(const WorkloadSpec& spec, const GeneratedWorkload& w, bool needed) : spec_(spec), needed_(needed) {
    if (!needed) return;
    const HostColumn* columns[] = {&w.r.key, &*w.r.payload, &w.s.key, &*w.s.payload};
    std::uint64_t inputs = 0;
    for (const HostColumn* c : columns) inputs += c->bytes();
    // Beside the copies, the paper flow's merge buffers may take the larger relation again.
    const std::uint64_t merge = std::max(w.r.key.bytes() + w.r.payload->bytes(), w.s.key.bytes() + w.s.payload->bytes());
    try {
      alloc::expect_host_memory(inputs + merge, "copies of the generated inputs, beside the join's merge buffers");
    } catch (const OutOfMemory& e) {
      std::fprintf(stderr, "mgjoin bench: runs regenerate their inputs (untimed) instead of copying them back: %s\n",
                   e.what());
      return;
    }
    for (const HostColumn* c : columns) copies_.push_back(copy_of(*c));
  }

  /// Whether restore() can put the inputs back (else they must not be written).
  bool can_restore() const { return needed_; }

  /// Records that the inputs were written: by a run of `strategy`, or by something else (nullopt).
  void written(std::optional<JoinStrategy> strategy = std::nullopt) {
    dirty_ = dirty_ || strategy != JoinStrategy::CoPartitioned;
  }

  /// Puts the unsorted inputs back when something wrote them.
  void restore(GeneratedWorkload& w) {
    if (!dirty_) return;
    MGJOIN_EXPECTS(needed_, "the bench's inputs were written but cannot be restored");
    if (copies_.empty()) {
      generate_workload_into(spec_, w.r.view(), w.s.view());
    } else {
      HostColumn* to[] = {&w.r.key, &*w.r.payload, &w.s.key, &*w.s.payload};
      for (std::size_t i = 0; i < copies_.size(); ++i)
        host_merge::parallel_copy(to[i]->data(), copies_[i].data(), copies_[i].bytes());
    }
    dirty_ = false;
  }

 private:
  WorkloadSpec spec_;
  bool needed_;
  std::vector<HostColumn> copies_;
  bool dirty_ = false;
};

struct BenchArgs {
  WorkloadOptions workload;
  EngineFlags engine;
  int repeat = 3;
  int warmup = 1;
  std::string output = "count";
  bool verify = false;
  bool json = false;
  double h2d_gbps = 0;
  // Tables (join_tables): any of these makes the runs go through it.
  int columns = 1;
  std::string how = "inner", materialization, gather_on = "auto";
  bool tables = false;
  bool through_tables() const {
    return tables || columns != 1 || how != "inner" || !materialization.empty() || gather_on != "auto";
  }
};

struct Summary {
  std::vector<JoinResult> runs;
  std::uint64_t cpu_count = 0;
  bool verified = false;
  int gpus = 0;  ///< size of the engine's GPU set; 0 for the CPU path
  double h2d_gbps = 0, d2h_gbps = 0;  ///< measured in this run, all GPUs of the set at once; 0 = not measured
  std::uint64_t output_bytes = 0;     ///< of the materialized columns of a run
  GatherFloor gather_floor;           ///< tables, materialized: a plain gather of the output's rows and columns
  std::string materialization;        ///< tables: "late" or "carried"
  std::string gathers;                ///< tables, late: where the payload columns were gathered, and why
};

/// One run: join() on the relations, or join_tables() on the tables built from them (whose runs leave
/// the inputs untouched). The JoinResult is the one the report reads.
JoinResult run_once(const JoinOptions& options, const TableJoinOptions* table_options, Engine* engine,
                    GeneratedWorkload& w, const std::optional<BenchTables>& tables, Summary& sum) {
  if (!tables) return engine ? engine->join(w.r.view(), w.s.view(), options) : join(w.r.view(), w.s.view(), options);
  const TableJoinOptions& to = *table_options;
  TableJoinResult t = engine ? join_tables(*engine, tables->left, tables->right, to)
                             : join_tables(tables->left, tables->right, to);
  JoinResult res = std::move(t.join);
  res.seconds = t.seconds;
  res.count = t.count;
  sum.materialization = t.materialization;
  sum.gathers = t.gathers;
  std::uint64_t bytes = 0;
  for (const NamedColumn& c : t.columns) bytes += c.column.bytes();
  sum.output_bytes = bytes;
  return res;
}

/// Host-to-device and device-to-host rates of all the engine's GPUs at once, measured before the joins
/// with up to 1 GiB per GPU out of (and, for D2H, into) the generated pinned input, which the runs
/// restore before they start. Zero where the GPUs have no room left beside the engine's stacks.
void measure_pcie(const Engine& engine, GeneratedWorkload& w, Pristine& pristine, Summary& sum) {
  const std::vector<int>& devices = engine.devices();
  const std::uint64_t per_gpu = std::min<std::uint64_t>(1ull << 30, w.s.key.bytes() / devices.size()) & ~std::uint64_t{4095};
  if (per_gpu == 0) return;
  try {
    alloc::StackSet<alloc::DeviceStackAllocator> stacks;
    for (const int d : devices) stacks.add(d, per_gpu);
    auto* host = static_cast<std::byte*>(w.s.key.data());
    sum.h2d_gbps = per_gpu * devices.size() / bench::measured_copy_seconds(devices, host, per_gpu, stacks.view(),
                                                                          cudaMemcpyHostToDevice) / 1e9;
    if (pristine.can_restore()) {
      pristine.written();
      sum.d2h_gbps = per_gpu * devices.size() / bench::measured_copy_seconds(devices, host, per_gpu, stacks.view(),
                                                                            cudaMemcpyDeviceToHost) / 1e9;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "mgjoin bench: PCIe rates not measured (%s); the floor uses the assumed rate\n", e.what());
  }
}

/// `table_options`: set when the runs go through join_tables (BenchArgs::through_tables).
Summary run_bench(BenchArgs& a, const JoinOptions& options, const std::optional<TableJoinOptions>& table_options,
                  bool use_gpus, GeneratedWorkload& w, Pristine& pristine) {
  Summary sum;
  std::unique_ptr<Engine> engine;
  if (use_gpus) {
    engine = std::make_unique<Engine>(options);
    sum.gpus = static_cast<int>(engine->devices().size());
    if (a.h2d_gbps <= 0) measure_pcie(*engine, w, pristine, sum);
  }
  std::optional<BenchTables> tables;
  if (table_options) tables = bench_tables(w, a.columns);
  for (int i = 0; i < a.warmup + a.repeat; ++i) {
    pristine.restore(w);
    JoinResult res = run_once(options, table_options ? &*table_options : nullptr, engine.get(), w, tables, sum);
    if (!tables) pristine.written(res.strategy);
    if (!a.json)
      std::fprintf(stderr, "mgjoin bench: %s run %d: %.4f s, %llu matches\n", i < a.warmup ? "warm-up" : "timed",
                   i < a.warmup ? i + 1 : i - a.warmup + 1, res.seconds, static_cast<unsigned long long>(res.count));
    // Only the figures are kept: the output columns go back now, so that the next run finds their
    // pinned memory in the cache as a program joining repeatedly would.
    if (!tables) sum.output_bytes = res.key.bytes() + res.r_payload.bytes() + res.s_payload.bytes();
    res.key = HostColumn();
    res.r_payload = HostColumn();
    res.s_payload = HostColumn();
    if (i >= a.warmup) sum.runs.push_back(std::move(res));
  }
  if (tables && a.output == "materialize")
    sum.gather_floor = gather_floor_seconds(engine.get(), *tables, *table_options);
  if (a.verify) {
    pristine.restore(w);
    JoinOptions cpu = options;
    cpu.gpus = 0;
    cpu.gpu_ids.clear();
    cpu.output = OutputMode::Count;
    cpu.progress = {};
    sum.cpu_count = join(w.r.view(), w.s.view(), cpu).count;
    sum.verified = true;
    for (const auto& r : sum.runs)
      MGJOIN_EXPECTS(r.count == sum.cpu_count, "--verify: the join found " + std::to_string(r.count) +
                                                   " matches but the CPU path found " + std::to_string(sum.cpu_count));
  }
  return sum;
}

/// What the report says of the runs: medians, bytes moved and the floors they are measured against.
struct Figures {
  double total = 0;                    ///< median seconds of a run
  std::vector<std::string> order;      ///< phases in the order the engine reported them
  std::map<std::string, double> phase_seconds;  ///< each phase's median over the runs
  std::map<std::string, std::uint64_t> pcie, nvlink;
  std::uint64_t bytes_pcie = 0, bytes_nvlink = 0;
  const char* rate_kind = "assumed";   ///< where the H2D rate came from: given, measured or assumed
  double h2d = 0, floor = 0, keys_floor = 0, output_bytes = 0, output_floor = 0, tuples = 0;
};

Figures figures_of(const BenchArgs& a, const WorkloadShape& shape, const Summary& sum) {
  Figures f;
  std::vector<double> totals;
  for (const auto& r : sum.runs) totals.push_back(r.seconds);
  f.total = median(totals);
  std::map<std::string, std::vector<double>> secs;
  for (const auto& r : sum.runs)
    for (const auto& p : r.phases) {
      if (!secs.count(p.name)) f.order.push_back(p.name);
      secs[p.name].push_back(p.seconds);
      f.pcie[p.name] = p.bytes_pcie;
      f.nvlink[p.name] = p.bytes_nvlink;
    }
  for (const auto& n : f.order) {
    f.phase_seconds[n] = median(secs[n]);
    if (n.ends_with(".total")) continue;  // a phase's own total repeats its parts' bytes
    f.bytes_pcie += f.pcie[n];
    f.bytes_nvlink += f.nvlink[n];
  }
  const double input_bytes = static_cast<double>(shape.bytes());
  const double key_bytes = static_cast<double>((shape.r_rows + shape.s_rows) * dtype_size(shape.key_type));
  f.rate_kind = a.h2d_gbps > 0 ? "given" : sum.h2d_gbps > 0 ? "measured" : "assumed";
  f.h2d = a.h2d_gbps > 0 ? a.h2d_gbps : sum.h2d_gbps > 0 ? sum.h2d_gbps : default_h2d_gbps(sum.gpus);
  f.floor = f.h2d > 0 ? input_bytes / (f.h2d * 1e9) : 0;
  f.keys_floor = f.h2d > 0 ? key_bytes / (f.h2d * 1e9) : 0;
  f.output_bytes = static_cast<double>(sum.output_bytes);
  f.output_floor = sum.d2h_gbps > 0 ? f.output_bytes / (sum.d2h_gbps * 1e9) : 0;
  f.tuples = static_cast<double>(shape.r_rows + shape.s_rows);
  return f;
}

void report_json(const BenchArgs& a, const WorkloadShape& shape, const Summary& sum, const Figures& f) {
  const auto& last = sum.runs.back();
  nlohmann::json j;
  j["workload"] = a.workload.workload;
  j["scale"] = a.workload.spec.scale;
  j["selectivity"] = a.workload.spec.selectivity;
  j["zipf"] = a.workload.spec.zipf;
  j["seed"] = a.workload.spec.seed;
  j["r_rows"] = shape.r_rows;
  j["s_rows"] = shape.s_rows;
  j["executor"] = last.executor;
  j["count"] = last.count;
  j["repeat"] = a.repeat;
  j["median_seconds"] = f.total;
  j["run_seconds"] = nlohmann::json::array();
  for (const auto& r : sum.runs) j["run_seconds"].push_back(r.seconds);
  j["throughput_tuples_per_s"] = f.tuples / f.total;
  j["bytes_pcie"] = f.bytes_pcie;
  j["bytes_nvlink"] = f.bytes_nvlink;
  j["pcie_floor_seconds"] = f.floor;
  j["pcie_floor_keys_seconds"] = f.keys_floor;
  j["h2d_gbps"] = f.h2d;
  j["h2d_gbps_source"] = f.rate_kind;
  j["d2h_gbps_measured"] = sum.d2h_gbps;
  j["output_bytes"] = f.output_bytes;
  j["output_d2h_floor_seconds"] = f.output_floor;
  j["strategy"] = strategy_name(last.strategy);
  j["strategy_reason"] = last.strategy_reason;
  if (a.through_tables()) {
    j["tables"] = {{"columns", a.columns}, {"how", a.how}, {"materialization", sum.materialization}};
    if (!sum.gathers.empty()) j["tables"]["gathers"] = sum.gathers;
    if (sum.gather_floor.fresh > 0) {
      j["tables"]["gather_floor_seconds"] = sum.gather_floor.fresh;
      j["tables"]["gather_into_touched_memory_seconds"] = sum.gather_floor.touched;
    }
  }
  j["peak_host_bytes"] = last.peak_host_bytes;
  if (sum.verified) j["verified_count"] = sum.cpu_count;
  for (const auto& n : f.order)
    j["phases"].push_back({{"name", n}, {"median_seconds", f.phase_seconds.at(n)}, {"bytes_pcie", f.pcie.at(n)},
                           {"bytes_nvlink", f.nvlink.at(n)}});
  std::printf("%s\n", j.dump(2).c_str());
}

void report_text(const BenchArgs& a, const WorkloadShape& shape, const Summary& sum, const Figures& f) {
  const auto& last = sum.runs.back();
  std::printf("workload %s  scale %g  selectivity %g  zipf %g  seed %llu:  |R| = %lld, |S| = %lld\n",
              a.workload.workload.c_str(), a.workload.spec.scale, a.workload.spec.selectivity, a.workload.spec.zipf,
              static_cast<unsigned long long>(a.workload.spec.seed), static_cast<long long>(shape.r_rows),
              static_cast<long long>(shape.s_rows));
  std::printf("executor  %s\n", last.executor.c_str());
  std::printf("strategy  %s: %s\n", strategy_name(last.strategy), last.strategy_reason.c_str());
  std::printf("%-22s %12s %14s %14s\n", "phase (median)", "seconds", "PCIe GB", "NVLink GB");
  for (const auto& n : f.order)
    std::printf("%-22s %12.4f %14.2f %14.2f\n", n.c_str(), f.phase_seconds.at(n), f.pcie.at(n) / 1e9,
                f.nvlink.at(n) / 1e9);
  std::printf("%-22s %12.4f %14.2f %14.2f\n", "total", f.total, f.bytes_pcie / 1e9, f.bytes_nvlink / 1e9);
  std::printf("matches %llu%s\n", static_cast<unsigned long long>(last.count),
              sum.verified ? " (equal to the CPU path)" : "");
  std::printf("throughput %.3f G tuples/s   ", f.tuples / f.total / 1e9);
  if (f.floor > 0) {
    std::printf("PCIe floor %.4f s (inputs once at the %s %.1f GB/s): %.2fx the floor; keys only %.4f s: %.2fx\n",
                f.floor, f.rate_kind, f.h2d, f.total / f.floor, f.keys_floor, f.total / f.keys_floor);
    if (f.output_floor > 0)
      std::printf("output D2H floor %.4f s (%.2f GB at the measured %.1f GB/s)\n", f.output_floor, f.output_bytes / 1e9,
                  sum.d2h_gbps);
  } else
    std::printf("(CPU path: no PCIe floor)\n");
  if (sum.gather_floor.fresh > 0 && f.phase_seconds.count("table.gather")) {
    const double gather = f.phase_seconds.at("table.gather");
    std::printf("tables (%d columns a side, %s, %s): table.gather %.4f s; gather floor %.4f s (the same rows and "
                "columns, one plain parallel gather into new columns): %.2fx it; into memory already touched %.4f "
                "s: %.2fx\n",
                a.columns, a.how.c_str(), sum.materialization.c_str(), gather, sum.gather_floor.fresh,
                gather / sum.gather_floor.fresh, sum.gather_floor.touched, gather / sum.gather_floor.touched);
    if (!sum.gathers.empty()) std::printf("%s\n", sum.gathers.c_str());
  }
}

void report(const BenchArgs& a, const WorkloadShape& shape, const Summary& sum) {
  const Figures f = figures_of(a, shape, sum);
  if (a.json)
    report_json(a, shape, sum, f);
  else
    report_text(a, shape, sum, f);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "generate a workload in memory and time the join (median of --repeat)");
  args->workload.add_to(*cmd);
  args->engine.add_to(*cmd);
  cmd->add_option("--repeat", args->repeat, "timed runs")->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "untimed runs first")->capture_default_str();
  cmd->add_option("--output", args->output, "count, ranges or materialize")->capture_default_str();
  cmd->add_flag("--verify", args->verify, "check the match count against the CPU path");
  cmd->add_flag("--json", args->json, "print the summary as JSON");
  cmd->add_option("--columns", args->columns,
                  "payload columns per side (8-byte p0, p1, ...); other than 1, the runs join tables (join_tables)")
      ->capture_default_str();
  cmd->add_option("--how", args->how, "join kind of the table runs: inner, left, right, full, semi or anti")
      ->capture_default_str();
  cmd->add_option("--materialization", args->materialization,
                  "table runs: late (row ids, gathered at the end), carry (payloads through the flow) or auto");
  cmd->add_option("--gather-on", args->gather_on,
                  "table runs, late materialization: where payload columns are gathered: auto (the cost model), cpu "
                  "or gpus")
      ->capture_default_str();
  cmd->add_flag("--tables", args->tables, "join through join_tables even with one payload column per side");
  cmd->add_option("--h2d-gbps", args->h2d_gbps,
                  "host-to-device GB/s of the PCIe floor (default: measured before the runs, all GPUs at once)");
  cmd->callback([args] {
    BenchArgs& a = *args;
    const WorkloadSpec& spec = a.workload.finish();
    install_interrupt_handler();
    MGJOIN_INPUT_EXPECTS(a.repeat >= 1, "--repeat " + std::to_string(a.repeat) + ": must be at least 1");
    MGJOIN_INPUT_EXPECTS(a.warmup >= 0, "--warmup " + std::to_string(a.warmup) + ": must be 0 or more");
    MGJOIN_INPUT_EXPECTS(!a.verify || a.how == "inner", "--verify checks inner joins only (the CPU path's count)");
    MGJOIN_INPUT_EXPECTS(std::isfinite(a.h2d_gbps) && a.h2d_gbps >= 0,
                         "--h2d-gbps " + number_text(a.h2d_gbps) + ": must be a rate in GB/s (or 0: measure it)");
    static const std::map<std::string, OutputMode> outputs{
        {"count", OutputMode::Count}, {"ranges", OutputMode::Ranges}, {"materialize", OutputMode::Materialize}};
    const auto out = outputs.find(a.output);
    MGJOIN_INPUT_EXPECTS(out != outputs.end(), "--output " + a.output + ": expected count, ranges or materialize");
    JoinOptions options;
    a.engine.apply(options);
    options.output = out->second;
    options.progress = with_test_interrupt({});  // the timed runs draw nothing
    options.cancel = &interrupt_flag();
    // The table options are checked here, before gigabytes are generated.
    std::optional<TableJoinOptions> table_options;
    if (a.through_tables()) {
      MGJOIN_INPUT_EXPECTS(a.columns >= 1 && a.columns <= 64, "--columns " + std::to_string(a.columns) + ": expected 1 to 64");
      table_options = bench_table_options(options, a.how, a.output, a.materialization, a.gather_on);
    }

    const WorkloadShape shape = workload_shape(spec);
    // A run over no rows times nothing, and its throughput would be 0/0.
    MGJOIN_INPUT_EXPECTS(shape.r_rows > 0 && shape.s_rows > 0,
                         "--scale " + number_text(spec.scale) + ": gives an empty relation; bench needs rows to join");
    const bool use_gpus = (options.gpus != 0 || !options.gpu_ids.empty()) && gpu::device_count() > 0;
    ProgressBar bar(progress_wanted(a.json));
    GeneratedWorkload w = a.workload.generate(use_gpus ? MemoryKind::Pinned : MemoryKind::Pageable,
                                              with_test_interrupt(bar.callback()));
    bar.clear();
    Pristine pristine(spec, w, a.warmup + a.repeat > 1 || a.verify);
    report(a, shape, run_bench(a, options, table_options, use_gpus, w, pristine));
  });
}

}  // namespace mgjoin::cli
