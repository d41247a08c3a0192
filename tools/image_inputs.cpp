// tools/image_inputs.cpp — see image_inputs.h.
#include "image_inputs.h"

#include <cstdio>

#include "core/error.h"
#include "core/thread_pool.h"

namespace squeeze::cli {

void add_image_options(Args& args) {
  args.group("images")
      .option({"--mmproj"}, "FILE", "a Muse Glimmer vision projector GGUF: the model takes images")
      .int_option({"--max-image-tokens"}, "N", "image tokens per image at most (2 x 2 merged patches of 14 pixels)",
                  {1, 4096}, std::to_string(kDefaultPromptImageTokens))
      .option({"--resample"}, "FILTER", "image resize filter: lanczos (the reference's) or bicubic", "lanczos");
}

std::unique_ptr<ImageInputs> ImageInputs::from_args(const Args& args, const model::Model& model) {
  if (!args.has("--mmproj")) {
    SQZ_CHECK(!args.has("--max-image-tokens") && !args.has("--resample"), "--max-image-tokens and --resample need --mmproj");
    return nullptr;
  }
  std::unique_ptr<ImageInputs> in(new ImageInputs());
  const std::string path = args.get("--mmproj");
  in->tokens_ = vision::ImageTokenIds::of(model.tokenizer());
  in->n_embd_ = model.config().n_embd;
  in->encoder_ = std::make_unique<vision::VisionEncoder>(vision::load_projector_for(path, in->n_embd_));
  const vision::PreprocessOptions opt = vision::preprocess_options_for(
      *in->encoder_, int(args.get_int("--max-image-tokens")), args.get("--resample"));
  in->cache_ = std::make_unique<vision::FeatureCache>(*in->encoder_, opt);
  return in;
}

std::shared_ptr<const vision::ImageFeatures> ImageInputs::file(const std::string& path) {
  return cache_->get_file(path, &default_thread_pool());
}

std::shared_ptr<const vision::ImageFeatures> ImageInputs::bytes(std::span<const uint8_t> data, const std::string& name) {
  return cache_->get(data, name, &default_thread_pool());
}

vision::PromptRows ImageInputs::expand(std::span<const int32_t> ids,
                                       std::span<const std::shared_ptr<const vision::ImageFeatures>> images) const {
  return vision::expand_images(ids, images, tokens_, n_embd_);
}

std::string describe_image(const std::string& name, const vision::ImageFeatures& f, bool cached) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %d x %d, %lld image tokens, %s %.3f s", name.c_str(), f.width, f.height,
                static_cast<long long>(f.tokens), cached ? "cached; encoded once in" : "encoded in", f.encode_seconds);
  return buf;
}

}  // namespace squeeze::cli
