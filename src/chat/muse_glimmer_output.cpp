// chat/muse_glimmer_output.cpp — Muse Glimmer's header grammar, recipients and ATEM calls
// on the shared message machinery (chat/message_stream.h).
#include "chat/muse_glimmer_output.h"

#include <utility>

#include "chat/atem_calls.h"

namespace squeeze::chat {
namespace {

using scan::Match;

constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kTo = "to=";

// Bounds on what a header may hold, so undecided text stays short: recipients are tool
// names (OpenAI allows 64 bytes), and a header has a space or two.
constexpr size_t kMaxRecipient = 256;
constexpr size_t kMaxHeaderSpace = 16;

// Recipient `self` is the reasoning, `user` (or none) the answer, any other a tool.
MessageStreamParser::Header header(size_t end, std::string_view recipient) {
  using Channel = MessageStreamParser::Channel;
  MessageStreamParser::Header h{Match::yes, end, {}};
  if (recipient == "self") {
    h.route.channel = Channel::reasoning;
  } else if (!recipient.empty() && recipient != "user") {
    h.route.channel = Channel::tool;
    h.route.tool = recipient;
  }
  return h;
}

MessageStreamParser::Header verdict(Match m) { return {m, 0, {}}; }

}  // namespace

MuseGlimmerOutputParser::MuseGlimmerOutputParser(ToolParams tools)
    : MessageStreamParser({{"<|eom|>", Next::message}, {"<|eot|>", Next::turn_over}, {"<|start|>", Next::role}}),
      tools_(std::move(tools)) {}

// After `<|start|>assistant`: [space] [to=RECIPIENT [space]] <|message|>
MessageStreamParser::Header MuseGlimmerOutputParser::header_at(std::string_view s, size_t i, bool) const {
  const size_t j = scan::skip_space(s, i, kMaxHeaderSpace);
  if (j - i > kMaxHeaderSpace) return {};
  if (j == s.size()) return verdict(Match::partial);
  if (const Match to = scan::match_at(s, j, kTo); to != Match::no) {
    if (to == Match::partial) return verdict(Match::partial);
    const scan::Word name = scan::word_at(s, j + kTo.size(), kMaxRecipient);
    if (name.match != Match::yes) return verdict(name.match);
    const size_t k = scan::skip_space(s, name.end, kMaxHeaderSpace);
    if (k - name.end > kMaxHeaderSpace) return {};
    if (k == s.size()) return verdict(Match::partial);
    const Match m = scan::match_at(s, k, kMessage);
    if (m != Match::yes) return verdict(m);
    return header(k + kMessage.size(), name.text);
  }
  const Match m = scan::match_at(s, j, kMessage);
  if (m != Match::yes) return verdict(m);
  return header(j + kMessage.size(), {});
}

// A recipient switch without the closing token: SPACE to=NAME<|message|>.
MessageStreamParser::Header MuseGlimmerOutputParser::switch_at(std::string_view s, size_t i) const {
  if (!scan::is_space(s[i])) return {};
  const Match to = scan::match_at(s, i + 1, kTo);
  if (to != Match::yes) return verdict(to);
  const scan::Word name = scan::word_at(s, i + 1 + kTo.size(), kMaxRecipient);
  if (name.match != Match::yes) return verdict(name.match);
  const Match m = scan::match_at(s, name.end, kMessage);
  if (m != Match::yes) return verdict(m);
  return header(name.end + kMessage.size(), name.text);
}

bool MuseGlimmerOutputParser::read_calls(const Route&, std::string_view body, ParsedOutput& out) const {
  auto calls = parse_atem_calls(body, tools_);
  if (!calls) return false;
  out.tool_calls.insert(out.tool_calls.end(), calls->begin(), calls->end());
  return true;
}

ParsedOutput parse_muse_glimmer_output(std::string_view text, const ToolParams& tools) {
  MuseGlimmerOutputParser p(tools);
  ParsedOutput out = p.feed(text);
  out.append(p.finish());
  return out;
}

}  // namespace squeeze::chat
