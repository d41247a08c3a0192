// vision/image_features.cpp — see image_features.h.
#include "vision/image_features.h"

#include <openssl/evp.h>

#include <chrono>

#include "core/error.h"
#include "vision/resample.h"

namespace squeeze::vision {

VisionEncoder load_projector_for(const std::string& path, int64_t text_width) {
  VisionEncoder encoder = VisionEncoder::load(path);
  SQZ_CHECK(encoder.config().text_width == text_width, path, ": the projector's output width is ",
            encoder.config().text_width, ", the model's is ", text_width, " (not this model's projector)");
  return encoder;
}

PreprocessOptions preprocess_options_for(const VisionEncoder& encoder, int max_image_tokens, const std::string& resample) {
  PreprocessOptions opt;
  opt.patch_size = int(encoder.config().patch);
  opt.merge_size = int(encoder.config().merge);
  opt.max_image_tokens = max_image_tokens;
  opt.resample = parse_resample(resample);
  return opt;
}

std::string sha256_hex(std::span<const uint8_t> data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  SQZ_CHECK(EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr) == 1, "SHA-256 failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

FeatureCache::FeatureCache(const VisionEncoder& encoder, PreprocessOptions options, size_t max_bytes)
    : encoder_(encoder), options_(options), max_bytes_(max_bytes) {
  SQZ_CHECK(options_.patch_size == encoder.config().patch && options_.merge_size == encoder.config().merge,
            "image preprocessing for patches of ", options_.patch_size, " merged ", options_.merge_size,
            " by ", options_.merge_size, ", the encoder's are ", encoder.config().patch, " and ",
            encoder.config().merge);
}

int64_t FeatureCache::tokens_for(int64_t width, int64_t height) const {
  const int cell = options_.patch_size * options_.merge_size;
  const GridSize g = smart_resize(static_cast<int>(std::min<int64_t>(height, 1 << 30)),
                                  static_cast<int>(std::min<int64_t>(width, 1 << 30)), cell, options_.max_image_tokens);
  return int64_t(g.height / cell) * (g.width / cell);
}

std::shared_ptr<const ImageFeatures> FeatureCache::get(std::span<const uint8_t> bytes, const std::string& name,
                                                       ThreadPool* pool) {
  std::string digest = sha256_hex(bytes);
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (const auto it = by_digest_.find(digest); it != by_digest_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++hits_;
      return *it->second;
    }
  }
  // Encoded outside the lock: another request's image need not wait for this one. Two
  // requests with the same new image both encode it; the second result is dropped.
  const auto t0 = std::chrono::steady_clock::now();
  const Image img = decode_image(bytes.data(), bytes.size(), name);
  const PixelPatches patches = preprocess(img, options_);
  EncoderOutput out = encoder_.encode(patches, pool);
  auto f = std::make_shared<ImageFeatures>();
  f->digest = std::move(digest);
  f->width = img.width;
  f->height = img.height;
  f->grid_w = patches.grid_w;
  f->grid_h = patches.grid_h;
  f->tokens = out.tokens;
  f->text_width = encoder_.config().text_width;
  f->rows = std::move(out.features);
  f->encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const std::lock_guard<std::mutex> lock(mu_);
  ++misses_;
  if (const auto it = by_digest_.find(f->digest); it != by_digest_.end()) return *it->second;
  lru_.push_front(f);
  by_digest_[f->digest] = lru_.begin();
  bytes_ += f->rows.size() * sizeof(float);
  while (bytes_ > max_bytes_ && lru_.size() > 1) {
    const auto& old = lru_.back();
    bytes_ -= old->rows.size() * sizeof(float);
    by_digest_.erase(old->digest);
    lru_.pop_back();
  }
  return f;
}

std::shared_ptr<const ImageFeatures> FeatureCache::get_file(const std::string& path, ThreadPool* pool) {
  return get(read_image_bytes(path), path, pool);
}

int64_t FeatureCache::hits() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

int64_t FeatureCache::misses() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

}  // namespace squeeze::vision
