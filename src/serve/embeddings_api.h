// serve/embeddings_api.h — OpenAI's /v1/embeddings: inputs checked and tokenized, the
// model's final hidden states pooled into one vector per input.
//
//   input            a string, a list of strings, a list of token ids, or a list of such lists
//                    (at most kMaxEmbeddingInputs; each 1..n_ctx tokens after tokenizing,
//                    which adds BOS / EOS as the vocabulary says, as llama.cpp does)
//   pooling          "mean" (default: the average over the input's tokens), "last" (the last
//                    token's state: what a causal model has read everything into) or "cls"
//                    (the first token's) — a squeeze / llama-server extension
//   normalize        true (default): each vector divided by its Euclidean norm, as
//                    llama.cpp's --embd-normalize 2; false: as pooled
//   encoding_format  "float" (default) or "base64" (little-endian float32, as OpenAI's)
//   dimensions       refused unless it is the model's width (no truncation)
// The vectors are the final norm's output (what the head reads), llama.cpp's embeddings of
// a decoder model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/value.h"
#include "serve/openai_api.h"

namespace squeeze::serve {

inline constexpr size_t kMaxEmbeddingInputs = 256;

enum class Pooling { mean, last, cls };

struct EmbeddingRequest {
  std::vector<std::vector<int32_t>> inputs;
  Pooling pooling = Pooling::mean;
  bool normalize = true;
  bool base64 = false;
};

// Throws ApiError 400 naming the field.
EmbeddingRequest prepare_embeddings(const chat::Json& body, const ApiContext& ctx);

// One input's vector from its hidden states ([tokens, n_embd]).
std::vector<float> pool_hidden_states(const std::vector<float>& hidden, int64_t n_embd, Pooling pooling, bool normalize);

// The response object; `vectors` in input order.
chat::Json embeddings_response(const EmbeddingRequest& req, const std::vector<std::vector<float>>& vectors,
                               const ApiContext& ctx);

}  // namespace squeeze::serve
