// tools/args.cpp
#include "args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "gguf/file_identity.h"

namespace squeeze::cli {
namespace {

std::string real_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

bool unbounded_below(const IntRange& r) { return r.min == std::numeric_limits<int64_t>::min(); }
bool unbounded_above(const IntRange& r) { return r.max == std::numeric_limits<int64_t>::max(); }
bool unbounded_below(const RealRange& r) { return r.min == -std::numeric_limits<double>::max(); }
bool unbounded_above(const RealRange& r) { return r.max == std::numeric_limits<double>::max(); }

}  // namespace

int max_threads() { return 8 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

std::string describe(const IntRange& r, const std::string& v) {
  const bool lo = !unbounded_below(r), hi = !unbounded_above(r);
  if (lo && hi) return std::to_string(r.min) + " <= " + v + " <= " + std::to_string(r.max);
  if (lo) return v + " >= " + std::to_string(r.min);
  if (hi) return v + " <= " + std::to_string(r.max);
  return "any integer";
}

std::string describe(const RealRange& r, const std::string& v) {
  const bool lo = !unbounded_below(r), hi = !unbounded_above(r);
  const std::string lt_lo = r.min_open ? " < " : " <= ", lt_hi = r.max_open ? " < " : " <= ";
  if (lo && hi) return real_text(r.min) + lt_lo + v + lt_hi + real_text(r.max);
  if (lo) return v + (r.min_open ? " > " : " >= ") + real_text(r.min);
  if (hi) return v + lt_hi + real_text(r.max);
  return "any finite number";
}

int64_t parse_int(const std::string& option, const std::string& text, IntRange range) {
  int64_t out = 0;
  // from_chars takes no leading space or '+', and stops at the first non-digit: the
  // whole string must be consumed. Overflow is an error, never a wrap.
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  const bool whole = ec == std::errc() && p == text.data() + text.size() && !text.empty();
  if (!whole || out < range.min || out > range.max)
    fail(option, ": expected an integer (", describe(range, "value"), "), got '", text, "'");
  return out;
}

std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text, IntRange range) {
  std::vector<int64_t> out;
  for (size_t pos = 0; pos <= text.size();) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    out.push_back(parse_int(option, text.substr(pos, comma - pos), range));
    pos = comma + 1;
  }
  return out;
}

double parse_real(const std::string& option, const std::string& text, RealRange range) {
  double out = 0;
  // chars_format::general: decimal and exponent forms only ("0x1p-1" stops at 'x'), no
  // leading space or '+'. from_chars does accept "inf" and "nan": rejected as not finite.
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out, std::chars_format::general);
  const bool whole = ec == std::errc() && p == text.data() + text.size() && !text.empty() && std::isfinite(out);
  const bool in_range = whole && (range.min_open ? out > range.min : out >= range.min) &&
                        (range.max_open ? out < range.max : out <= range.max);
  if (!in_range) fail(option, ": expected a number (", describe(range, "value"), "), got '", text, "'");
  return out;
}

Args::Args(std::string command, std::string usage_line, std::string description)
    : command_(std::move(command)), usage_line_(std::move(usage_line)), description_(std::move(description)) {}

Args& Args::option(std::vector<std::string> names, std::string value_name, std::string help,
                   std::string default_value) {
  specs_.push_back({std::move(names),
                    std::move(value_name),
                    std::move(help),
                    std::move(default_value),
                    Kind::text,
                    {},
                    {},
                    Spec::File::none,
                    {},
                    current_group_});
  return *this;
}

Args& Args::int_option(std::vector<std::string> names, std::string value_name, std::string help, IntRange range,
                       std::string default_value) {
  specs_.push_back({std::move(names),
                    std::move(value_name),
                    std::move(help),
                    std::move(default_value),
                    Kind::integer,
                    range,
                    {},
                    Spec::File::none,
                    {},
                    current_group_});
  return *this;
}

