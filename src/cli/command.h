// Sub-command registry of the `minfer` executable. Each src/cli/cmd_*.cpp registers itself:
//
//   static int run_inspect(int argc, char** argv);   // argv[0] is "minfer inspect"
//   MINFER_COMMAND(inspect, "show a GGUF file's metadata and tensors", run_inspect);
//
// Return 0 on success. Throw minfer::Error for user-caused failures (printed as one line,
// exit 1); CLI11 parse errors are handled by cli::parse (exit 2 for usage errors).
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace minfer::cli {

using CommandFn = int (*)(int argc, char** argv);

struct Command {
  const char* name;
  const char* summary;
  CommandFn run;
};

bool register_command(const Command& c);
const std::vector<Command>& commands();

// Parses with CLI11; on --help prints help and exits 0, on a usage error prints one line
// "minfer <cmd>: <message>" plus a hint and exits 2.
void parse(CLI::App& app, int argc, char** argv);

}  // namespace minfer::cli

#define MINFER_COMMAND(ident, summary, fn) \
  static const bool minfer_cmd_registered_##ident = ::minfer::cli::register_command({#ident, summary, fn})
