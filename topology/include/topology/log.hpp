#pragma once
// Verbose diagnostics of the topology module on stderr. Off by default; MGJOIN_VERBOSE=1 or
// set_verbose(true) (the CLI's -v) turns it on.
#include <string_view>

namespace mgjoin::topology {

void set_verbose(bool on);
bool verbose();
/// Prints "mgjoin: <message>" on stderr when verbose() is on.
void log_verbose(std::string_view message);
/// Prints "mgjoin: warning: <message>" on stderr, always.
void log_warning(std::string_view message);

}  // namespace mgjoin::topology
