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
// `<|start|>` of another role, the turn is over and the rest is ignored.
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

#include "chat/output_parser.h"
#include "chat/parsed_output.h"
#include "chat/tool_params.h"

namespace squeeze::chat {

class MuseGlimmerOutputParser final : public OutputParser {
 public:
  explicit MuseGlimmerOutputParser(ToolParams tools = {});

  // The next piece of generated text (any split, even inside a UTF-8 sequence or a token's
  // text); returns what it decided. Ignored after finish().
  ParsedOutput feed(std::string_view chunk) override;
  // The generation ended: decides what was held back, and any unfinished tool message.
  ParsedOutput finish() override;

 private:
  enum class State { header, role, after_eom, body, done };
  enum class Channel { reasoning, content, tool };

  void run(bool at_end, ParsedOutput& out);
  // Each step reads from buf_[pos_]; false: it needs more text to decide.
  bool step_header(bool at_end);
  bool step_role(bool at_end);
  bool step_after_eom(bool at_end);
  bool step_body(bool at_end, ParsedOutput& out);
  void open_message(std::string_view recipient);
  void emit(std::string_view text, ParsedOutput& out);
  void close_message(ParsedOutput& out);

  ToolParams tools_;
  State state_ = State::header;
  Channel channel_ = Channel::content;
  std::string buf_;        // text not yet decided, from pos_
  size_t pos_ = 0;
  std::string tool_body_;  // the tool message being written: parsed when it ends
  bool finished_ = false;
};

ParsedOutput parse_muse_glimmer_output(std::string_view text, const ToolParams& tools = {});

}  // namespace squeeze::chat
