// Placeholder until the bench command lands.
#include "commands.hpp"

#include <mgjoin/error.hpp>

namespace mgjoin::cli {

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "(not implemented yet)");
  cmd->callback([] { throw InputError("mgjoin bench: not implemented yet"); });
}

}  // namespace mgjoin::cli
