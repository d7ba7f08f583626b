// mgjoin: multi-GPU out-of-core sort-merge join. See README.md and docs/CLI.md.
#include "commands.hpp"
#include "interrupt.hpp"

#include <mgjoin/error.hpp>

#include <cstdio>
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
      {"left table", "R"},                                     {"right table", "S"}};
  for (const auto& [field, flag] : fields)
    for (auto at = message.find(field); at != std::string::npos; at = message.find(field, at))
      message.replace(at, std::string(field).size(), flag);
  return message;
}

}  // namespace mgjoin::cli

using mgjoin::cli::in_cli_words;

int main(int argc, char** argv) {
  CLI::App app{"mgjoin: multi-GPU out-of-core sort-merge join of column files", "mgjoin"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mgjoin 0.1.0");
  // One line per error, like every other mgjoin error (CLI11 would add a "Run with --help" line).
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string("mgjoin: error: ") + e.what() + "\n"; });
  mgjoin::cli::add_generate_command(app);
  mgjoin::cli::add_join_command(app);
  mgjoin::cli::add_bench_command(app);
  mgjoin::cli::add_topo_command(app);
  mgjoin::cli::add_tune_command(app);
  try {
    app.parse(argc, argv);  // subcommand callbacks run here
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const mgjoin::Cancelled&) {
    std::fprintf(stderr, "\nmgjoin: interrupted: stopped cleanly, no output was written\n");
    return mgjoin::cli::kInterruptedExit;
  } catch (const mgjoin::InputError& e) {
    std::fprintf(stderr, "mgjoin: error: %s\n", in_cli_words(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mgjoin: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
