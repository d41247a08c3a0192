// chat/muse_glimmer_output.h — Muse Glimmer's generated text → reasoning, answer and tool
// calls, in one go or incrementally while it streams. It never fails: text it cannot read
// as the format's markup is content.
//
// The generation prompt ends with `<|start|>assistant`; the model then writes one or more
// messages, each ` to=RECIPIENT<|message|>BODY` closed by `<|eom|>` (another message
// follows, opened by `<|start|>assistant`) or `<|eot|>` (the turn is over):
//
//    to=self<|message|>Paris, so call the tool.<|eom|>
//   <|start|>assistant to=get_weather<|message|><atem:function_calls>...</atem:function_calls><|eot|>
//
// Recipient `self` is reasoning, `user` (or none) the answer, any other a tool: its body
// is ATEM call markup (chat/atem_calls.h), or content when it is not well-formed. The text
// must hold the special tokens' text (decode with special tokens rendered). Leniencies,
// all for forms models emit: a message ends at `<|start|>` without a closing token; a body
// that switches recipient in place (`... to=NAME<|message|>`: `<|message|>` never occurs in
// plain text) starts a new message; text without a header is content; a leading
// `<|start|>assistant` (the prompt's end repeated) is skipped. After `<|eot|>`, or a
// `<|start|>` of another role, the turn is over and the rest is ignored. (The machinery is
// shared with harmony's parser: chat/message_stream.h.)
//
//   MuseGlimmerOutputParser p(ToolParams::from_json(request_tools));
//   for (chunk : generation) send(p.feed(chunk));   // deltas; calls arrive whole
//   send(p.finish());
//
// Concatenating the deltas gives exactly parse_muse_glimmer_output(whole text), however
// the text was split: text that may still turn out to be markup (a partial `<|eom|>`, a
// header being written) is held back until it is decided.
#pragma once

#include <string>
#include <string_view>

#include "chat/message_stream.h"
#include "chat/parsed_output.h"
#include "chat/tool_params.h"

namespace squeeze::chat {

class MuseGlimmerOutputParser final : public MessageStreamParser {
 public:
  explicit MuseGlimmerOutputParser(ToolParams tools = {});

 private:
  Header header_at(std::string_view s, size_t i, bool at_end) const override;
  Header switch_at(std::string_view s, size_t i) const override;
  bool read_calls(const Route& route, std::string_view body, ParsedOutput& out) const override;

  ToolParams tools_;
};

ParsedOutput parse_muse_glimmer_output(std::string_view text, const ToolParams& tools = {});

}  // namespace squeeze::chat
