#pragma once
// The streamed variant of the co-partitioned flow, when R and S do not fit together but the smaller
// relation X does: X is partitioned as in core and sorted in runs (a run's sort buffer is all the
// scratch it needs), then the larger relation Y streams through in rounds: each round's chunks land on
// their owners (partitioned and sent as X was), are sorted there and joined against every run of X, and
// their output goes out while the next round arrives. Every input byte still crosses PCIe once.
//
//   Y (host) ── round t: chunks H2D ─► partition ─► owner d: landing[t % 2] sorted ─► join with X_d's runs
//                                                      count: summed on the GPU │ materialize: windows D2H
#include "engine/src/exec/lanes.hpp"
#include "engine/src/exec/output_writer.hpp"
#include "engine/src/flows/copart/partition_pairs.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace mgjoin::copart {

class StreamedJoin {
 public:
  /// Takes X's partition, the join's buffers, the chunk slots and one run's sort buffers from the
  /// context's stacks. Expects a streamed plan.
  StreamedJoin(const RelationView& r, const RelationView& s, const CopartPlan& plan, const CopartContext& context);
  // Work may still be in flight when an error unwinds: wait for it before any buffer goes back.
  ~StreamedJoin() { lanes_.synchronize_all(); }
  StreamedJoin(const StreamedJoin&) = delete;
  StreamedJoin& operator=(const StreamedJoin&) = delete;

  /// X in and sorted, then Y through round by round; counts (result.count) or writes the output into
  /// `out`'s columns (`into` says what share of the whole input this run is); appends the phase stats.
  void run(OutputColumns* out, const OutputInto& into, JoinResult& result);

 private:
  /// One GPU's landings of Y (round t in landing t % kLandings) and what sorts and joins them.
  struct Landings {
    std::array<Partition, kLandings> landing;
    /// `consumed`: recorded once the round's joins and output windows have read it; `landed` (one GPU):
    /// once its H2D is done.
    std::array<gpu::Event, kLandings> consumed, landed;
    std::array<bool, kLandings> consumed_recorded{};
    DeviceBuffer alt_keys, alt_payload, temp;
    /// Materialize: the output jobs (round, run) alternate between two sets of match arrays;
    /// `arrays_free[k]` is recorded on `out` once the windows reading set k are written.
    std::array<exec::OutputArrays, 2> arrays;
    std::array<gpu::Event, 2> arrays_free;
    std::array<bool, 2> arrays_free_recorded{};
  };

  static std::array<int, 2> runs_of(const CopartPlan& plan);
  /// Takes the landings of Y, their sort buffers and (materialize) the match arrays. Expects X's
  /// transfer waited for.
  void begin_stream(bool materialize);
  void stream(JoinResult& result, OutputColumns* out, const OutputInto& into);
  int bring_round(std::int64_t t);
  void land_round(int slot, std::int64_t t);
  void sort_landing(int d, int lb);
  void count_round(int lb);
  /// Joins landing lb with X's runs one run at a time (an output job each); `before` and `after`: the
  /// share of the input that had arrived before this round and after it.
  void output_round(int lb, OutputColumns& out, double before, double after);
  /// The output job of landing lb with run i of X, `arrived` of the input joined once it is written.
  void output_job(int lb, int i, OutputColumns& out, double arrived);
  /// Landing lb's round is done with once `stream` (work, or out where windows read it) gets here.
  void consumed(int d, int lb, cudaStream_t stream);
  /// `stream` waits until landing lb's previous round has been joined and written out.
  void wait_consumed(int d, int lb, cudaStream_t stream);

  const CopartPlan& plan_;
  int g_;
  Side y_ = plan_.probe;
  Side x_ = y_ == Side::S ? Side::R : Side::S;
  exec::Lanes lanes_;  // before the buffers: they go back first
  PartitionPairs pairs_;
  std::vector<Landings> landings_;
  std::vector<exec::OutputWindows> windows_;
  std::uint64_t output_jobs_ = 0;  ///< output jobs (round, run) so far; their parity picks the arrays
};

}  // namespace mgjoin::copart
