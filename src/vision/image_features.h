// vision/image_features.h — images turned into what enters the text model, cached by
// the hash of the image's bytes: a screenshot sent again (every step of an agent run, a
// chat's history re-rendered, a client resending a conversation) is encoded once.
//
// The key is the SHA-256 of the file's bytes (the whole file: a short hash of part of an
// image has given wrong hits across images in other engines); the preprocessing options
// and the encoder are fixed per cache. The cache holds at most `max_bytes` of features and
// forgets the least recently used first; features in use stay alive through their
// shared_ptr. Thread-safe: the server encodes from its request threads.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "vision/encoder.h"
#include "vision/image.h"
#include "vision/preprocess.h"

namespace squeeze {
class ThreadPool;
}

namespace squeeze::vision {

// The projector GGUF at `path` for a text model of width `text_width`; a projector of
// another width (another model's) is refused with one line.
VisionEncoder load_projector_for(const std::string& path, int64_t text_width);

// Preprocessing in `encoder`'s patch and merge sizes; `resample` as parse_resample reads it.
PreprocessOptions preprocess_options_for(const VisionEncoder& encoder, int max_image_tokens, const std::string& resample);

// SHA-256 of `data`, as 64 hex digits.
std::string sha256_hex(std::span<const uint8_t> data);

struct ImageFeatures {
  std::string digest;          // SHA-256 of the image file's bytes
  int width = 0, height = 0;   // the decoded image, in pixels
  int grid_w = 0, grid_h = 0;  // in patches
  int64_t tokens = 0, text_width = 0;
  std::vector<float> rows;     // [tokens, text_width]
  double encode_seconds = 0;   // decode + preprocess + encoder
  const float* row(int64_t i) const { return rows.data() + i * text_width; }
};

class FeatureCache {
 public:
  FeatureCache(const VisionEncoder& encoder, PreprocessOptions options, size_t max_bytes = size_t(1) << 30);

  // The features of an image file's bytes (`name` labels errors), encoded now or found.
  // Errors (undecodable image, …) are squeeze::Errors naming `name`.
  std::shared_ptr<const ImageFeatures> get(std::span<const uint8_t> bytes, const std::string& name,
                                           ThreadPool* pool = nullptr);
  std::shared_ptr<const ImageFeatures> get_file(const std::string& path, ThreadPool* pool = nullptr);

  // Image tokens a width × height image becomes under options() (as preprocess sizes it).
  int64_t tokens_for(int64_t width, int64_t height) const;

  const VisionEncoder& encoder() const { return encoder_; }
  const PreprocessOptions& options() const { return options_; }
  int64_t hits() const;
  int64_t misses() const;

 private:
  const VisionEncoder& encoder_;
  PreprocessOptions options_;
  size_t max_bytes_;
  mutable std::mutex mu_;
  std::list<std::shared_ptr<const ImageFeatures>> lru_;  // most recent first
  std::unordered_map<std::string, std::list<std::shared_ptr<const ImageFeatures>>::iterator> by_digest_;
  size_t bytes_ = 0;
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace squeeze::vision
