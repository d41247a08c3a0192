// fuzz/fuzz_model_output.cpp — what a model generates, taken apart by every family's output
// parser: Muse Glimmer's message framing (chat/muse_glimmer_output.h), harmony's
// (chat/harmony_output.h), Qwen's tags (chat/tagged_output.h) and Llama 3's JSON calls
// (chat/llama3_output.h), each whole and streamed in chunks of sizes drawn from the input's
// first byte; and ATEM tool-call markup (chat/atem_calls.h) alone. None may throw; the headers' promise is checked: the streamed
// deltas, appended, equal the one-shot parse however the text was split.
#include <cstddef>
#include <cstdint>

#include "chat/atem_calls.h"
#include "chat/harmony_output.h"
#include "chat/llama3_output.h"
#include "chat/muse_glimmer_output.h"
#include "chat/tagged_output.h"
#include "chat/tool_params.h"
#include "fuzz_input.h"

using namespace squeeze;

namespace {

// Tools of each parameter kind, and `read` for the swallowed-parameter leniency.
const chat::ToolParams& tools() {
  static const chat::ToolParams t = chat::ToolParams::from_json(chat::Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}, "hourly": {"type": "boolean"},
      "where": {"type": "object"}, "hours": {"type": "array"}}}}},
    {"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {
      "path": {"type": "string"}}}}}])"));
  return t;
}

// The parser's streamed deltas over `text` in the drawn chunk sizes, appended.
chat::ParsedOutput stream(chat::OutputParser& parser, std::string_view text, fuzz::Chunks& chunks) {
  chat::ParsedOutput streamed;
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = std::min(chunks.next(16), text.size() - pos);
    streamed.append(parser.feed(text.substr(pos, n)));
    pos += n;
  }
  streamed.append(parser.finish());
  return streamed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  fuzz::Chunks chunks(data[0]);
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  for (const chat::ToolParams* t : {&tools(), static_cast<const chat::ToolParams*>(nullptr)}) {
    const chat::ToolParams params = t ? *t : chat::ToolParams{};
    const chat::ParsedOutput whole = chat::parse_muse_glimmer_output(text, params);
    chat::MuseGlimmerOutputParser parser(params);
    if (!(stream(parser, text, chunks) == whole)) __builtin_trap();
    (void)chat::parse_atem_calls(text, params);
  }
  for (const bool in_thinking : {false, true}) {
    chat::TaggedOutputParser tagged(in_thinking);
    if (!(stream(tagged, text, chunks) == chat::parse_tagged_output(text, in_thinking))) __builtin_trap();
  }
  chat::HarmonyOutputParser harmony;
  if (!(stream(harmony, text, chunks) == chat::parse_harmony_output(text))) __builtin_trap();
  chat::Llama3OutputParser llama;
  if (!(stream(llama, text, chunks) == chat::parse_llama3_output(text))) __builtin_trap();
  return 0;
}
