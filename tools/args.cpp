// tools/args.cpp
#include "args.h"

#include <charconv>
#include <cstdio>

#include "core/error.h"

namespace squeeze::cli {

Args::Args(std::string command, std::string usage_line, std::string description)
    : command_(std::move(command)), usage_line_(std::move(usage_line)), description_(std::move(description)) {}

Args& Args::option(std::vector<std::string> names, std::string value_name, std::string help,
                   std::string default_value) {
  specs_.push_back({std::move(names), std::move(value_name), std::move(help), std::move(default_value), false});
  return *this;
}

Args& Args::flag(std::vector<std::string> names, std::string help) {
  specs_.push_back({std::move(names), "", std::move(help), "", true});
  return *this;
}

const Args::Spec* Args::find(const std::string& name) const {
  for (const auto& s : specs_)
    for (const auto& n : s.names)
      if (n == name) return &s;
  return nullptr;
}

bool Args::parse(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(usage().c_str(), stdout);
      return false;
    }
    if (a.size() > 1 && a[0] == '-' && !(a.size() > 1 && (std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.'))) {
      std::string value;
      bool inline_value = false;
      if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        inline_value = true;
      }
      const Spec* s = find(a);
      if (s == nullptr) fail(command_, ": unknown option '", a, "' (see squeeze ", command_, " --help)");
      if (s->is_switch) {
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
  return true;
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  const Spec* s = find(name);
  if (s == nullptr) fail("internal: option '", name, "' was not declared");
  auto it = all_values_.find(key(*s));
  return it != all_values_.end() ? it->second : std::vector<std::string>{};
}

std::string Args::get(const std::string& name) const {
  const Spec* s = find(name);
  if (s == nullptr) fail("internal: option '", name, "' was not declared");
  auto it = values_.find(key(*s));
  return it != values_.end() ? it->second : s->default_value;
}

bool Args::has(const std::string& name) const {
  const Spec* s = find(name);
  return s != nullptr && values_.count(key(*s)) > 0;
}

int64_t Args::get_int(const std::string& name) const {
  const std::string v = get(name);
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size()) fail(command_, ": option ", name, " expects an integer, got '", v, "'");
  return out;
}

double Args::get_double(const std::string& name) const {
  const std::string v = get(name);
  try {
    size_t used = 0;
    const double out = std::stod(v, &used);
    if (used == v.size()) return out;
  } catch (...) {
  }
  fail(command_, ": option ", name, " expects a number, got '", v, "'");
}

const std::string& Args::positional_at(size_t i, const std::string& what) const {
  if (i >= positional_.size()) fail(command_, ": missing ", what, " (usage: squeeze ", usage_line_, ")");
  return positional_[i];
}

std::string Args::usage() const {
  std::string out = "usage: squeeze " + usage_line_ + "\n\n" + description_ + "\n";
  if (!specs_.empty()) out += "\noptions:\n";
  for (const auto& s : specs_) {
    std::string names;
    for (const auto& n : s.names) names += (names.empty() ? "" : ", ") + n;
    if (!s.is_switch) names += " " + s.value_name;
    char line[512];
    std::snprintf(line, sizeof line, "  %-28s %s", names.c_str(), s.help.c_str());
    out += line;
    if (!s.default_value.empty()) out += " (default " + s.default_value + ")";
    out += "\n";
  }
  out += "  -h, --help                   show this help\n";
  return out;
}

}  // namespace squeeze::cli
