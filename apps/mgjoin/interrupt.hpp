#pragma once
// Ctrl-C (SIGINT) and SIGTERM stop a command cleanly: the first one sets a flag that the running join
// checks at its cancellation points (JoinOptions::cancel) and that the commands check before they
// commit output, so the command ends with one line, exit status 130 and no file that looks complete.
// A second signal ends the process at once (the default action): staged files keep their temporary
// names then, which never look complete either.
#include <mgjoin/join.hpp>

#include <atomic>

namespace mgjoin::cli {

/// Installs the handlers: the commands that honour the flag (join, bench, generate) call it when they
/// start; others (tune, topo) keep the default, so Ctrl-C ends them at once. A SIGINT ignored when the
/// process started (a background job of a non-interactive shell) stays ignored.
void install_interrupt_handler();

/// The flag the handlers set.
const std::atomic<bool>& interrupt_flag();

/// @throw mgjoin::Cancelled when a signal arrived (call before committing output).
void throw_if_interrupted();

/// `progress`, plus a test hook: with MGJOIN_TEST_SIGINT_AT=PHASE (or PHASE:end) in the environment, the
/// process sends itself SIGINT when a join first reports PHASE (or PHASE done), so that tests deliver a
/// real Ctrl-C through the real handler at a reproducible moment.
ProgressCallback with_test_interrupt(ProgressCallback progress);

/// Exit status of a command stopped by a signal (128 + SIGINT, as shells report it).
inline constexpr int kInterruptedExit = 130;

}  // namespace mgjoin::cli
