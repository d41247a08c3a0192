// chat/llama3_output.cpp — see llama3_output.h.
#include "chat/llama3_output.h"

#include "chat/json_tool_calls.h"
#include "chat/text_scan.h"

namespace squeeze::chat {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

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
  if (text.starts_with(kPythonTag)) text.remove_prefix(kPythonTag.size());
  if (auto calls = json_tool_calls(text)) {
    out.tool_calls = std::move(*calls);
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
