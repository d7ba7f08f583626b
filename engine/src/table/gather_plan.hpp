#pragma once
// Where late materialization gathers each output column: on the CPU threads, or on one of the engine's
// GPUs. A GPU takes a column whole: the column it gathers from goes in over PCIe once, the gathered rows
// come out once, and the gather itself runs at HBM speed; the CPU's gather is a cache miss per row. The
// CPU always gathers the key and validity columns (beside the GPUs' work), so the plan balances the
// payload columns between the CPU and the GPUs by the seconds each is predicted to take (longest first,
// each to whichever finishes it first). Pure host code: tested on the CPU.
#include "engine/src/plan/cost_model.hpp"

#include <mgjoin/table.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mgjoin::table {

/// One payload column to gather, as the plan sees it.
struct GatherColumn {
  std::uint64_t source_rows = 0;  ///< rows of the column gathered from (it goes to a GPU whole)
  int width = 8;                  ///< bytes a value: 1, 2, 4 or 8
  int map = 0;                    ///< which gather map it follows (0: left, 1: right); a GPU takes each once
  bool pinned = true;             ///< its memory is pinned already (else the host registers it first)
};

/// What the plan knows of the machine.
struct GatherMachine {
  int gpus = 0;
  std::uint64_t device_bytes = 0;  ///< free device memory of each GPU
  detail::Rates rates;             ///< of the `gpus` GPUs together, and of the host
  bool maps_pinned = true;         ///< the gather maps are pinned (else a GPU registers each it follows)
};

/// A GPU's share of the gathers: its memory and its traffic.
struct GpuGatherLoad {
  std::uint64_t in = 0, out = 0;         ///< bytes H2D (sources, maps) and D2H (gathered rows)
  std::uint64_t registered = 0;          ///< pageable source bytes the host pins first
  std::uint64_t largest_source = 0, largest_output = 0;
  bool map_used[2] = {false, false};
  int columns = 0;
};

inline constexpr int kOnCpu = -1;

struct GatherPlan {
  std::vector<int> place;  ///< per column: the GPU (an index into the engine's set) or kOnCpu
  std::vector<GpuGatherLoad> gpus;
  /// Predicted: the CPU's share and the slowest GPU's share, each after the host's pinning.
  double cpu_seconds = 0, gpu_seconds = 0;
  std::string why;                          ///< "gathers: ..." (the choice, the prediction, or why not GPUs)

  std::size_t columns_on_gpus() const {
    return static_cast<std::size_t>(std::count_if(place.begin(), place.end(), [](int d) { return d != kOnCpu; }));
  }
};

/// Device memory a GPU needs for `load` with `rows` output rows: each map it follows (8 bytes a row), two
/// source and two output buffers of the largest (the next column comes in while the last goes out).
std::uint64_t gather_device_bytes(const GpuGatherLoad& load, std::int64_t rows);

/// Predicted seconds of a GPU's share once the host has pinned what it needed: its copies each way
/// (overlapping), a fixed cost a column and one to set up (none without a column).
double gpu_gather_seconds(const GpuGatherLoad& load, const detail::Rates& per_gpu);

/// Predicted seconds of pinning `bytes` of pageable memory (sources and maps) before the gathers start.
double pin_seconds(std::uint64_t bytes, const detail::Rates& rates);

/// Predicted seconds of the CPU gathering `rows` rows of one column.
double cpu_gather_seconds(std::int64_t rows, const detail::Rates& rates);

/// Places each column of `columns` (gathered into `rows` rows) on the CPU or a GPU. `cpu_columns` is what
/// the CPU gathers in any case (the key components and validity columns). Auto: each column, longest
/// first, to whichever of the CPU and the GPUs with room for it would finish it first; Gpus: every column
/// to the GPU that finishes it first, where one has room (the rest on the CPU, `why` says so); Cpu, or no
/// GPU: every column on the CPU.
GatherPlan plan_gathers(std::span<const GatherColumn> columns, std::int64_t rows, int cpu_columns,
                        const GatherMachine& machine, GatherOn choice);

}  // namespace mgjoin::table
