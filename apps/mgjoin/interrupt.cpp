#include "interrupt.hpp"

#include <mgjoin/error.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>

namespace mgjoin::cli {
namespace {

std::atomic<bool> interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler stores into it");

extern "C" void on_signal(int signal_number) {
  interrupted.store(true, std::memory_order_relaxed);
  std::signal(signal_number, SIG_DFL);  // a second one ends the process at once
}

/// Catches `signal_number` unless it was ignored when the process started (and no test hook asks for
/// it: MGJOIN_TEST_SIGINT_AT).
void catch_unless_ignored(int signal_number) {
  struct sigaction previous {};
  const bool ignored = ::sigaction(signal_number, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN;
  if (ignored && !std::getenv("MGJOIN_TEST_SIGINT_AT")) return;
  std::signal(signal_number, on_signal);
}

}  // namespace

void install_interrupt_handler() {
  catch_unless_ignored(SIGINT);
  catch_unless_ignored(SIGTERM);
  // A file-size limit (ulimit -f) makes writes fail with EFBIG, reported like a full disk, instead of
  // killing the process halfway through a file.
  std::signal(SIGXFSZ, SIG_IGN);
}

const std::atomic<bool>& interrupt_flag() { return interrupted; }

void throw_if_interrupted() {
  if (interrupt_flag().load(std::memory_order_relaxed))
    throw Cancelled("interrupted by a signal; no output was written");
}

namespace {

/// SIGINT to the whole process, as a terminal's Ctrl-C sends it (not raise(), which targets this thread
/// only: a thread that blocks SIGINT would keep it pending), then waits until a thread has handled it,
/// so that the test hook's moment is reproducible.
void send_ctrl_c_to_self() {
  ::kill(::getpid(), SIGINT);
  for (int i = 0; i < 2000 && !interrupted.load(std::memory_order_relaxed); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!interrupted.load(std::memory_order_relaxed))
    std::fprintf(stderr, "mgjoin: test hook: SIGINT sent but not handled within 2 s\n");
}

}  // namespace

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
      send_ctrl_c_to_self();
    }
    if (progress) progress(p, fraction);
  };
}

}  // namespace mgjoin::cli
