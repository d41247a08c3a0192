// chat/llama3_output.h — the output of Llama 3.1 / 3.2 / 3.3 with tools: a call is the whole
// answer, a JSON object {"name": ..., "parameters": {...}} (several separated by ';'),
// optionally after `<|python_tag|>` (when control tokens are rendered), or after that tag one
// of Llama 3.1's built-in tools, `brave_search.call(query="...")`: a call named
// `brave_search` whose arguments are the keywords ({"query": "..."}; Python string, number,
// True/False/None values). Anything else is the
// answer, streamed as it comes; an answer that starts like a call (`{` or `<|python_tag|>`
// after optional whitespace) is held until the end and is the answer after all when it is
// not one, byte for byte. Never fails; deltas add up to the one-shot parse in any split.
#pragma once

#include <string>
#include <string_view>

#include "chat/output_parser.h"

namespace squeeze::chat {

class Llama3OutputParser final : public OutputParser {
 public:
  ParsedOutput feed(std::string_view chunk) override;
  ParsedOutput finish() override;

 private:
  enum class State { start, maybe_call, content };
  void run(bool at_end, ParsedOutput& out);

  State state_ = State::start;
  std::string buf_;  // the undecided start of the answer (start, maybe_call)
  bool finished_ = false;
};

ParsedOutput parse_llama3_output(std::string_view text);

}  // namespace squeeze::chat
