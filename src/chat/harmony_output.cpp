// chat/harmony_output.cpp — harmony's header grammar, channels and JSON calls on the
// shared message machinery (chat/message_stream.h).
#include "chat/harmony_output.h"

#include <optional>

#include "chat/json_tool_calls.h"

namespace squeeze::chat {
namespace {

using scan::Match;
using Channel = MessageStreamParser::Channel;
using Header = MessageStreamParser::Header;

constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kConstrain = "<|constrain|>";
constexpr std::string_view kTo = "to=";
constexpr std::string_view kFunctions = "functions.";

// Bounds on a header, so undecided text stays short: names are tool names (OpenAI allows 64
// bytes) or channels, a header has a few items with a space or two between them.
constexpr size_t kMaxName = 256;
constexpr size_t kMaxSpace = 16;
constexpr size_t kMaxItems = 6;

struct Fields {
  std::string_view recipient, channel;
};

MessageStreamParser::Route route_of(const Fields& f) {
  MessageStreamParser::Route r;
  r.fallback = f.channel == "analysis" ? Channel::reasoning : Channel::content;
  r.channel = r.fallback;
  std::string_view name = f.recipient;
  if (name.starts_with(kFunctions)) name.remove_prefix(kFunctions.size());
  if (!name.empty() && f.recipient != "user" && f.recipient != "assistant" && f.recipient != "all") {
    r.channel = Channel::tool;
    r.tool = name;
  }
  return r;
}

// The header from s[i]: items (`to=NAME`, `<|channel|>NAME`, `<|constrain|>NAME`, and one
// bare word after the channel) separated by optional whitespace, up to `<|message|>`.
// Unless `strict`, a header whose `<|message|>` never comes but that named a channel ends
// after its last such item (the body starts there), and one cut short by the end of the
// output is an empty message; else it is no header.
Header header_from(std::string_view s, size_t i, bool at_end, bool strict) {
  Fields f;
  std::optional<Header> taken;  // the header as it stands after its last item, with a channel
  const auto give_up = [&](Match m) -> Header {
    if (m == Match::partial && !at_end) return {Match::partial, 0, {}};
    if (!strict && taken) return *taken;
    // Cut off by the end of the output (max_tokens) while the header was being written: no
    // text of the model's is in it.
    if (!strict && m == Match::partial) return {Match::yes, s.size(), {}};
    return {};
  };
  bool typed = false;  // the bare type word was seen
  size_t k = i;
  for (size_t items = 0;; ++items) {
    const size_t j = scan::skip_space(s, k, kMaxSpace);
    if (j - k > kMaxSpace) return give_up(Match::no);
    if (j == s.size()) return give_up(Match::partial);
    const Match message = scan::match_at(s, j, kMessage);
    if (message == Match::yes) return {Match::yes, j + kMessage.size(), route_of(f)};
    if (items == kMaxItems) return give_up(message);
    const Match to = scan::match_at(s, j, kTo), channel = scan::match_at(s, j, kChannel),
                constrain = scan::match_at(s, j, kConstrain);
    std::string_view* field = nullptr;
    std::string_view ignored;
    size_t name_at = 0;
    if (to == Match::yes) {
      field = &f.recipient, name_at = j + kTo.size();
    } else if (channel == Match::yes) {
      field = &f.channel, name_at = j + kChannel.size();
    } else if (constrain == Match::yes) {
      field = &ignored, name_at = j + kConstrain.size();
    }
    if (field) {
      scan::Word w = scan::word_at(s, name_at, kMaxName);
      // The output ended inside the name (cut by max_tokens): as far as it goes, it is whole.
      if (w.match == Match::partial && at_end && name_at < s.size()) w = {Match::yes, s.size(), s.substr(name_at)};
      if (w.match != Match::yes) return give_up(w.match);
      *field = w.text;
      k = w.end;
      if (!f.channel.empty()) taken = Header{Match::yes, k, route_of(f)};
      continue;
    }
    for (Match m : {message, to, channel, constrain})
      if (m == Match::partial) return give_up(m);
    // The body's type after the channel and a space (`commentary json`).
    if (f.channel.empty() || typed || j == k) return give_up(Match::no);
    const scan::Word w = scan::word_at(s, j, kMaxName);
    if (w.match != Match::yes) return give_up(w.match);
    typed = true;
    k = w.end;
  }
}

}  // namespace

HarmonyOutputParser::HarmonyOutputParser()
    : MessageStreamParser({{"<|end|>", Next::message},
                           {"<|call|>", Next::message},
                           {"<|return|>", Next::turn_over},
                           {"<|start|>", Next::role}}) {}

Header HarmonyOutputParser::header_at(std::string_view s, size_t i, bool at_end) const {
  return header_from(s, i, at_end, false);
}

// A channel opened inside a body: only a whole header counts, so that `<|channel|>` quoted
// in text (it cannot be, as a token, but its text can) without `<|message|>` stays text.
Header HarmonyOutputParser::switch_at(std::string_view s, size_t i) const {
  if (s[i] != '<') return {};
  const Match channel = scan::match_at(s, i, kChannel);
  if (channel != Match::yes) return {channel, 0, {}};
  return header_from(s, i, false, true);
}

bool HarmonyOutputParser::read_calls(const Route& route, std::string_view body, ParsedOutput& out) const {
  auto arguments = json_arguments(body);
  if (!arguments) return false;
  out.tool_calls.push_back({route.tool, std::move(*arguments)});
  return true;
}

ParsedOutput parse_harmony_output(std::string_view text) {
  HarmonyOutputParser p;
  ParsedOutput out = p.feed(text);
  out.append(p.finish());
  return out;
}

}  // namespace squeeze::chat
