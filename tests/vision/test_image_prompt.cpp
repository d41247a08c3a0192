// tests/vision/test_image_prompt.cpp — images in prompts: SHA-256 keys (a published test
// vector), the feature cache (hits by content, not by name; least recently used dropped
// first), placeholder expansion (layout, embedding rows, keys that tell images apart) and
// its refusals, and a projector written by save() read back to the same outputs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "vision/encoder.h"
#include "vision/image_features.h"
#include "vision/image_prompt.h"

namespace squeeze::vision {
namespace {

const std::string kDir = SQUEEZE_VISION_FIXTURES;

std::vector<uint8_t> file_bytes(const std::string& path) { return read_image_bytes(path); }

TEST(ImageHash, Sha256TestVectors) {
  const std::string abc = "abc";
  EXPECT_EQ(sha256_hex({reinterpret_cast<const uint8_t*>(abc.data()), abc.size()}),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

struct SmallTower {
  VisionEncoder encoder = VisionEncoder::random(small_encoder_config(48), 7);
  PreprocessOptions options() const {
    PreprocessOptions o;
    o.max_image_tokens = 16;
    return o;
  }
};

TEST(FeatureCache, HitsByContentAndForgetsTheOldest) {
  SmallTower t;
  const auto noise = file_bytes(kDir + "/rgb_noise.png"), grey = file_bytes(kDir + "/grey.png");
  FeatureCache cache(t.encoder, t.options());
  const auto a = cache.get(noise, "a.png");
  EXPECT_EQ(a->text_width, 48);
  EXPECT_GT(a->tokens, 0);
  EXPECT_LE(a->tokens, 16);
  EXPECT_EQ(a->rows.size(), size_t(a->tokens * 48));
  EXPECT_EQ(a->digest, sha256_hex(noise));
  const auto again = cache.get(noise, "another-name.png");  // same bytes, another name: a hit
  EXPECT_EQ(again.get(), a.get());
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.misses(), 1);
  const auto b = cache.get(grey, "b.png");
  EXPECT_NE(b->digest, a->digest);
  EXPECT_EQ(cache.misses(), 2);

  // Room for one image's features: the older is dropped (its holders keep it alive).
  FeatureCache small(t.encoder, t.options(), a->rows.size() * sizeof(float));
  const auto x = small.get(noise, "x");
  small.get(grey, "y");
  const auto x2 = small.get(noise, "x");
  EXPECT_NE(x2.get(), x.get());  // encoded again
  EXPECT_EQ(x2->rows, x->rows);  // to the same features
  EXPECT_EQ(small.misses(), 3);

  EXPECT_THROW(cache.get(std::vector<uint8_t>{1, 2, 3}, "junk.png"), Error);
}

ImageFeatures fake_image(const std::string& digest, int64_t tokens, int64_t width) {
  ImageFeatures f;
  f.digest = digest;
  f.tokens = tokens;
  f.text_width = width;
  f.rows.resize(size_t(tokens * width));
  for (size_t i = 0; i < f.rows.size(); ++i) f.rows[i] = float(i);
  return f;
}

TEST(ImagePrompt, PlaceholdersWidenToTheImagesTokens) {
  const ImageTokenIds t{.start = 5, .patch = 99, .end = 6};
  const auto one = std::make_shared<const ImageFeatures>(fake_image(std::string(64, 'a'), 3, 4));
  const auto two = std::make_shared<const ImageFeatures>(fake_image(std::string(64, 'b'), 2, 4));
  const std::vector<int32_t> ids{1, 99, 7, 99, 8};
  const std::vector<std::shared_ptr<const ImageFeatures>> images{one, two};
  const PromptRows r = expand_images(ids, images, t, 4);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 5, 99, 99, 99, 6, 7, 5, 99, 99, 6, 8}));
  EXPECT_EQ(r.image_starts, (std::vector<int64_t>{1, 7}));
  ASSERT_EQ(r.embeddings.size(), r.ids.size());
  ASSERT_EQ(r.keys.size(), r.ids.size());
  for (size_t i = 0; i < r.ids.size(); ++i) {
    const bool image_row = r.ids[i] == 99;
    EXPECT_EQ(r.embeddings[i] != nullptr, image_row) << i;
    EXPECT_EQ((r.keys[i] >> 63) == 1, image_row) << i;
    if (!image_row) {
      EXPECT_EQ(r.keys[i], text_key(r.ids[i]));
    }
  }
  EXPECT_EQ(r.embeddings[2], one->row(0));
  EXPECT_EQ(r.embeddings[4], one->row(2));
  EXPECT_EQ(r.embeddings[9], two->row(1));
  EXPECT_NE(r.keys[2], r.keys[3]);  // rows of one image differ
  EXPECT_NE(r.keys[2], r.keys[8]);  // first rows of two images differ

