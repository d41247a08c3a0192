// chat/llama3_output.cpp — see llama3_output.h.
#include "chat/llama3_output.h"

#include <cctype>
#include <optional>

#include "chat/json_tool_calls.h"
#include "chat/text_scan.h"
#include "chat/value.h"

namespace squeeze::chat {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

// A Python literal the built-in calls pass: a quoted string (backslash escapes as Python
// reads the common ones), an integer or decimal number, True / False / None. Consumes it
// from `s`; nullopt for anything else.
std::optional<Json> python_literal(std::string_view& s) {
  if (s.empty()) return std::nullopt;
  const char q = s.front();
  if (q == '"' || q == '\'') {
    std::string v;
    for (size_t i = 1; i < s.size(); ++i) {
      char c = s[i];
      if (c == q) {
        s.remove_prefix(i + 1);
        return Json(v);
      }
      if (c == '\\' && i + 1 < s.size()) {
        c = s[++i];
        c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
      }
      v += c;
    }
    return std::nullopt;  // unterminated
  }
  for (const auto& [word, value] : {std::pair<std::string_view, Json>{"True", true}, {"False", false}, {"None", nullptr}})
    if (s.starts_with(word)) {
      s.remove_prefix(word.size());
      return value;
    }
  size_t n = 0;
  while (n < s.size() && (std::isdigit(static_cast<unsigned char>(s[n])) || s[n] == '-' || s[n] == '+' || s[n] == '.' ||
                          s[n] == 'e' || s[n] == 'E'))
    ++n;
  if (n == 0) return std::nullopt;
  const Json number = Json::parse(s.substr(0, n), nullptr, /*allow_exceptions=*/false);
  if (!number.is_number()) return std::nullopt;
  s.remove_prefix(n);
  return number;
}

// Llama 3.1's built-in tools, after `<|python_tag|>`: `name.call(key=value, ...)` with
// Python literals (`brave_search.call(query="...")`), as one call whose arguments are the
// keywords. nullopt for anything else.
std::optional<ToolCall> builtin_tool_call(std::string_view text) {
  text = scan::trim(text);
  size_t n = 0;
  while (n < text.size() && (std::isalnum(static_cast<unsigned char>(text[n])) || text[n] == '_')) ++n;
  if (n == 0 || !text.substr(n).starts_with(".call(") || !text.ends_with(")")) return std::nullopt;
  ToolCall call{.name = std::string(text.substr(0, n)), .arguments = {}};
  std::string_view args = text.substr(n + 6, text.size() - n - 7);
  Json object = Json::object();
  for (args = scan::trim(args); !args.empty();) {
    size_t k = 0;
    while (k < args.size() && (std::isalnum(static_cast<unsigned char>(args[k])) || args[k] == '_')) ++k;
    if (k == 0) return std::nullopt;
    const std::string key(args.substr(0, k));
    args = scan::trim(args.substr(k));
    if (!args.starts_with("=")) return std::nullopt;
    args = scan::trim(args.substr(1));
    auto value = python_literal(args);
    if (!value || object.contains(key)) return std::nullopt;
    object[key] = std::move(*value);
    args = scan::trim(args);
    if (args.starts_with(",")) args = scan::trim(args.substr(1));
    else if (!args.empty()) return std::nullopt;
  }
  call.arguments = object.dump();
  return call;
}

}  // namespace

ParsedOutput Llama3OutputParser::feed(std::string_view chunk) {
  ParsedOutput out;
  if (finished_) return out;
  if (state_ == State::content) {
    out.content = chunk;
    return out;
  }
  buf_.append(chunk);
  run(false, out);
  return out;
}

ParsedOutput Llama3OutputParser::finish() {
  ParsedOutput out;
  if (finished_) return out;
  run(true, out);
  finished_ = true;
  return out;
}

void Llama3OutputParser::run(bool at_end, ParsedOutput& out) {
  if (state_ == State::start) {
    size_t j = 0;
    while (j < buf_.size() && scan::is_space(buf_[j])) ++j;
    const std::string_view tail = std::string_view(buf_).substr(j);
    if (tail.starts_with(kPythonTag) || tail.starts_with("{")) {
      state_ = State::maybe_call;
    } else if (at_end || !kPythonTag.starts_with(tail)) {
      state_ = State::content;  // an answer (empty tail: only at the end)
      out.content = std::move(buf_);
      buf_.clear();
      return;
    } else {
      return;  // whitespace, or the start of <|python_tag|>: undecided
    }
  }
  if (state_ != State::maybe_call || !at_end) return;
  std::string_view text = buf_;
  while (!text.empty() && scan::is_space(text.front())) text.remove_prefix(1);
  const bool tagged = text.starts_with(kPythonTag);
  if (tagged) text.remove_prefix(kPythonTag.size());
  if (auto calls = json_tool_calls(text)) {
    out.tool_calls = std::move(*calls);
  } else if (auto builtin = tagged ? builtin_tool_call(text) : std::nullopt) {
    out.tool_calls.push_back(std::move(*builtin));
  } else {
    out.content = std::move(buf_);
  }
  buf_.clear();
}

ParsedOutput parse_llama3_output(std::string_view text) {
  Llama3OutputParser p;
  ParsedOutput out = p.feed(text);
  out.append(p.finish());
  return out;
}

}  // namespace squeeze::chat
