// tools/args.h — a small command-line parser shared by the squeeze subcommands.
//
// Declare options, then parse: unknown flags, missing values and malformed numbers
// are squeeze::Errors (one line, non-zero exit via main). `--help` prints usage.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace squeeze::cli {

class Args {
 public:
  Args(std::string command, std::string usage_line, std::string description);

  // A flag with a value: names like {"-t", "--threads"}.
  Args& option(std::vector<std::string> names, std::string value_name, std::string help,
               std::string default_value = "");
  // A boolean switch.
  Args& flag(std::vector<std::string> names, std::string help);

  // Returns false when --help was given (usage already printed to stdout).
  bool parse(int argc, char** argv);

  std::string get(const std::string& name) const;  // value or default ("" if none)
  // Every value an option was given, in command-line order (repeatable options).
  std::vector<std::string> get_all(const std::string& name) const;
  bool has(const std::string& name) const;          // set on the command line (switch or option)
  int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // The i-th positional argument, or an error naming `what` when absent.
  const std::string& positional_at(size_t i, const std::string& what) const;

  std::string usage() const;

 private:
  struct Spec {
    std::vector<std::string> names;
    std::string value_name;
    std::string help;
    std::string default_value;
    bool is_switch = false;
  };
  const Spec* find(const std::string& name) const;
  std::string key(const Spec& s) const { return s.names.back(); }

  std::string command_, usage_line_, description_;
  std::vector<Spec> specs_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_values_;
  std::vector<std::string> positional_;
};

}  // namespace squeeze::cli