  // The same image again: the same keys; the common prefix stops at the first other row.
  const PromptRows same = expand_images(ids, images, t, 4);
  EXPECT_EQ(common_prefix(same.keys, r.keys), r.keys.size());
  const std::vector<std::shared_ptr<const ImageFeatures>> swapped{one, one};
  const PromptRows other = expand_images(ids, swapped, t, 4);
  EXPECT_EQ(common_prefix(other.keys, r.keys), 8u);  // up to the second image's first row

  // Without images the prompt is its ids, with no embedding rows.
  const PromptRows text = expand_images(std::vector<int32_t>{1, 2}, {}, t, 4);
  EXPECT_EQ(text.ids, (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(text.embeddings.empty());
}

TEST(ImagePrompt, Refusals) {
  const ImageTokenIds t{.start = 5, .patch = 99, .end = 6};
  const auto one = std::make_shared<const ImageFeatures>(fake_image(std::string(64, 'a'), 3, 4));
  const std::vector<std::shared_ptr<const ImageFeatures>> images{one};
  EXPECT_THROW(expand_images(std::vector<int32_t>{1, 2}, images, t, 4), Error);      // no placeholder
  EXPECT_THROW(expand_images(std::vector<int32_t>{99, 99}, images, t, 4), Error);    // two placeholders
  EXPECT_THROW(expand_images(std::vector<int32_t>{1, 99}, images, t, 8), Error);     // wrong width
}

TEST(VisionEncoder, SavedProjectorLoadsToTheSameOutputs) {
  const VisionEncoder enc = VisionEncoder::random(small_encoder_config(40), 3);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("squeeze_mmproj_" + std::to_string(::getpid()) + ".gguf")).string();
  enc.save(path, "test tower");
  const VisionEncoder back = VisionEncoder::load(path);
  std::filesystem::remove(path);
  EXPECT_EQ(back.config().layers, enc.config().layers);
  EXPECT_EQ(back.config().full_attention, enc.config().full_attention);
  EXPECT_EQ(back.config().window, enc.config().window);
  PreprocessOptions o;
  o.max_image_tokens = 20;
  const PixelPatches px = preprocess(read_image(kDir + "/rgb_noise.png"), o);
  const EncoderOutput a = enc.encode(px), b = back.encode(px);
  EXPECT_EQ(a.features, b.features);  // Q / K interleaved on save and back on load: exact
}

}  // namespace
}  // namespace squeeze::vision

namespace squeeze::vision {
namespace {

// The released cap: at most 4096 image tokens (16384 patches) whatever the image's size
// and shape. The reference's grid passes a small cap for extreme strips (one side under a
// cell): squeeze refuses those images rather than exceed the cap. Prompts refuse a cap
// above 4096 (tests/python/test_image_prompts.py).
TEST(ImageTokenCap, NeverMoreThanTheCap) {
  const int sizes[][2] = {{8192, 8192}, {2160, 3840}, {1080, 1920}, {5000, 1}, {1, 5000}, {28, 28}, {3000, 4000},
                          {8191, 17}, {600, 8000}};
  for (const int cap : {4096, 1024})
    for (const auto& s : sizes) {
      const GridSize g = smart_resize(s[0], s[1], 28, cap);
      const int64_t cells = int64_t(g.height / 28) * (g.width / 28);
      EXPECT_LE(cells, cap) << s[0] << " x " << s[1] << " cap " << cap;
      EXPECT_GE(cells, 1);
    }
  EXPECT_EQ(smart_resize(8192, 8192, 28, 4096).height, 64 * 28);  // a big square fills the cap exactly
  Image strip;
  strip.width = 5000;
  strip.height = 1;
  strip.rgb.assign(5000 * 3, 128);
  PreprocessOptions o;
  o.max_image_tokens = 70;
  EXPECT_THROW(preprocess(strip, o), Error);  // 179 cells at the reference's grid
  o.max_image_tokens = 4096;
  EXPECT_LE(preprocess(strip, o).image_tokens(2), 4096);
}

}  // namespace
}  // namespace squeeze::vision
