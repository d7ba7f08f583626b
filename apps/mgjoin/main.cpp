// mgjoin: multi-GPU out-of-core sort-merge join. See README.md and docs/CLI.md.
#include "commands.hpp"
#include "failure.hpp"
#include "interrupt.hpp"

#include <mgjoin/error.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>

namespace mgjoin::cli {

// The library names the API field a bad value came in; the CLI user set it with a flag.
std::string in_cli_words(std::string message) {
  static const std::pair<const char*, const char*> fields[] = {
      {"JoinOptions::gpu_memory_limit", "--gpu-memory-limit"}, {"JoinOptions::gpu_ids", "--gpu-ids"},
      {"JoinOptions::gpus", "--gpus"},                         {"JoinOptions::strategy", "--strategy"},
      {"WorkloadSpec::selectivity", "--selectivity"},          {"WorkloadSpec::hot_key", "--hot-key"},
      {"WorkloadSpec::scale", "--scale"},                      {"WorkloadSpec::zipf", "--zipf"},
      {"ask for the paper flow", "use --strategy paper"},
      {"TableJoinOptions::left_on", "--r-key"},                {"TableJoinOptions::right_on", "--s-key"},
      {"TableJoinOptions::left_columns", "--r-columns"},       {"TableJoinOptions::right_columns", "--s-columns"},
      {"left table", "R"},                                     {"right table", "S"},
      {"the left key", "R's key"},                             {"the right key", "S's key"}};
  for (const auto& [field, flag] : fields)
    for (auto at = message.find(field); at != std::string::npos; at = message.find(field, at))
      message.replace(at, std::string(field).size(), flag);
  return message;
}

namespace {

/// A first argument that names no command is refused by its name (CLI11 would say "A subcommand is
/// required"). @throw InputError listing the commands.
void check_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return;
  const auto commands = app.get_subcommands([](const CLI::App*) { return true; });
  std::string names;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    if (commands[i]->get_name() == argv[1]) return;
    if (i > 0) names += i + 1 == commands.size() ? " or " : ", ";
    names += commands[i]->get_name();
  }
  throw InputError(std::string("unknown command '") + argv[1] + "' (expected " + names + ")");
}

}  // namespace

}  // namespace mgjoin::cli

namespace {

int run(int argc, char** argv) {
  using namespace mgjoin::cli;
  set_json_failures(json_requested(argc, argv));
  CLI::App app{"mgjoin: multi-GPU out-of-core sort-merge join of column files", "mgjoin"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mgjoin 0.1.0");
  add_generate_command(app);
  add_join_command(app);
  add_bench_command(app);
  add_topo_command(app);
  add_tune_command(app);
  try {
    check_command(app, argc, argv);
    app.parse(argc, argv);  // subcommand callbacks run here
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Bad input like any other: one line (CLI11 would add "Run with --help") and exit status 2.
    report_failure("error", e.what());
    return kBadInputExit;
  } catch (const mgjoin::Cancelled&) {
    report_failure("interrupted", "stopped cleanly, no output was written", /*own_line=*/true);
    return kInterruptedExit;
  } catch (const mgjoin::InputError& e) {
    report_failure("error", in_cli_words(e.what()));
    return kBadInputExit;
  } catch (const std::exception& e) {
    report_failure("error", e.what());
    return 1;
  }
  return 0;
}
}  // namespace

/// The process ends without tearing down what the operating system takes back anyway (GPU contexts, pinned
/// and device memory, the pinned cache): a 4-GPU process spent a large part of its wall time after main
/// in the driver's teardown (PERFORMANCE.md, start-up). Every file is closed and committed (or removed)
/// by then: run() has returned. MGJOIN_FULL_EXIT=1 runs the usual exit (leak checkers need it).
int main(int argc, char** argv) {
  const int code = run(argc, argv);
  const char* full = std::getenv("MGJOIN_FULL_EXIT");
  if (full && std::string(full) == "1") return code;
  std::fflush(nullptr);
  std::_Exit(code);
}
