#pragma once
// Cancellation points of a running join (ground layer). The join's entry point names the caller's flag
// for its thread with a CancelScope; loops of the flows call throw_if_cancelled() between chunks, rounds
// and phases, so a flag set from another thread or a signal handler stops the join there, with
// exceptions unwinding what it took. A thread-local pointer, not a parameter, so that the check can sit
// in any loop of the calling thread without threading a token through every layer's signature.
#include <atomic>

namespace mgjoin::detail {

/// Makes `flag` (may be null: not cancellable) the calling thread's cancel flag for the scope's
/// lifetime and restores the previous one after (scopes nest).
class CancelScope {
 public:
  explicit CancelScope(const std::atomic<bool>* flag);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

/// The calling thread's flag (null when none): a worker thread of the join takes it in a CancelScope.
const std::atomic<bool>* cancel_flag();

/// Whether the calling thread's flag is set.
bool cancel_requested();

/// @throw mgjoin::Cancelled when the calling thread's flag is set.
void throw_if_cancelled();

}  // namespace mgjoin::detail
