// Placeholder until the topo command lands.
#include "commands.hpp"

#include <mgjoin/error.hpp>

namespace mgjoin::cli {

void add_topo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("topo", "(not implemented yet)");
  cmd->callback([] { throw InputError("mgjoin topo: not implemented yet"); });
}

}  // namespace mgjoin::cli
