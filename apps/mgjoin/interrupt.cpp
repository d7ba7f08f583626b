#include "interrupt.hpp"

#include <mgjoin/error.hpp>

#include <csignal>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

namespace mgjoin::cli {
namespace {

std::atomic<bool> interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler stores into it");

extern "C" void on_signal(int signal_number) {
  interrupted.store(true, std::memory_order_relaxed);
  std::signal(signal_number, SIG_DFL);  // a second one ends the process at once
}

bool install() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  // A file-size limit (ulimit -f) makes writes fail with EFBIG, reported like a full disk, instead of
  // killing the process halfway through a file.
  std::signal(SIGXFSZ, SIG_IGN);
  return true;
}

}  // namespace

const std::atomic<bool>& interrupt_flag() {
  static const bool installed = install();
  (void)installed;
  return interrupted;
}

void throw_if_interrupted() {
  if (interrupt_flag().load(std::memory_order_relaxed))
    throw Cancelled("interrupted by a signal; no output was written");
}

ProgressCallback with_test_interrupt(ProgressCallback progress) {
  const char* at = std::getenv("MGJOIN_TEST_SIGINT_AT");
  if (!at || !*at) return progress;
  std::string phase = at;
  const bool at_end = phase.ends_with(":end");
  if (at_end) phase.resize(phase.size() - 4);
  auto raised = std::make_shared<bool>(false);
  return [progress = std::move(progress), phase, at_end, raised](const std::string& p, double fraction) {
    if (!*raised && p == phase && (!at_end || fraction >= 1)) {
      *raised = true;
      std::raise(SIGINT);
    }
    if (progress) progress(p, fraction);
  };
}

}  // namespace mgjoin::cli