Args& Args::real_option(std::vector<std::string> names, std::string value_name, std::string help, RealRange range,
                        std::string default_value) {
  specs_.push_back({std::move(names),
                    std::move(value_name),
                    std::move(help),
                    std::move(default_value),
                    Kind::real,
                    {},
                    range,
                    Spec::File::none,
                    {},
                    current_group_});
  return *this;
}

Args& Args::threads_option() {
  return int_option({"-t", "--threads"}, "N", "threads (0: one per core; at most 8 per hardware thread)",
                    {0, max_threads()}, "0");
}

Args& Args::flag(std::vector<std::string> names, std::string help) {
  specs_.push_back({std::move(names), "", std::move(help), "", Kind::toggle, {}, {}, Spec::File::none, {}, current_group_});
  return *this;
}

Args& Args::group(std::string title) {
  current_group_ = std::move(title);
  return *this;
}

const Args::Spec* Args::find(const std::string& name) const {
  for (const auto& s : specs_)
    for (const auto& n : s.names)
      if (n == name) return &s;
  return nullptr;
}

const Args::Spec& Args::declared(const std::string& name) const {
  const Spec* s = find(name);
  if (s == nullptr) fail("internal: option '", name, "' was not declared");
  return *s;
}

void Args::check_number(const Spec& s, const std::string& value) const {
  std::string names;
  for (const auto& n : s.names) names += (names.empty() ? "" : "/") + n;
  if (s.kind == Kind::integer) parse_int(names, value, s.int_range);
  if (s.kind == Kind::real) parse_real(names, value, s.real_range);
}

bool Args::parse(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(usage().c_str(), stdout);
      return false;
    }
    if (a.size() > 1 && a[0] == '-' &&
        !(a.size() > 1 && (std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.'))) {
      std::string value;
      bool inline_value = false;
      if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        inline_value = true;
      }
      const Spec* s = find(a);
      if (s == nullptr) fail(command_, ": unknown option '", a, "' (see squeeze ", command_, " --help)");
      if (s->kind == Kind::toggle) {
        if (inline_value) fail(command_, ": option '", a, "' takes no value");
        values_[key(*s)] = "1";
      } else {
        if (!inline_value) {
          if (i + 1 >= argc) fail(command_, ": option '", a, "' needs a value <", s->value_name, ">");
          value = argv[++i];
        }
        values_[key(*s)] = value;
        all_values_[key(*s)].push_back(value);
      }
    } else {
      positional_.push_back(a);
    }
  }
  // Every number, given or default, before the command does any work (loading a model
  // first would hide a typo behind minutes of loading, or behind a missing file).
  for (const auto& s : specs_) {
    if (s.kind != Kind::integer && s.kind != Kind::real) continue;
    auto it = all_values_.find(key(s));
    if (it != all_values_.end())
      for (const auto& v : it->second) check_number(s, v);
    else if (!s.default_value.empty())
      check_number(s, s.default_value);
  }
  check_files();
  return true;
}

Args::~Args() = default;
Args::Args(Args&&) noexcept = default;
Args& Args::operator=(Args&&) noexcept = default;

Args& Args::reads() {
  SQZ_CHECK(!specs_.empty() && specs_.back().kind == Kind::text, "Args::reads: no text option declared before it");
  specs_.back().file = Spec::File::input;
  return *this;
}

Args& Args::writes(std::string replaces) {
  SQZ_CHECK(!specs_.empty() && specs_.back().kind == Kind::text, "Args::writes: no text option declared before it");
  specs_.back().file = Spec::File::output;
  specs_.back().replaces = std::move(replaces);
  return *this;
}

Args& Args::reads_positional(size_t index) {
  positional_inputs_.push_back(index);
  return *this;
}

Args& Args::writes_positional(size_t index) {
  positional_outputs_.push_back(index);
  return *this;
}

