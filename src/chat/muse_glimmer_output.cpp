// chat/muse_glimmer_output.cpp — the message framing as a small state machine over a
// buffer of undecided text. Every decision is taken only once the text seen so far fixes
// it (a match, or a mismatch no continuation can undo), so a split never changes the
// result; at the end, a pattern still incomplete counts as a mismatch.
#include "chat/muse_glimmer_output.h"

#include <algorithm>
#include <utility>

#include "chat/atem_calls.h"

namespace squeeze::chat {
namespace {

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kEom = "<|eom|>";
constexpr std::string_view kEot = "<|eot|>";
constexpr std::string_view kAssistant = "assistant";
constexpr std::string_view kTo = "to=";

// Bounds on what a header may hold, so undecided text stays short: recipients are tool
// names (OpenAI allows 64 bytes), and a header has a space or two.
constexpr size_t kMaxRecipient = 256;
constexpr size_t kMaxHeaderSpace = 16;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

enum class Match { no, partial, yes };

Match match_at(std::string_view s, size_t i, std::string_view lit) {
  const std::string_view rest = s.substr(std::min(i, s.size()));
  if (rest.size() >= lit.size()) return rest.starts_with(lit) ? Match::yes : Match::no;
  return lit.starts_with(rest) ? Match::partial : Match::no;
}

struct Found {
  Match match = Match::no;
  size_t end = 0;              // just past the pattern (yes)
  std::string_view recipient;  // (yes)
};

// A pattern's outcome without a match's details.
Found verdict(Match m) { return Found{m, 0, {}}; }

// A recipient name from i: bytes that are neither space nor '<'; it ends at either.
Found recipient_at(std::string_view s, size_t i) {
  size_t k = i;
  while (k < s.size() && !is_space(s[k]) && s[k] != '<') {
    if (k - i == kMaxRecipient) return {};
    ++k;
  }
  if (k == s.size()) return verdict(Match::partial);
  if (k == i) return {};
  return {Match::yes, k, s.substr(i, k - i)};
}

size_t skip_space(std::string_view s, size_t i, size_t limit) {
  const size_t stop = std::min(s.size(), i + limit + 1);
  while (i < stop && is_space(s[i])) ++i;
  return i;
}

// After `<|start|>assistant`: [space] [to=RECIPIENT [space]] <|message|>
Found header_at(std::string_view s, size_t i) {
  const size_t j = skip_space(s, i, kMaxHeaderSpace);
  if (j - i > kMaxHeaderSpace) return {};
  if (j == s.size()) return verdict(Match::partial);
  if (const Match to = match_at(s, j, kTo); to != Match::no) {
    if (to == Match::partial) return verdict(Match::partial);
    const Found name = recipient_at(s, j + kTo.size());
    if (name.match != Match::yes) return name;
    const size_t k = skip_space(s, name.end, kMaxHeaderSpace);
    if (k - name.end > kMaxHeaderSpace) return {};
    if (k == s.size()) return verdict(Match::partial);
    const Match m = match_at(s, k, kMessage);
    if (m != Match::yes) return verdict(m);
    return {Match::yes, k + kMessage.size(), name.recipient};
  }
  const Match m = match_at(s, j, kMessage);
  if (m != Match::yes) return verdict(m);
  return {Match::yes, j + kMessage.size(), {}};
}

// Inside a body, a recipient switch without the closing token: SPACE to=NAME<|message|>.
Found switch_at(std::string_view s, size_t i) {
  const Match to = match_at(s, i + 1, kTo);
  if (to != Match::yes) return verdict(to);
  const Found name = recipient_at(s, i + 1 + kTo.size());
  if (name.match != Match::yes) return name;
  const Match m = match_at(s, name.end, kMessage);
  if (m != Match::yes) return verdict(m);
  return {Match::yes, name.end + kMessage.size(), name.recipient};
}

}  // namespace

MuseGlimmerOutputParser::MuseGlimmerOutputParser(ToolParams tools) : tools_(std::move(tools)) {}

ParsedOutput MuseGlimmerOutputParser::feed(std::string_view chunk) {
  ParsedOutput out;
  if (finished_) return out;
  buf_.append(chunk);
  run(false, out);
  return out;
}

ParsedOutput MuseGlimmerOutputParser::finish() {
  ParsedOutput out;
  if (finished_) return out;
  run(true, out);
  finished_ = true;
  return out;
}

void MuseGlimmerOutputParser::run(bool at_end, ParsedOutput& out) {
  for (bool progressed = true; progressed;) {
    switch (state_) {
      case State::header: progressed = step_header(at_end); break;
      case State::role: progressed = step_role(at_end); break;
      case State::after_eom: progressed = step_after_eom(at_end); break;
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

bool MuseGlimmerOutputParser::step_header(bool at_end) {
  const Found h = header_at(buf_, pos_);
  if (h.match == Match::partial && !at_end) return false;
  if (h.match == Match::yes) {
    open_message(h.recipient);
    pos_ = h.end;
    return true;
  }
  // Not a header: the prompt's `<|start|>assistant` written again, or plain text.
  const Match start = match_at(buf_, pos_, kStart);
  if (start == Match::yes) {
    pos_ += kStart.size();
    state_ = State::role;
    return true;
  }
  if (start == Match::partial && !at_end) return false;
  open_message({});
  return true;
}

bool MuseGlimmerOutputParser::step_role(bool at_end) {
  const Match m = match_at(buf_, pos_, kAssistant);
  if (m == Match::partial && !at_end) return false;
  if (m == Match::yes) {
    pos_ += kAssistant.size();
    state_ = State::header;
  } else {
    state_ = State::done;  // the model began another role's turn: its own has ended
  }
  return true;
}

bool MuseGlimmerOutputParser::step_after_eom(bool at_end) {
  const Match m = match_at(buf_, pos_, kStart);
  if (m == Match::partial && !at_end) return false;
  if (m == Match::yes) {
    pos_ += kStart.size();
    state_ = State::role;
  } else {
    state_ = State::header;  // a message without its `<|start|>assistant`
  }
  return true;
}

bool MuseGlimmerOutputParser::step_body(bool at_end, ParsedOutput& out) {
  const std::string_view s = buf_;
  for (size_t i = pos_; i < s.size(); ++i) {
    if (s[i] == '<') {
      for (const auto& [token, next] : {std::pair{kEom, State::after_eom}, std::pair{kEot, State::done},
                                        std::pair{kStart, State::role}}) {
        const Match m = match_at(s, i, token);
        if (m == Match::yes) {
          emit(s.substr(pos_, i - pos_), out);
          close_message(out);
          pos_ = i + token.size();
          state_ = next;
          return true;
        }
        if (m == Match::partial && !at_end) {
          emit(s.substr(pos_, i - pos_), out);
          pos_ = i;
          return false;
        }
      }
    } else if (is_space(s[i])) {
      const Found sw = switch_at(s, i);
      if (sw.match == Match::yes) {
        emit(s.substr(pos_, i - pos_), out);
        close_message(out);
        pos_ = sw.end;
        open_message(sw.recipient);
        return true;
      }
      if (sw.match == Match::partial && !at_end) {
        emit(s.substr(pos_, i - pos_), out);
        pos_ = i;
        return false;
      }
    }
  }
  emit(s.substr(pos_), out);
  pos_ = s.size();
  if (!at_end) return false;
  close_message(out);
  state_ = State::done;
  return true;
}

void MuseGlimmerOutputParser::open_message(std::string_view recipient) {
  state_ = State::body;
  if (recipient == "self") channel_ = Channel::reasoning;
  else if (recipient.empty() || recipient == "user") channel_ = Channel::content;
  else channel_ = Channel::tool;
}

void MuseGlimmerOutputParser::emit(std::string_view text, ParsedOutput& out) {
  switch (channel_) {
    case Channel::reasoning: out.reasoning.append(text); break;
    case Channel::content: out.content.append(text); break;
    case Channel::tool: tool_body_.append(text); break;
  }
}

void MuseGlimmerOutputParser::close_message(ParsedOutput& out) {
  if (channel_ != Channel::tool) return;
  if (auto calls = parse_atem_calls(tool_body_, tools_)) {
    out.tool_calls.insert(out.tool_calls.end(), calls->begin(), calls->end());
  } else {
    out.content += tool_body_;  // not a call after all: what the model wrote stays visible
  }
  tool_body_.clear();
  channel_ = Channel::content;
}

ParsedOutput parse_muse_glimmer_output(std::string_view text, const ToolParams& tools) {
  MuseGlimmerOutputParser p(tools);
  ParsedOutput out = p.feed(text);
  out.append(p.finish());
  return out;
}

}  // namespace squeeze::chat
