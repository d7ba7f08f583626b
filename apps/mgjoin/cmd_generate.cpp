// Placeholder until the generate command lands.
#include "commands.hpp"

#include <mgjoin/error.hpp>

namespace mgjoin::cli {

void add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "(not implemented yet)");
  cmd->callback([] { throw InputError("mgjoin generate: not implemented yet"); });
}

}  // namespace mgjoin::cli
