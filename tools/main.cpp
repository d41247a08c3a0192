// tools/main.cpp — the `squeeze` executable: looks up a subcommand and runs it.
// Any squeeze::Error (or other exception) becomes one line on stderr and exit code 1.
#include <cstdio>
#include <exception>
#include <string>

#include "command.h"
#include "kernels/cpu/ops.h"

namespace squeeze::cli {
std::map<std::string, CommandInfo>& command_registry() {
  static std::map<std::string, CommandInfo> registry;
  return registry;
}
}  // namespace squeeze::cli

namespace {
void print_help() {
  std::printf(
      "squeeze — Glimmer (long-context inference) and MoK (MoE dispatch/combine)\n\n"
      "usage: squeeze <command> [options]   (squeeze <command> --help for each)\n\ncommands:\n");
  for (const auto& [name, info] : squeeze::cli::command_registry())
    std::printf("  %-12s %s\n", name.c_str(), info.summary.c_str());
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  const auto& registry = squeeze::cli::command_registry();
  auto it = registry.find(argv[1]);
  if (it == registry.end()) {
    std::fprintf(stderr, "squeeze: unknown command '%s' (see squeeze --help)\n", argv[1]);
    return 2;
  }
  try {
    // Choose the kernel table now, on the main thread: a bad SQUEEZE_ISA is then one line
    // here, whatever the command, not an exception on whichever thread first needs a kernel.
    squeeze::kernels::cpu::ops();
    return it->second.run(argc - 2, argv + 2);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "squeeze %s: error: %s\n", argv[1], e.what());
    return 1;
  }
}
