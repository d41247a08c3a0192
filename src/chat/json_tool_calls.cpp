// chat/json_tool_calls.cpp — see json_tool_calls.h.
#include "chat/json_tool_calls.h"

#include "chat/text_scan.h"
#include "chat/value.h"
#include "core/bounded_json.h"

namespace squeeze::chat {
namespace {

constexpr JsonLimits kLimits{.max_depth = 64, .max_object_keys = 4096};

// The end of the JSON object starting at s[i] == '{' (braces counted outside strings), or
// npos when it does not close.
size_t object_end(std::string_view s, size_t i) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t k = i; k < s.size(); ++k) {
    const char c = s[k];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return k + 1;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::optional<ToolCall> json_tool_call(std::string_view text) {
  const BoundedJson<Json> parsed = parse_json_bounded<Json>(scan::trim(text), kLimits);
  if (!parsed.error.empty() || !parsed.value.is_object()) return std::nullopt;
  const Json& j = parsed.value;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  Json arguments = Json::object();
  if (args != j.end()) {
    if (args->is_string()) {  // arguments as a JSON string, as OpenAI's own wire format has them
      const BoundedJson<Json> inner = parse_json_bounded<Json>(args->get<std::string>(), kLimits);
      if (!inner.error.empty() || !inner.value.is_object()) return std::nullopt;
      arguments = inner.value;
    } else if (args->is_object()) {
      arguments = *args;
    } else if (!args->is_null()) {
      return std::nullopt;
    }
  }
  return ToolCall{.name = name->get<std::string>(),
                  .arguments = arguments.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

std::optional<std::string> json_arguments(std::string_view text) {
  const BoundedJson<Json> parsed = parse_json_bounded<Json>(scan::trim(text), kLimits);
  if (!parsed.error.empty() || !parsed.value.is_object()) return std::nullopt;
  return parsed.value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::optional<std::vector<ToolCall>> json_tool_calls(std::string_view text) {
  std::vector<ToolCall> calls;
  size_t i = 0;
  while (true) {
    while (i < text.size() && (scan::is_space(text[i]) || (text[i] == ';' && !calls.empty()))) ++i;
    if (i == text.size()) break;
    if (text[i] != '{') return std::nullopt;
    const size_t end = object_end(text, i);
    if (end == std::string_view::npos) return std::nullopt;
    auto call = json_tool_call(text.substr(i, end - i));
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    i = end;
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace squeeze::chat
