#pragma once
// One join's settings, unpacked once where the join starts: the flow choice and the flows read this,
// not JoinSettings, and the environment's knobs are read here, once.
#include <mgjoin/join.hpp>

#include <atomic>
#include <optional>
#include <string>

namespace mgjoin::detail {

struct JoinRequest {
  JoinStrategy strategy = JoinStrategy::Auto;
  OutputMode output = OutputMode::Materialize;
  PayloadFlow payloads = PayloadFlow::Auto;  ///< the co-partitioned flow's
  Exchange exchange = Exchange::CopyEngines;
  SortStrategy sort = SortStrategy::Radix;  ///< the paper flow's (FromTuning resolved when it runs)
  bool keep_inputs = false;
  /// MGJOIN_BUCKET_RESIDENT's text (nullopt: unset); copart::parse_residency() reads it where a bucket
  /// plan is made, so that a bad value is refused only by a join that would bucket.
  std::optional<std::string> bucket_resident;
  /// MGJOIN_COPART_PASSES's text (nullopt: unset); copart::parse_passes() reads it where the flow in
  /// passes is planned.
  std::optional<std::string> passes;
  /// Whether the co-partitioned flows copy pageable inputs in through the engine's pinned staging
  /// (exec/input_staging.hpp) rather than registering them whole first: MGJOIN_STAGE_INPUTS=0 turns it off
  /// (to compare the two).
  bool stage_inputs = true;
};

/// The request of `options`, with the environment read now.
JoinRequest unpack_join(const JoinSettings& options);

}  // namespace mgjoin::detail
