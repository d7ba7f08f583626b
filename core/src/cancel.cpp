#include "core/cancel.hpp"

#include <mgjoin/error.hpp>

namespace mgjoin::detail {
namespace {
thread_local const std::atomic<bool>* current_flag = nullptr;
}  // namespace

CancelScope::CancelScope(const std::atomic<bool>* flag) : previous_(current_flag) { current_flag = flag; }
CancelScope::~CancelScope() { current_flag = previous_; }

const std::atomic<bool>* cancel_flag() { return current_flag; }

bool cancel_requested() { return current_flag && current_flag->load(std::memory_order_relaxed); }

void throw_if_cancelled() {
  if (cancel_requested()) throw Cancelled("the join was cancelled (JoinOptions::cancel was set); nothing was output");
}

}  // namespace mgjoin::detail
