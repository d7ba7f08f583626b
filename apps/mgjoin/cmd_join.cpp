// Placeholder until the join command lands.
#include "commands.hpp"

#include <mgjoin/error.hpp>

namespace mgjoin::cli {

void add_join_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("join", "(not implemented yet)");
  cmd->callback([] { throw InputError("mgjoin join: not implemented yet"); });
}

}  // namespace mgjoin::cli
