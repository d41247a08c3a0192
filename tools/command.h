// tools/command.h — the subcommand registry of the `squeeze` executable.
//
// Each subcommand lives in its own tools/cmd_<name>.cpp and registers itself with
// SQZ_COMMAND; main.cpp only looks names up, so adding a command touches one file.
#pragma once

#include <map>
#include <string>

namespace squeeze::cli {

using CommandFn = int (*)(int argc, char** argv);  // argv excludes "squeeze <name>"

struct CommandInfo {
  std::string summary;
  CommandFn run;
};

std::map<std::string, CommandInfo>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(const char* name, const char* summary, CommandFn run) {
    command_registry()[name] = {summary, run};
  }
};

}  // namespace squeeze::cli

#define SQZ_COMMAND(name, summary, fn) \
  static const ::squeeze::cli::CommandRegistrar sqz_command_registrar_##fn(name, summary, fn)
