#include "failure.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <string_view>

namespace mgjoin::cli {
namespace {

std::atomic<bool> json_failures{false};

}  // namespace

bool json_requested(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") return false;
    if (arg == "--json") return true;
  }
  return false;
}

void set_json_failures(bool on) { json_failures.store(on); }

void report_failure(const std::string& what, const std::string& message, bool own_line) {
  std::fprintf(stderr, "%smgjoin: %s: %s\n", own_line ? "\n" : "", what.c_str(), message.c_str());
  std::fflush(stderr);
  if (!json_failures.load()) return;
  const nlohmann::json j{{"error", what == "error" ? message : what + ": " + message}};
  // dump()'s replace handler: a message holding bytes that are not UTF-8 (a file name) still prints.
  std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

}  // namespace mgjoin::cli
