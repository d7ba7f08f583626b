#pragma once
// Engine options shared by `join` and `bench`: --gpus, --gpu-ids, --strategy, --payloads, --sort, --exchange,
// --gpu-memory-limit, --tuning-file, -v. Errors are one-line InputErrors naming the option.
#include "cli_options.hpp"
#include "topology/log.hpp"

#include <mgjoin/error.hpp>
#include <mgjoin/join.hpp>

#include <CLI/CLI.hpp>

#include <string>

namespace mgjoin::cli {

struct EngineFlags {
  int gpus = -1;
  std::vector<int> gpu_ids;
  std::string strategy = "auto";
  std::string payloads = "auto";
  std::string sort = "auto";
  std::string exchange = "copy";
  std::string memory_limit;
  std::string tuning_file;
  bool verbose = false;

  void add_to(CLI::App& cmd) {
    cmd.add_option("--gpus", gpus, "GPUs to use: -1 = all (set chosen by topology/tuning), 0 = CPU path, N")
        ->capture_default_str();
    cmd.add_option("--gpu-ids", gpu_ids, "explicit GPU ids, e.g. 0,2 (overrides --gpus)")->delimiter(',');
    cmd.add_option("--strategy", strategy,
                   "data flow: copart (co-partitioned: in core, streamed, in passes or bucketed), paper (sort, merge, join) or auto (copart when it fits)")
        ->capture_default_str();
    cmd.add_option("--payloads", payloads,
                   "co-partitioned materialized joins: late (payloads cross while the output goes out), carry (with "
                   "their keys) or auto (late when it fits)")
        ->capture_default_str();
    cmd.add_option("--sort", sort, "sort strategy: radix, merge or auto (from the tuning file, else radix)")
        ->capture_default_str();
    cmd.add_option("--exchange", exchange, "radix bucket exchange: copy (copy engines) or nccl")->capture_default_str();
    cmd.add_option("--gpu-memory-limit", memory_limit, "device memory per GPU, e.g. 8G (default 80% of free)");
    cmd.add_option("--tuning-file", tuning_file, "tuning file from `mgjoin tune` (default ~/.cache/mgjoin/tuning.json)");
    cmd.add_flag("-v,--verbose", verbose, "Explain the GPU-set choice and NUMA placement (also MGJOIN_VERBOSE=1)");
  }

  /// Validates the values and fills the engine part of JoinOptions. @throw InputError naming the option.
  void apply(JoinOptions& o) const {
    MGJOIN_INPUT_EXPECTS(gpus >= -1, "--gpus " + std::to_string(gpus) + ": expected -1 (all), 0 (CPU) or a GPU count");
    o.strategy = parse_join_strategy(strategy, "--strategy " + strategy);
    o.payloads = parse_payload_flow(payloads, "--payloads " + payloads);
    const SortStrategy sort_strategy = parse_sort_strategy(sort, "--sort " + sort);
    const Exchange exchange_kind = parse_exchange(exchange, "--exchange " + exchange);
    o.gpus = gpus;
    o.gpu_ids = gpu_ids;
    o.sort = sort_strategy;
    o.exchange = exchange_kind;
    o.gpu_memory_limit = memory_limit.empty() ? 0 : parse_byte_size(memory_limit, "--gpu-memory-limit");
    MGJOIN_INPUT_EXPECTS(memory_limit.empty() || o.gpu_memory_limit > 0, "--gpu-memory-limit: must be more than 0 bytes");
    o.tuning_file = tuning_file;
    if (verbose) topology::set_verbose(true);
  }
};

}  // namespace mgjoin::cli
