// serve/openai_api.h — OpenAI's request and response objects, without HTTP: a request body
// checked field by field into a GenerationRequest (errors are ApiErrors with the status and
// the offending parameter), and engine Updates turned into chat.completion /
// text_completion objects and their streaming chunks.
//
// Field rules (docs/server.md lists them all): unknown fields are ignored, as llama-server
// and most OpenAI-compatible servers do; `tool_choice` other than "auto" /
// "none" is refused with a 400 naming the field; `n` (≤ kMaxChoices) gives independent
// samples seeded seed, seed + 1, … over one prefill (Engine::submit_group); `response_format`
// json_object / json_schema constrain the answer through a grammar (serve/constrained_output.h). Images (`image_url` parts with base64 data: URLs) are taken when
// the server has a vision projector, and refused with a 400 otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "chat/output_parser.h"
#include "chat/tool_params.h"
#include "chat/value.h"
#include "core/bounded_json.h"
#include "generate/chat_format.h"
#include "generate/thinking_budget.h"
#include "generate/token_mask.h"
#include "model/model.h"
#include "serve/engine.h"
#include "vision/image_features.h"
#include "vision/image_prompt.h"

namespace squeeze::serve {

// An OpenAI error object with its HTTP status.
struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = {}, std::string type = {});
  int status;
  std::string param, type;
  chat::Json to_json() const;  // {"error": {"message", "type", "param", "code"}}
};

// The body as JSON; malformed JSON, nesting or keys past the limits, or a non-object is a 400.
chat::Json parse_body(const std::string& body, const JsonLimits& limits = {});

// What the server knows that a request is checked against.
struct ApiContext {
  const model::Model* model = nullptr;
  const generate::ChatFormat* chat = nullptr;   // null: the model has no chat template (chat endpoints 400)
  std::string model_id;               // what /v1/models lists and requests may name
  int64_t n_ctx = 0;                  // context per slot
  int64_t max_tokens_limit = 0;       // largest max_tokens a request may ask for
  std::string default_reasoning_effort = "high";
  generate::ReasoningBudgets reasoning_budgets;  // thinking tokens per level (the model's squeeze.reasoning.*)
  // Images: the projector's feature cache (null: the server takes no images), the model's
  // image tokens, and the threads that encode (the request's thread waits for them).
  vision::FeatureCache* images = nullptr;
  vision::ImageTokenIds image_tokens;
  ThreadPool* image_pool = nullptr;
  int64_t max_image_pixels = int64_t{1} << 24;  // per image, checked from its header before decoding
  // Message content tokenized as transformers and llama-server do: a control-token text
  // typed in it becomes the control token (role spoofing; --parse-special-in-content).
  bool parse_special_in_content = false;
  // Limits on JSON the request carries inside strings (tool-call arguments), as on the body.
  JsonLimits json_limits;
  // The vocabulary's byte trie, built once, for response_format's constrained sampling.
  std::shared_ptr<const generate::VocabTrie> vocab_trie;
};

enum class Endpoint { chat, completion };

struct PreparedRequest {
  Endpoint endpoint = Endpoint::chat;
  GenerationRequest gen;
  bool stream = false, include_usage = false;
  bool logprobs = false;
  int n = 1;                          // choices (OpenAI's n): seeds seed, seed + 1, …
  chat::ToolParams tools;             // the request's tools, when the model's framing calls tools
  std::string prompt_text;            // the rendered chat prompt (chat only)
  std::vector<std::string> warnings;  // a top-level "warnings" list in the answer (tools dropped)
};

PreparedRequest prepare_chat(const chat::Json& body, const ApiContext& ctx);
PreparedRequest prepare_completion(const chat::Json& body, const ApiContext& ctx);

// The rendering of a chat request's messages (+ tools, reasoning effort) as the template
// gives it, for /apply-template and prepare_chat.
// Image parts render as the template's placeholder; their features are appended to
// `images` when given (decoded and encoded, or found in the cache), else not computed.
// Control-token texts in user, tool and assistant content stay text (generate/content_literals.h)
// unless ctx.parse_special_in_content; their byte ranges in the result go to *literal_ranges.
// *tools_unseen: the request has tools and the template renders the same without them.
std::string render_chat_prompt(const chat::Json& body, const ApiContext& ctx, bool* has_tools = nullptr,
                               std::vector<std::shared_ptr<const vision::ImageFeatures>>* images = nullptr,
                               std::vector<std::pair<size_t, size_t>>* literal_ranges = nullptr,
                               bool* tools_unseen = nullptr);

// Collects a request's updates into the final object, or into streaming chunks.
class ResponseBuilder {
 public:
  ResponseBuilder(const PreparedRequest& req, const ApiContext& ctx);

  // Streaming: the chunks (JSON objects) this update yields, in order. The first call also
  // yields the role chunk (chat); the final update yields the finish chunk and, when
  // include_usage, the usage chunk.
  std::vector<chat::Json> chunks(const Update& u);
  // Non-streaming: accumulate every update, then build the object.
  void add(const Update& u);
  chat::Json final_object() const;
  // Choice `index` of n (n > 1): the first choice's id and time. Its chunks then carry no
  // usage: usage_chunk() sums every choice once all have finished.
  void as_choice(size_t index, const ResponseBuilder& first);
  static chat::Json final_object(const std::vector<const ResponseBuilder*>& choices);
  static chat::Json usage_chunk(const std::vector<const ResponseBuilder*>& choices);
  bool finished() const { return finish_ != FinishReason::none; }
  FinishReason finish() const { return finish_; }
  const std::string& error() const { return error_; }

 private:
  chat::ParsedOutput take(const Update& u);   // the update's text through the parser (or as content)
  chat::Json logprobs_json(const std::vector<TokenLogprob>& lp, size_t first_offset) const;
  chat::Json choice_json() const;
  static chat::Json usage_json(const std::vector<const ResponseBuilder*>& choices);
  std::string finish_reason_text() const;
  chat::Json tool_calls_json(const std::vector<chat::ToolCall>& calls, size_t first_index) const;

  const PreparedRequest& req_;
  const ApiContext& ctx_;
  std::string id_;
  int64_t created_;
  std::unique_ptr<chat::OutputParser> parser_;  // chat: the model's framing (ChatFormat::output_parser)
  chat::ParsedOutput whole_;
  std::vector<TokenLogprob> logprobs_;
  std::string text_;                  // completion text so far
  bool role_sent_ = false;
  size_t index_ = 0;
  FinishReason finish_ = FinishReason::none;
  std::string error_;
  int64_t prompt_tokens_ = 0, cached_tokens_ = 0, completion_tokens_ = 0;
};

}  // namespace squeeze::serve
