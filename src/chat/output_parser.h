// chat/output_parser.h — what a model's generated text means: reasoning, the answer and tool
// calls, read while it streams. One parser per answer; each model family's framing is one
// implementation (Muse Glimmer's messages: muse_glimmer_output.h), chosen at load by the chat
// format (generate::ChatFormat::output_parser), so that the CLI and the OpenAI layer never ask
// which model they run.
//
//   auto p = format.output_parser(tools);
//   for (chunk : generation) send(p->feed(chunk));   // deltas, in order
//   send(p->finish());
#pragma once

#include <string_view>

#include "chat/parsed_output.h"

namespace squeeze::chat {

class OutputParser {
 public:
  virtual ~OutputParser() = default;
  // The next piece of generated text (any split, even inside a UTF-8 sequence); returns what
  // is decided. Appending every delta and finish()'s gives the whole turn, however the text
  // was split. Ignored after finish().
  virtual ParsedOutput feed(std::string_view chunk) = 0;
  // The generation ended: decides whatever was held back.
  virtual ParsedOutput finish() = 0;
};

// A model without framing: the text is the answer, as it comes.
class PlainOutputParser final : public OutputParser {
 public:
  ParsedOutput feed(std::string_view chunk) override {
    ParsedOutput out;
    if (!finished_) out.content = chunk;
    return out;
  }
  ParsedOutput finish() override {
    finished_ = true;
    return {};
  }

 private:
  bool finished_ = false;
};

}  // namespace squeeze::chat
