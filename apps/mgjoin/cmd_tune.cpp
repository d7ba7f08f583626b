// Placeholder until the tune command lands.
#include "commands.hpp"

#include <mgjoin/error.hpp>

namespace mgjoin::cli {

void add_tune_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tune", "(not implemented yet)");
  cmd->callback([] { throw InputError("mgjoin tune: not implemented yet"); });
}

}  // namespace mgjoin::cli
