// `mgjoin tune`: measures this machine's transfers once and writes the tuning file from which the
// engine takes the GPU set and sort strategy for `--gpus N` (topology/tuning_file.hpp).
#include "commands.hpp"

#include "topology/bandwidth.hpp"
#include "topology/gpu_set.hpp"
#include "topology/log.hpp"
#include "topology/topology.hpp"
#include "topology/tune.hpp"
#include "topology/tuning_file.hpp"

#include <mgjoin/error.hpp>

#include <cstdio>
#include <memory>
#include <string>

namespace mgjoin::cli {

namespace {

struct TuneArgs {
  std::string out;            ///< empty: topology::default_tuning_path()
  std::size_t mib = 256;      ///< bytes per copy, MiB
  int repeats = 5;
  bool verbose = false;
};

void progress(const std::string& line) { std::fprintf(stderr, "mgjoin tune: %s\n", line.c_str()); }

// The engine's end-to-end join timing per (set, strategy) plugs in here once it exists
// (topology::JoinTimer); until then the choice rests on the transfer measurements alone.
topology::JoinTimer join_timer() { return nullptr; }

void run_tune(const TuneArgs& a) {
  topology::set_verbose(a.verbose || topology::verbose());
  const topology::Topology t = topology::probe_topology();
  if (t.gpu_count() == 0) throw Error("no CUDA GPUs found: nothing to tune");
  progress("measuring " + std::to_string(t.gpu_count()) + " GPU(s), " + std::to_string(a.mib) + " MiB per copy, median of " +
           std::to_string(a.repeats));

  topology::BandwidthOptions bw;
  bw.bytes = a.mib << 20;
  bw.repeats = a.repeats;
  bw.progress = progress;
  const auto measured = topology::measure_bandwidths(t, bw);

  topology::TuneOptions opt;
  opt.time_join = join_timer();
  opt.progress = progress;
  const auto tuning = topology::make_tuning(t, measured, opt);
  const std::string path = a.out.empty() ? topology::default_tuning_path() : a.out;
  topology::write_tuning_file(tuning, path);

  for (const auto& c : tuning.best)
    std::printf("g=%-3d %-20s %s\n", c.g, topology::set_string(c.gpus).c_str(), c.strategy.c_str());
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
  cmd->add_flag("-v,--verbose", args->verbose, "Explain what the probe could not learn");
  cmd->callback([args] { run_tune(*args); });
}

}  // namespace mgjoin::cli
