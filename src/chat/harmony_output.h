// chat/harmony_output.h — the harmony format's generated text (OpenAI's gpt-oss) → reasoning,
// answer and tool calls, in one go or while it streams. It never fails: text it cannot read
// as the format's markup is content (or reasoning, inside the analysis channel).
//
// The generation prompt ends with `<|start|>assistant`; the model writes messages, each a
// header naming a channel, `<|message|>` and a body, ended by `<|end|>` (another message
// follows, opened by `<|start|>assistant`), `<|call|>` (a tool call: generation stops there)
// or `<|return|>` (the turn is over):
//
//   <|channel|>analysis<|message|>The user wants Paris.<|end|>
//   <|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>
//
//   <|channel|>analysis<|message|>Need the weather.<|end|>
//   <|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>
//
// The header holds, in any order, `<|channel|>NAME`, ` to=RECIPIENT` (before or after the
// channel) and the body's type (`<|constrain|>json`, or a word after the channel: `commentary
// json`). A recipient other than user / assistant / all makes the message a tool call: its
// name is the recipient less `functions.`, its arguments the body, a JSON object (written
// back compact). Without a recipient, `analysis` is reasoning and any other channel (final,
// commentary — a preamble the user sees — or one unknown) the answer.
//
// Leniencies, for forms models emit: a header without `<|message|>` ends after its last
// channel, recipient or type, so `<|channel|>analysis Thinking…` is reasoning; a header met
// inside a body (`…<|channel|>final<|message|>`, the `<|end|><|start|>assistant` dropped)
// starts a new message; a message ends at `<|start|>`; text without a header is content; a
// tool body that is not a JSON object stays text where its channel sends it. The rest of
// the framing (the prompt's end repeated, another role's `<|start|>`, truncation) is the
// shared machinery's: chat/message_stream.h. The text must hold the special tokens' text
// (decode with special tokens rendered).
//
// Concatenating the deltas gives exactly parse_harmony_output(whole text), however the text
// was split: text that may still turn out to be markup (a partial `<|end|>`, a header being
// written) is held back until it is decided; a call is delivered whole when its message ends.
#pragma once

#include <string_view>

#include "chat/message_stream.h"
#include "chat/parsed_output.h"

namespace squeeze::chat {

class HarmonyOutputParser final : public MessageStreamParser {
 public:
  HarmonyOutputParser();

 private:
  Header header_at(std::string_view s, size_t i, bool at_end) const override;
  Header switch_at(std::string_view s, size_t i) const override;
  bool read_calls(const Route& route, std::string_view body, ParsedOutput& out) const override;
};

ParsedOutput parse_harmony_output(std::string_view text);

}  // namespace squeeze::chat
