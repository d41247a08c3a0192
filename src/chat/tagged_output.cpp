// chat/tagged_output.cpp — see tagged_output.h. As the Muse Glimmer parser: a small state
// machine over undecided text that decides only what no continuation can change.
#include "chat/tagged_output.h"

#include <algorithm>

#include "chat/json_tool_calls.h"
#include "chat/text_scan.h"

namespace squeeze::chat {
namespace {

constexpr std::string_view kThink = "<think>";
constexpr std::string_view kThinkEnd = "</think>";
constexpr std::string_view kCall = "<tool_call>";
constexpr std::string_view kCallEnd = "</tool_call>";

}  // namespace

TaggedOutputParser::TaggedOutputParser(bool starts_in_thinking)
    : state_(starts_in_thinking ? State::thinking : State::start) {}

ParsedOutput TaggedOutputParser::feed(std::string_view chunk) {
  ParsedOutput out;
  if (finished_) return out;
  buf_.append(chunk);
  run(false, out);
  return out;
}

ParsedOutput TaggedOutputParser::finish() {
  ParsedOutput out;
  if (finished_) return out;
  run(true, out);
  finished_ = true;
  buf_.clear();
  pos_ = 0;
  return out;
}

void TaggedOutputParser::run(bool at_end, ParsedOutput& out) {
  while (step(at_end, out)) {
  }
  // Keep the buffer short: drop what is decided.
  if (pos_ > 4096 && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
}

// The thinking's text, less its leading newlines and (until more text follows) its
// trailing ones; `last`: the thinking ends here, its trailing newlines are dropped.
void TaggedOutputParser::emit_reasoning(std::string_view text, bool last, ParsedOutput& out) {
  if (!reasoning_started_) {
    while (!text.empty() && text.front() == '\n') text.remove_prefix(1);
    if (text.empty()) return;
    reasoning_started_ = true;
  }
  size_t body = text.size();
  while (body > 0 && text[body - 1] == '\n') --body;
  if (body > 0) {
    out.reasoning += held_newlines_;
    out.reasoning.append(text.substr(0, body));
    held_newlines_.clear();
  }
  if (last) {
    held_newlines_.clear();
  } else {
    held_newlines_.append(text.substr(body));
  }
}

bool TaggedOutputParser::step(bool at_end, ParsedOutput& out) {
  const std::string_view rest = std::string_view(buf_).substr(pos_);
  switch (state_) {
    case State::start: {
      // `<think>` may open the turn, after whitespace.
      size_t j = 0;
      while (j < rest.size() && scan::is_space(rest[j])) ++j;
      const std::string_view tail = rest.substr(j);
      if (tail.starts_with(kThink)) {
        pos_ += j + kThink.size();
        state_ = State::thinking;
        return true;
      }
      if (!at_end && kThink.starts_with(tail)) return false;  // undecided (empty included)
      state_ = State::content;
      return true;
    }
    case State::thinking: {
      const size_t k = rest.find(kThinkEnd);
      if (k != std::string_view::npos) {
        emit_reasoning(rest.substr(0, k), true, out);
        pos_ += k + kThinkEnd.size();
        state_ = State::content;
        strip_newlines_ = true;
        return true;
      }
      const size_t safe = at_end ? rest.size() : rest.size() - scan::partial_suffix(rest, kThinkEnd);
      emit_reasoning(rest.substr(0, safe), at_end, out);
      pos_ += safe;
      return false;
    }
    case State::content: {
      size_t skip = 0;
      if (strip_newlines_ || strip_space_) {
        while (skip < rest.size() && (strip_space_ ? scan::is_space(rest[skip]) : rest[skip] == '\n')) ++skip;
        pos_ += skip;
        if (skip == rest.size()) return false;  // all stripped so far
        strip_newlines_ = strip_space_ = false;
        return true;
      }
      const size_t k = rest.find(kCall);
      if (k != std::string_view::npos) {
        out.content.append(rest.substr(0, k));
        pos_ += k + kCall.size();
        state_ = State::tool_call;
        return true;
      }
      const size_t safe = at_end ? rest.size() : rest.size() - scan::partial_suffix(rest, kCall);
      out.content.append(rest.substr(0, safe));
      pos_ += safe;
      return false;
    }
    case State::tool_call: {
      const size_t k = rest.find(kCallEnd);
      if (k == std::string_view::npos && !at_end) return false;
      const std::string_view body = rest.substr(0, k == std::string_view::npos ? rest.size() : k);
      if (auto call = json_tool_call(body)) {
        out.tool_calls.push_back(std::move(*call));
        strip_space_ = true;
      } else {  // not a call: the text as the model wrote it
        out.content.append(kCall);
        out.content.append(body);
        if (k != std::string_view::npos) out.content.append(kCallEnd);
      }
      pos_ += k == std::string_view::npos ? rest.size() : k + kCallEnd.size();
      state_ = State::content;
      return k != std::string_view::npos;
    }
  }
  return false;
}

ParsedOutput parse_tagged_output(std::string_view text, bool starts_in_thinking) {
  TaggedOutputParser p(starts_in_thinking);
  ParsedOutput out = p.feed(text);
  out.append(p.finish());
  return out;
}

}  // namespace squeeze::chat
