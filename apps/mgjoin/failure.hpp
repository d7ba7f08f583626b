#pragma once
// How `mgjoin` reports a failure: one line on stderr ("mgjoin: error: ..."), and, when `--json` is on
// the command line, the same message as JSON on stdout ({"error": "..."}), so that a program reading
// the summary reads the failure too. The parser's own errors are reported this way as well.
#include <string>

namespace mgjoin::cli {

/// Exit status of bad input: an option the parser refuses, a bad value, a file that cannot be read.
inline constexpr int kBadInputExit = 2;

/// Whether `--json` is among the arguments (before a lone `--`): known before the parser has run, so
/// that its errors are JSON too.
bool json_requested(int argc, const char* const* argv);

/// Turns the JSON copy of failures on stdout on or off (main sets it from json_requested).
void set_json_failures(bool on);

/// Prints "mgjoin: <what>: <message>" on stderr (after a newline when `own_line`: a progress line may
/// be open) and, with JSON failures on, {"error": "<what>: <message>"} (or {"error": "<message>"} for
/// what = "error") on stdout.
void report_failure(const std::string& what, const std::string& message, bool own_line = false);

}  // namespace mgjoin::cli
