// `mgjoin tune`: measures this machine's transfers once and writes the tuning file from which the
// engine takes the GPU set, sort strategy and data flow for `--gpus N` (topology/tuning_file.hpp).
#include "commands.hpp"

#include "topology/bandwidth.hpp"
#include "host_rates.hpp"
#include "topology/gpu_set.hpp"
#include "topology/log.hpp"
#include "topology/topology.hpp"
#include "topology/tune.hpp"
#include "topology/tuning_file.hpp"

#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/generate.hpp>

#include "host_merge/parallel_copy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace mgjoin::cli {

namespace {

struct TuneArgs {
  std::string out;            ///< empty: topology::default_tuning_path()
  std::size_t mib = 256;      ///< bytes per copy, MiB
  int repeats = 5;
  double join_scale = 0.25;   ///< workload B scale of the timed joins (big enough that fixed costs do not decide); 0 = transfers only
  bool verbose = false;
};

void progress(const std::string& line) { std::fprintf(stderr, "mgjoin tune: %s\n", line.c_str()); }

/// Times a count-only join of workload B at `scale` on a GPU set with a strategy: median of 3 after a
/// warm-up, each run on the same unsorted inputs (restored from a copy, untimed). A strategy that
/// cannot run on the set (merge on a g that is not a power of two) gets +inf: it is never chosen.
topology::JoinTimer join_timer(double scale) {
  if (scale <= 0) return nullptr;
  struct Data {
    GeneratedWorkload w;
    std::vector<std::vector<char>> pristine;
    std::vector<HostColumn*> columns() { return {&w.r.key, &*w.r.payload, &w.s.key, &*w.s.payload}; }
  };
  auto data = std::make_shared<Data>();
  data->w = generate_workload({.workload = Workload::B, .scale = scale, .seed = 7}, MemoryKind::Pinned);
  for (HostColumn* c : data->columns()) {
    const auto* p = static_cast<const char*>(c->data());
    data->pristine.emplace_back(p, p + c->bytes());
  }
  return [data](const std::vector<int>& set, const std::string& strategy) {
    const bool merge = strategy == "merge";
    if (merge && !sort_strategy_supported(SortStrategy::Merge, static_cast<int>(set.size()))) return std::numeric_limits<double>::infinity();
    JoinOptions options;
    options.gpu_ids = set;
    options.sort = merge ? SortStrategy::Merge : SortStrategy::Radix;
    options.strategy = strategy == "copart" ? JoinStrategy::CoPartitioned : JoinStrategy::Paper;
    options.output = OutputMode::Count;
    Engine engine(options);
    std::vector<double> seconds;
    for (int run = 0; run < 4; ++run) {
      const auto columns = data->columns();
      for (std::size_t i = 0; i < columns.size(); ++i)
        host_merge::parallel_copy(columns[i]->data(), data->pristine[i].data(), data->pristine[i].size());
      const double s = engine.join(data->w.r.view(), data->w.s.view(), options).seconds;
      if (run > 0) seconds.push_back(s);
    }
    std::sort(seconds.begin(), seconds.end());
    return seconds[seconds.size() / 2];
  };
}

/// Times the co-partitioned flow on each best set and keeps the faster flow (a set where it does not
/// fit keeps the paper flow).
void time_flows(topology::TuningFile& tuning, const topology::JoinTimer& time_join) {
  for (auto& c : tuning.best) {
    try {
      c.copart_seconds = time_join(c.gpus, "copart");
    } catch (const InputError& e) {
      progress("g=" + std::to_string(c.g) + " copart: " + e.what());
    }
    c.flow = c.copart_seconds && (!c.seconds || *c.copart_seconds <= *c.seconds) ? "copart" : "paper";
    progress("g=" + std::to_string(c.g) + " " + topology::set_string(c.gpus) + " copart: " +
             (c.copart_seconds ? std::to_string(*c.copart_seconds) + " s" : std::string("does not fit")) + " -> " +
             c.flow);
  }
}

void run_tune(const TuneArgs& a) {
  // CLI::Range lets nan through (every comparison with nan is false).
  MGJOIN_INPUT_EXPECTS(!std::isnan(a.join_scale), "--join-scale nan: must be a number from 0 to 10");
  topology::set_verbose(a.verbose || topology::verbose());
  const topology::Topology t = topology::probe_topology();
  if (t.gpu_count() == 0) throw Error("no CUDA GPUs found: nothing to tune");
  progress("measuring " + std::to_string(t.gpu_count()) + " GPU(s), " + std::to_string(a.mib) + " MiB per copy, median of " +
           std::to_string(a.repeats));

  topology::BandwidthOptions bw;
  bw.bytes = a.mib << 20;
  bw.repeats = a.repeats;
  bw.progress = progress;
  auto measured = topology::measure_bandwidths(t, bw);
  // The cost model's host rates (engine/src/plan/cost_model.hpp): copies, the CPU merge and a random gather over 1 GiB.
  measured.host_memcpy = measure_host_memcpy_gbps(std::size_t{1} << 30, a.repeats);
  progress("host memcpy: " + std::to_string(measured.host_memcpy) + " GB/s");
  measured.cpu_merge = measure_cpu_merge_gbps(std::size_t{1} << 30, a.repeats);
  progress("CPU merge: " + std::to_string(measured.cpu_merge) + " GB/s");
  measured.cpu_gather = measure_cpu_gather_gbps(std::size_t{1} << 30, a.repeats);
  progress("CPU gather: " + std::to_string(measured.cpu_gather) + " GB/s");

  topology::TuneOptions opt;
  if (a.join_scale > 0) progress("timing joins of workload B at scale " + std::to_string(a.join_scale) +
                                  " on the best candidate sets: paper flow (radix and merge sorts), then the"
                                  " co-partitioned flow");
  opt.time_join = join_timer(a.join_scale);
  opt.progress = progress;
  auto tuning = topology::make_tuning(t, measured, opt);
  if (opt.time_join) time_flows(tuning, opt.time_join);
  const std::string path = a.out.empty() ? topology::default_tuning_path() : a.out;
  topology::write_tuning_file(tuning, path);

  for (const auto& c : tuning.best)
    std::printf("g=%-3d %-20s %-6s %s\n", c.g, topology::set_string(c.gpus).c_str(), c.strategy.c_str(), c.flow.c_str());
  std::printf("wrote %s\n", path.c_str());
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto args = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand("tune", "Measure this machine's transfers and write the tuning file");
  cmd->add_option("--out", args->out, "Tuning file to write (default: $XDG_CACHE_HOME or ~/.cache, mgjoin/tuning.json)");
  cmd->add_option("--mib", args->mib, "MiB per measured copy")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  cmd->add_option("--repeats", args->repeats, "Timed repeats per figure (the median is kept)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--join-scale", args->join_scale,
                  "Workload B scale of the timed joins per candidate set and strategy (0: transfers only)")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  cmd->add_flag("-v,--verbose", args->verbose, "Explain what the probe could not learn");
  cmd->callback([args] { run_tune(*args); });
}

}  // namespace mgjoin::cli
