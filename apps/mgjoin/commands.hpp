#pragma once
// Each `mgjoin` subcommand lives in its own cmd_<name>.cpp and registers itself on the app.
#include <CLI/CLI.hpp>

#include <string>

namespace mgjoin::cli {

void add_generate_command(CLI::App& app);  // cmd_generate.cpp
void add_join_command(CLI::App& app);      // cmd_join.cpp
void add_bench_command(CLI::App& app);     // cmd_bench.cpp
void add_topo_command(CLI::App& app);      // cmd_topo.cpp
void add_tune_command(CLI::App& app);      // cmd_tune.cpp

/// A library error in the CLI's words: the API fields it names (JoinOptions::gpu_memory_limit) become the
/// flags the user set them with, the left and right table R and S (main.cpp).
std::string in_cli_words(std::string message);

}  // namespace mgjoin::cli