void Args::check_files() {
  std::vector<std::string> inputs;
  struct Output {
    std::string name, path, replaces;
  };
  std::vector<Output> outputs;
  for (const Spec& s : specs_) {
    const auto it = all_values_.find(key(s));
    if (s.file == Spec::File::none || it == all_values_.end()) continue;
    for (const std::string& v : it->second) {
      if (s.file == Spec::File::input) inputs.push_back(v);
      if (s.file == Spec::File::output && !v.empty())
        outputs.push_back({key(s), v, s.replaces.empty() ? "" : get(s.replaces)});
    }
  }
  for (size_t i : positional_inputs_)
    if (i < positional_.size()) inputs.push_back(positional_[i]);
  for (size_t i : positional_outputs_)
    if (i < positional_.size()) outputs.push_back({"argument " + std::to_string(i + 1), positional_[i], ""});
  declared_inputs_ = std::make_unique<gguf::DeclaredInputs>(inputs);
  // Two outputs on one path: one would silently replace the other.
  std::error_code ec;
  const auto normal = [&](const std::string& p) { return std::filesystem::weakly_canonical(p, ec).string(); };
  for (size_t a = 0; a < outputs.size(); ++a)
    for (size_t b = a + 1; b < outputs.size(); ++b)
      if (normal(outputs[a].path) == normal(outputs[b].path))
        fail(command_, ": ", outputs[a].name, " and ", outputs[b].name, " both name '", outputs[b].path,
             "'; each output needs its own file");
  for (const Output& o : outputs) gguf::check_output_path(o.path, {.replaces = o.replaces});
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  const Spec& s = declared(name);
  auto it = all_values_.find(key(s));
  return it != all_values_.end() ? it->second : std::vector<std::string>{};
}

std::string Args::get(const std::string& name) const {
  const Spec& s = declared(name);
  auto it = values_.find(key(s));
  return it != values_.end() ? it->second : s.default_value;
}

bool Args::has(const std::string& name) const {
  const Spec* s = find(name);
  return s != nullptr && values_.count(key(*s)) > 0;
}

int64_t Args::get_int(const std::string& name) const {
  const Spec& s = declared(name);
  if (s.kind != Kind::integer) fail("internal: option '", name, "' is not declared with int_option");
  const std::string v = get(name);
  if (v.empty()) fail("missing ", name, " ", s.value_name);
  return parse_int(name, v, s.int_range);
}

int Args::get_int32(const std::string& name) const {
  const Spec& s = declared(name);
  if (s.kind != Kind::integer || s.int_range.min < std::numeric_limits<int>::min() ||
      s.int_range.max > std::numeric_limits<int>::max())
    fail("internal: option '", name, "' is not declared with an int-sized range");
  return static_cast<int>(get_int(name));
}

double Args::get_double(const std::string& name) const {
  const Spec& s = declared(name);
  if (s.kind != Kind::real) fail("internal: option '", name, "' is not declared with real_option");
  const std::string v = get(name);
  if (v.empty()) fail("missing ", name, " ", s.value_name);
  return parse_real(name, v, s.real_range);
}

const std::string& Args::positional_at(size_t i, const std::string& what) const {
  if (i >= positional_.size()) fail(command_, ": missing ", what, " (usage: squeeze ", usage_line_, ")");
  return positional_[i];
}

std::string Args::usage() const {
  std::string out = "usage: squeeze " + usage_line_ + "\n\n" + description_ + "\n";
  for (size_t i = 0; i < specs_.size(); ++i) {
    const Spec& s = specs_[i];
    if (i == 0 || s.group != specs_[i - 1].group) out += "\n" + (s.group.empty() ? "options" : s.group) + ":\n";
    std::string names;
    for (const auto& n : s.names) names += (names.empty() ? "" : ", ") + n;
    if (s.kind != Kind::toggle) names += " " + s.value_name;
    std::string notes;
    if (s.kind == Kind::integer) notes = describe(s.int_range, s.value_name);
    if (s.kind == Kind::real) notes = describe(s.real_range, s.value_name);
    if (!s.default_value.empty()) notes += (notes.empty() ? "default " : "; default ") + s.default_value;
    char line[512];
    std::snprintf(line, sizeof line, "  %-28s %s", names.c_str(), s.help.c_str());
    out += line;
    if (!notes.empty()) out += " (" + notes + ")";
    out += "\n";
  }
  out += "  -h, --help                   show this help\n";
  return out;
}

}  // namespace squeeze::cli
