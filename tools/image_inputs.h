// tools/image_inputs.h — the image options that generate, chat, serve and agent-replay
// share (--mmproj, --max-image-tokens, --resample) and what they give: the projector, the
// cache of its outputs by image hash, and the model's image tokens, all checked against
// the model before any prompt is read.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "args.h"
#include "model/model.h"
#include "vision/encoder.h"
#include "vision/image_features.h"
#include "vision/image_prompt.h"

namespace squeeze::cli {

// Image tokens per image when prompts carry images: the reference allows 4096, but one
// such image is minutes of prefill on a CPU, so prompts default to a quarter of that.
inline constexpr int kDefaultPromptImageTokens = 1024;

void add_image_options(Args& args);

class ImageInputs {
 public:
  // Null without --mmproj. Errors: a projector that fails to load, a projector whose output
  // width is not the model's, a model without the image tokens.
  static std::unique_ptr<ImageInputs> from_args(const Args& args, const model::Model& model);

  // The features of an image file (cached by its bytes' SHA-256).
  std::shared_ptr<const vision::ImageFeatures> file(const std::string& path);
  // The features of image bytes from a request (`name` labels errors).
  std::shared_ptr<const vision::ImageFeatures> bytes(std::span<const uint8_t> data, const std::string& name);
  // Widens each <|patch|> placeholder of `ids` into the next image's tokens.
  vision::PromptRows expand(std::span<const int32_t> ids,
                            std::span<const std::shared_ptr<const vision::ImageFeatures>> images) const;
  const vision::ImageTokenIds& tokens() const { return tokens_; }
  const vision::FeatureCache& cache() const { return *cache_; }
  int64_t n_embd() const { return n_embd_; }

 private:
  ImageInputs() = default;
  std::unique_ptr<vision::VisionEncoder> encoder_;
  std::unique_ptr<vision::FeatureCache> cache_;
  vision::ImageTokenIds tokens_;
  int64_t n_embd_ = 0;
};

// "path: W x H, N image tokens, encoded in S s" (or "(cached)").
std::string describe_image(const std::string& name, const vision::ImageFeatures& f, bool cached);

}  // namespace squeeze::cli
