// vision/image_prompt.h — images placed in a prompt. The chat template renders an image
// part as one `<|patch|>`; as the reference processor does, each such placeholder widens to
// `<|image_start|>` + one `<|patch|>` per image token + `<|image_end|>`, and the patch
// rows enter the model as the image's features instead of the patch token's embedding.
// Images sit causally in the text with ordinary 1-D positions.
//
// Prefix reuse compares keys, not ids: every image row's id is `<|patch|>`, so two
// different images would look alike. A row's key is its token id for text, and for an
// image row a 64-bit value drawn from the image's SHA-256 and the row's index (top bit
// set, so never a token id).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "text/tokenizer.h"
#include "vision/image_features.h"

namespace squeeze::vision {

struct ImageTokenIds {
  int32_t start = -1, patch = -1, end = -1;
  // The model's <|image_start|>, <|patch|> and <|image_end|>; an Error naming the missing
  // token when the vocabulary lacks one (a model without image support).
  static ImageTokenIds of(const text::Tokenizer& tok);
};

struct PromptRows {
  std::vector<int32_t> ids;
  std::vector<const float*> embeddings;  // per id: null, or an image row; empty when no image
  std::vector<uint64_t> keys;            // per id (see the header comment)
  std::vector<std::shared_ptr<const ImageFeatures>> images;  // keeps the rows alive
  std::vector<int64_t> image_starts;     // position of each image's <|image_start|>
};

// The key of a text token.
inline uint64_t text_key(int32_t id) { return static_cast<uint64_t>(static_cast<uint32_t>(id)); }

// Widens the i-th `<|patch|>` of `ids` into images[i]'s tokens. Errors: a different number of
// placeholders than images, or an image whose feature width is not `n_embd`.
PromptRows expand_images(std::span<const int32_t> ids, std::span<const std::shared_ptr<const ImageFeatures>> images,
                         const ImageTokenIds& tokens, int64_t n_embd);

// How many leading rows two prompts share (by key).
size_t common_prefix(std::span<const uint64_t> a, std::span<const uint64_t> b);

}  // namespace squeeze::vision
