// tools/args.h — a small command-line parser shared by the squeeze subcommands.
//
// Declare options, then parse: unknown flags, missing values and malformed or
// out-of-range numbers are squeeze::Errors (one line, non-zero exit via main). `--help`
// prints usage. Numeric options are declared with their range (int_option, real_option),
// checked by parse() before the command does any work and stated in --help; get_int /
// get_double only read options declared that way, so no number escapes the check.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace squeeze::gguf {
class DeclaredInputs;
}

namespace squeeze::cli {

// Accepted values of an integer option: min <= v <= max.
struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

// Accepted values of a real option: always finite (no inf / nan), within [min, max], with
// an open end where min_open / max_open (e.g. top-p in (0, 1]).
struct RealRange {
  double min = -std::numeric_limits<double>::max();
  double max = std::numeric_limits<double>::max();
  bool min_open = false;
  bool max_open = false;
};

// The one checked routine behind every numeric option: the whole of `text` must be a
// decimal number (no leading space or '+', no hex, no trailing junk) inside the range;
// anything else is a one-line squeeze::Error naming `option`.
int64_t parse_int(const std::string& option, const std::string& text, IntRange range);
double parse_real(const std::string& option, const std::string& text, RealRange range);
// "1,2,3" → integers, each checked against `range` (a one-line error naming the option
// and the item otherwise).
std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text, IntRange range);
// "0 <= N <= 16", "X > 0", ...: how --help states a range.
std::string describe(const IntRange& range, const std::string& value_name);
std::string describe(const RealRange& range, const std::string& value_name);

// The most threads -t accepts: 8 per hardware thread. More only adds start-up time
// (each is a real OS thread) and contention; a typo like -t 100000 should fail at once.
int max_threads();

// Ranges shared by many options.
inline constexpr int64_t kMaxTokens = int64_t{1} << 24;   // context lengths, token counts: 16M
inline constexpr int64_t kMaxBatch = int64_t{1} << 20;    // batch sizes
inline constexpr int64_t kMaxSeed = std::numeric_limits<int64_t>::max();

class Args {
 public:
  Args(std::string command, std::string usage_line, std::string description);
  ~Args();
  Args(Args&&) noexcept;
  Args& operator=(Args&&) noexcept;

  // A flag with a text value: names like {"-m", "--model"}.
  Args& option(std::vector<std::string> names, std::string value_name, std::string help,
               std::string default_value = "");
  // Numeric options, checked against their range by parse().
  Args& int_option(std::vector<std::string> names, std::string value_name, std::string help, IntRange range,
                   std::string default_value = "");
  Args& real_option(std::vector<std::string> names, std::string value_name, std::string help, RealRange range,
                    std::string default_value = "");
  // -t / --threads N: 0 (one per core) .. max_threads().
  Args& threads_option();
  // A boolean switch.
  Args& flag(std::vector<std::string> names, std::string help);
  // The options declared from here on form a group under this heading in --help (before
  // the first group: "options").
  Args& group(std::string title);

  // The option declared last names a file the command reads (reads) or writes (writes);
  // so do positional arguments by index. parse() then refuses, before the command does any
  // work, an output that is an input (the same file through any spelling or symlink; a
  // folder input covers every file in it, gguf::check_output_path) and two outputs on one
  // path; the inputs stay declared while this Args lives, so every later write (AtomicFile)
  // is checked against them too. `replaces`: an input option this output may replace in
  // place (the checkpoint a resumed run continues).
  Args& reads();
  Args& writes(std::string replaces = "");
  Args& reads_positional(size_t index);
  Args& writes_positional(size_t index);

  // Returns false when --help was given (usage already printed to stdout).
  bool parse(int argc, char** argv);

  std::string get(const std::string& name) const;  // value or default ("" if none)
  // Every value an option was given, in command-line order (repeatable options).
  std::vector<std::string> get_all(const std::string& name) const;
  bool has(const std::string& name) const;          // set on the command line (switch or option)
  // The value (or default) of an int_option / real_option, already range-checked.
  int64_t get_int(const std::string& name) const;
  // get_int for a value stored in an int: an internal error unless the declared range fits.
  int get_int32(const std::string& name) const;
  double get_double(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // The i-th positional argument, or an error naming `what` when absent.
  const std::string& positional_at(size_t i, const std::string& what) const;

  std::string usage() const;

 private:
  enum class Kind { text, integer, real, toggle };
  struct Spec {
    std::vector<std::string> names;
    std::string value_name;
    std::string help;
    std::string default_value;
    Kind kind = Kind::text;
    IntRange int_range;
    RealRange real_range;
    enum class File { none, input, output } file = File::none;
    std::string replaces;  // File::output: the input option it may replace
    std::string group = {};  // its --help heading
  };
  void check_files();
  const Spec* find(const std::string& name) const;
  const Spec& declared(const std::string& name) const;
  std::string key(const Spec& s) const { return s.names.back(); }
  void check_number(const Spec& s, const std::string& value) const;

  std::string command_, usage_line_, description_;
  std::vector<Spec> specs_;
  std::string current_group_;  // group()
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_values_;
  std::vector<std::string> positional_;
  std::vector<size_t> positional_inputs_, positional_outputs_;
  std::unique_ptr<gguf::DeclaredInputs> declared_inputs_;
};

}  // namespace squeeze::cli
