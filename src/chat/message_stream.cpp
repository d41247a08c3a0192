// chat/message_stream.cpp — see message_stream.h.
#include "chat/message_stream.h"

#include <utility>

namespace squeeze::chat {

using scan::Match;

namespace {
constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kAssistant = "assistant";
}  // namespace

ParsedOutput MessageStreamParser::feed(std::string_view chunk) {
  ParsedOutput out;
  if (finished_) return out;
  buf_.append(chunk);
  run(false, out);
  return out;
}

ParsedOutput MessageStreamParser::finish() {
  ParsedOutput out;
  if (finished_) return out;
  run(true, out);
  finished_ = true;
  return out;
}

void MessageStreamParser::run(bool at_end, ParsedOutput& out) {
  for (bool progressed = true; progressed;) {
    switch (state_) {
      case State::header: progressed = step_header(at_end); break;
      case State::role: progressed = step_role(at_end); break;
      case State::after_end: progressed = step_after_end(at_end); break;
      case State::body: progressed = step_body(at_end, out); break;
      case State::done:
        pos_ = buf_.size();
        progressed = false;
        break;
    }
  }
  buf_.erase(0, pos_);
  pos_ = 0;
}

bool MessageStreamParser::step_header(bool at_end) {
  Header h = header_at(buf_, pos_, at_end);
  if (h.match == Match::partial && !at_end) return false;
  if (h.match == Match::yes) {
    pos_ = h.end;
    open_message(std::move(h.route));
    return true;
  }
  // Not a header: the prompt's `<|start|>assistant` written again, or plain text.
  const Match start = scan::match_at(buf_, pos_, kStart);
  if (start == Match::yes) {
    pos_ += kStart.size();
    state_ = State::role;
    return true;
  }
  if (start == Match::partial && !at_end) return false;
  open_message({});
  return true;
}

bool MessageStreamParser::step_role(bool at_end) {
  const Match m = scan::match_at(buf_, pos_, kAssistant);
  if (m == Match::partial && !at_end) return false;
  if (m == Match::yes) {
    pos_ += kAssistant.size();
    state_ = State::header;
  } else {
    state_ = State::done;  // the model began another role's turn: its own has ended
  }
  return true;
}

bool MessageStreamParser::step_after_end(bool at_end) {
  const Match m = scan::match_at(buf_, pos_, kStart);
  if (m == Match::partial && !at_end) return false;
  if (m == Match::yes) {
    pos_ += kStart.size();
    state_ = State::role;
  } else {
    state_ = State::header;  // a message without its `<|start|>assistant`
  }
  return true;
}

bool MessageStreamParser::step_body(bool at_end, ParsedOutput& out) {
  const std::string_view s = buf_;
  // Emits the body up to i and holds the rest: s[i] may begin markup.
  const auto hold = [&](size_t i) {
    emit(s.substr(pos_, i - pos_), out);
    pos_ = i;
    return false;
  };
  for (size_t i = pos_; i < s.size(); ++i) {
    if (s[i] == '<') {
      for (const EndMarker& marker : markers_) {
        const Match m = scan::match_at(s, i, marker.text);
        if (m == Match::yes) {
          emit(s.substr(pos_, i - pos_), out);
          close_message(out);
          pos_ = i + marker.text.size();
          state_ = marker.next == Next::message ? State::after_end
                   : marker.next == Next::role  ? State::role
                                                : State::done;
          return true;
        }
        if (m == Match::partial && !at_end) return hold(i);
      }
    }
    Header sw = switch_at(s, i);
    if (sw.match == Match::yes) {
      emit(s.substr(pos_, i - pos_), out);
      close_message(out);
      pos_ = sw.end;
      open_message(std::move(sw.route));
      return true;
    }
    if (sw.match == Match::partial && !at_end) return hold(i);
  }
  emit(s.substr(pos_), out);
  pos_ = s.size();
  if (!at_end) return false;
  close_message(out);
  state_ = State::done;
  return true;
}

void MessageStreamParser::open_message(Route route) {
  state_ = State::body;
  route_ = std::move(route);
}

void MessageStreamParser::emit(std::string_view text, ParsedOutput& out) {
  switch (route_.channel) {
    case Channel::reasoning: out.reasoning.append(text); break;
    case Channel::content: out.content.append(text); break;
    case Channel::tool: tool_body_.append(text); break;
  }
}

void MessageStreamParser::close_message(ParsedOutput& out) {
  if (route_.channel == Channel::tool && !read_calls(route_, tool_body_, out)) {
    // Not a call after all: what the model wrote stays visible where its channel sends it.
    (route_.fallback == Channel::reasoning ? out.reasoning : out.content) += tool_body_;
  }
  tool_body_.clear();
  route_ = Route{};
}

}  // namespace squeeze::chat
