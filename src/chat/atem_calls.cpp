// chat/atem_calls.cpp — a recursive-descent reader of ATEM call blocks over a cursor; any
// deviation it does not know returns nullopt, so bad markup degrades to text.
#include "chat/atem_calls.h"

#include <string>
#include <utility>

#include "core/bounded_json.h"

namespace squeeze::chat {
namespace {

constexpr std::string_view kCallsOpen = "<atem:function_calls>";
constexpr std::string_view kCallsClose = "</atem:function_calls>";
constexpr std::string_view kInvokeOpen = "<atem:invoke";
constexpr std::string_view kInvokeClose = "</atem:invoke>";
constexpr std::string_view kParamOpen = "<atem:parameter";
constexpr std::string_view kParamClose = "</atem:parameter>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool done() const { return i_ >= s_.size(); }
  size_t pos() const { return i_; }
  void seek(size_t i) { i_ = i; }
  std::string_view text() const { return s_; }
  void skip_space() {
    while (i_ < s_.size() && is_space(s_[i_])) ++i_;
  }
  bool at(std::string_view lit) const { return s_.substr(i_).starts_with(lit); }
  bool eat(std::string_view lit) {
    if (!at(lit)) return false;
    i_ += lit.size();
    return true;
  }
  // A quoted attribute value: a non-empty name on one line, without markup characters.
  std::optional<std::string_view> quoted_name() {
    if (!eat("\"")) return std::nullopt;
    const size_t end = s_.find('"', i_);
    if (end == std::string_view::npos || end == i_) return std::nullopt;
    const std::string_view name = s_.substr(i_, end - i_);
    if (name.find_first_of("<>\n\r") != std::string_view::npos) return std::nullopt;
    i_ = end + 1;
    return name;
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

// A value runs to the first `</atem:parameter>` that the grammar may continue after; a
// closer followed by anything else is part of the value (a file holding ATEM markup).
std::optional<std::string_view> value_until_closer(Cursor& c) {
  const std::string_view s = c.text();
  const size_t start = c.pos();
  for (size_t at = s.find(kParamClose, start); at != std::string_view::npos; at = s.find(kParamClose, at + 1)) {
    Cursor next(s);
    next.seek(at + kParamClose.size());
    next.skip_space();
    if (next.at(kParamOpen) || next.at(kInvokeClose)) {
      c.seek(at + kParamClose.size());
      return s.substr(start, at - start);
    }
  }
  return std::nullopt;
}

// `<atem:parameter name="x">` or the malformed `<atem:parameter="x">`, through the value's end.
std::optional<std::pair<std::string_view, std::string_view>> parameter(Cursor& c) {
  if (!c.eat(kParamOpen)) return std::nullopt;
  std::optional<std::string_view> name;
  if (c.eat("=")) {
    name = c.quoted_name();
  } else {
    const size_t before = c.pos();
    c.skip_space();
    if (c.pos() == before || !c.eat("name=")) return std::nullopt;
    name = c.quoted_name();
  }
  if (!name) return std::nullopt;
  c.skip_space();
  if (!c.eat(">")) return std::nullopt;
  const auto value = value_until_closer(c);
  if (!value) return std::nullopt;
  return std::pair{*name, *value};
}

// Deeper JSON is kept as text: the values a tool takes are shallow, and a bound keeps the
// recursive JSON printer off the stack's limit on hostile input.
constexpr int kMaxJsonDepth = 128;

Json typed_value(std::string_view text, ParamKind kind) {
  if (kind != ParamKind::string) {
    const std::string_view t = trim(text);
    if (!t.empty()) {
      BoundedJson<Json> v = parse_json_bounded<Json>(t, {.max_depth = kMaxJsonDepth});
      if (v.error.empty()) return std::move(v.value);
    }
  }
  return Json(std::string(text));
}

struct Invoke {
  std::string name;
  std::vector<std::pair<std::string_view, std::string_view>> params;
};

// `read.path` for read(path=...) when its parameter tag was swallowed: only when the tools
// confirm that reading (a namespaced tool `read.path` would be a call of its own).
std::optional<std::pair<std::string, std::string_view>> split_swallowed(std::string_view name,
                                                                        const ToolParams& tools) {
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || tools.has_tool(name)) return std::nullopt;
  const std::string_view tool = name.substr(0, dot), param = name.substr(dot + 1);
  if (tool.empty() || param.empty() || tools.kind(tool, param) == ParamKind::unknown) return std::nullopt;
  return std::pair{std::string(tool), param};
}

std::optional<Invoke> invoke(Cursor& c, const ToolParams& tools) {
  if (!c.eat(kInvokeOpen)) return std::nullopt;
  const size_t before = c.pos();
  c.skip_space();
  if (c.pos() == before || !c.eat("name=")) return std::nullopt;
  const auto name = c.quoted_name();
  if (!name) return std::nullopt;
  c.skip_space();
  if (!c.eat(">")) return std::nullopt;
  Invoke out{std::string(*name), {}};

  const size_t body = c.pos();
  c.skip_space();
  if (!c.at(kParamOpen) && !c.at(kInvokeClose)) {
    // The value starts after the invoke tag's own line break (which precedes the
    // swallowed tag in the canonical layout); its other spaces are the value's.
    c.seek(body);
    c.eat("\n");
    const auto value = value_until_closer(c);
    const auto split = value ? split_swallowed(*name, tools) : std::nullopt;
    if (!split) return std::nullopt;
    out.name = split->first;
    out.params.emplace_back(split->second, *value);
  }
  for (;;) {
    c.skip_space();
    if (c.eat(kInvokeClose)) return out;
    auto p = parameter(c);
    if (!p) return std::nullopt;
    out.params.push_back(*p);
  }
}

ToolCall to_call(const Invoke& inv, const ToolParams& tools) {
  Json args = Json::object();
  for (const auto& [name, text] : inv.params) args[std::string(name)] = typed_value(text, tools.kind(inv.name, name));
  // Strings are the model's raw bytes: invalid UTF-8 becomes U+FFFD rather than an error.
  return ToolCall{inv.name, args.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

}  // namespace

std::optional<std::vector<ToolCall>> parse_atem_calls(std::string_view body, const ToolParams& tools) {
  try {
    Cursor c(body);
    std::vector<ToolCall> calls;
    c.skip_space();
    while (!c.done()) {
      if (c.eat(kCallsOpen)) {
        size_t inside = 0;
        for (c.skip_space(); !c.eat(kCallsClose); c.skip_space()) {
          const auto inv = invoke(c, tools);
          if (!inv) return std::nullopt;
          calls.push_back(to_call(*inv, tools));
          ++inside;
        }
        if (inside == 0) return std::nullopt;
      } else {
        const auto inv = invoke(c, tools);  // an invoke without its wrapper
        if (!inv) return std::nullopt;
        calls.push_back(to_call(*inv, tools));
      }
      c.skip_space();
    }
    if (calls.empty()) return std::nullopt;
    return calls;
  } catch (const std::exception&) {
    // The JSON library's limits (e.g. numbers it cannot hold) must not fail the request.
    return std::nullopt;
  }
}

}  // namespace squeeze::chat
