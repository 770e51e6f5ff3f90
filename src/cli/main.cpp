// `minfer COMMAND ...` dispatch. `minfer MODEL.gguf [PROMPT]` (no command word) means `run`.
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/llama_flags.h"
#include "common/error.h"

namespace minfer::cli {

static std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}

bool register_command(const Command& c) {
  registry().push_back(c);
  return true;
}

const std::vector<Command>& commands() { return registry(); }

void parse(CLI::App& app, int argc, char** argv) {
  std::vector<char*> args;
  try {
    args = with_llama_cpp_flags(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", app.get_name().c_str(), e.what(),
                 app.get_name().c_str());
    std::exit(2);
  }
  try {
    app.parse(argc, args.data());
  } catch (const CLI::CallForHelp& e) {
    std::exit(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    std::exit(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    std::exit(app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", app.get_name().c_str(),
                 e.what(), app.get_name().c_str());
    std::exit(2);
  }
}

}  // namespace minfer::cli

static void print_usage() {
  std::printf("minfer: run GGUF language models locally\n\n"
              "Usage: minfer MODEL.gguf [PROMPT] [options]   (same as 'minfer run')\n"
              "       minfer COMMAND [options]\n\nCommands:\n");
  for (const auto& c : minfer::cli::commands()) std::printf("  %-10s %s\n", c.name, c.summary);
  std::printf("\nRun 'minfer COMMAND --help' for a command's options.\n");
}

int main(int argc, char** argv) {
  using namespace minfer::cli;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  const Command* cmd = nullptr;
  for (const auto& c : commands())
    if (!std::strcmp(c.name, argv[1])) cmd = &c;

  std::string name;
  std::vector<char*> args;
  if (cmd) {
    name = std::string("minfer ") + cmd->name;
    args.push_back(name.data());
    for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  } else {
    // No command word: a model path or flags mean `run`, anything else is a typo.
    for (const auto& c : commands())
      if (!std::strcmp(c.name, "run")) cmd = &c;
    const bool looks_like_run = argv[1][0] == '-' || std::filesystem::exists(argv[1]) ||
                                std::string(argv[1]).ends_with(".gguf");
    if (!cmd || !looks_like_run) {
      std::fprintf(stderr, "minfer: unknown command '%s'\nRun 'minfer --help' for usage.\n",
                   argv[1]);
      return 2;
    }
    name = "minfer";
    args.push_back(name.data());
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  }
  args.push_back(nullptr);
  try {
    return cmd->run(int(args.size()) - 1, args.data());
  } catch (const minfer::Error& e) {
    std::fprintf(stderr, "minfer: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "minfer: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minfer: internal error: %s\n", e.what());
    return 1;
  }
}
