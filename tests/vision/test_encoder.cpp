// tests/vision/test_encoder.cpp — the vision tower, adapter and projection against the
// reference (tests/fixtures/vision/encoder: a tiny random tower of transformers 5.25's
// architecture — 5 blocks, windowed 0–2 and full 3–4, windows of 4 x 4 patches over a
// non-square 6 x 10 grid — its adapter and projection, and the projector GGUF written with
// llama.cpp's names and interleaved Q / K rows), and projector files refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "common/thrown_message.h"
#include "core/thread_pool.h"
#include "vision/encoder.h"

namespace squeeze::vision {
namespace {

const std::string kDir = std::string(SQUEEZE_VISION_FIXTURES) + "/encoder";

std::vector<float> read_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(in) << "missing " << path;
  std::vector<float> v(size_t(in.tellg()) / 4);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 4));
  return v;
}

double relative_error(const std::vector<float>& ours, const std::vector<float>& ref) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    worst = std::max(worst, std::fabs(double(ours[i]) - double(ref[i])));
    scale = std::max(scale, std::fabs(double(ref[i])));
  }
  return worst / scale;
}

TEST(VisionEncoder, MatchesTheReference) {
  const VisionEncoder enc = VisionEncoder::load(kDir + "/mmproj.gguf");
  const EncoderConfig& c = enc.config();
  EXPECT_EQ(c.layers, 5);
  EXPECT_EQ(c.window, 4);
  EXPECT_EQ(c.full_attention, (std::vector<bool>{false, false, false, true, true}));
  PixelPatches px;
  px.grid_h = 6;
  px.grid_w = 10;
  px.patch_size = 14;
  px.values = read_f32(kDir + "/pixels.f32");
  ASSERT_EQ(px.values.size(), 60u * 588);
  const EncoderOutput out = enc.encode(px);
  EXPECT_EQ(out.tokens, 15);
  const auto tower = read_f32(kDir + "/tower.f32"), features = read_f32(kDir + "/features.f32");
  ASSERT_EQ(out.merged.size(), tower.size());
  ASSERT_EQ(out.features.size(), features.size());
  EXPECT_LE(relative_error(out.merged, tower), 1e-4);
  EXPECT_LE(relative_error(out.features, features), 1e-4);
  ThreadPool pool(2);  // the products spread over threads: the same result
  const EncoderOutput spread = enc.encode(px, &pool);
  EXPECT_LE(relative_error(spread.features, features), 1e-4);
}

TEST(VisionEncoder, RandomTowerOfAGivenShape) {
  EncoderConfig c;
  c.layers = 2;
  c.width = 32;
  c.mlp = 48;
  c.heads = 2;
  c.patch = 14;
  c.pos_grid = 4;
  c.merge = 2;
  c.window = 4;
  c.adapter_hidden = 24;
  c.text_width = 16;
  c.full_attention = {false, true};
  const VisionEncoder enc = VisionEncoder::random(c, 7);
  PixelPatches px;
  px.grid_h = 4;
  px.grid_w = 6;
  px.patch_size = 14;
  px.values.assign(24 * 588, 0.25f);
  const EncoderOutput out = enc.encode(px);
  ASSERT_EQ(out.features.size(), 6u * 16);
  for (float v : out.features) ASSERT_TRUE(std::isfinite(v));
  double ss = 0;  // each token RMS-normalised
  for (int j = 0; j < 16; ++j) ss += double(out.features[size_t(j)]) * out.features[size_t(j)];
  EXPECT_NEAR(ss / 16, 1.0, 1e-3);
  c.width = 30;  // not a whole number of heads with a head dimension divisible by 4
  EXPECT_THROW(VisionEncoder::random(c, 7), Error);
}

TEST(VisionEncoder, BadInputIsNamed) {
  const std::string drafter = std::string(SQUEEZE_VISION_FIXTURES) + "/../dflash/tiny/drafter.gguf";
  EXPECT_NE(thrown_message([&] { VisionEncoder::load(drafter); }).find("not a projector file"), std::string::npos);
  EXPECT_NE(thrown_message([&] { VisionEncoder::load(kDir + "/case.json"); }).find("case.json"), std::string::npos);
  const VisionEncoder enc = VisionEncoder::load(kDir + "/mmproj.gguf");
  PixelPatches odd;
  odd.grid_h = 3;
  odd.grid_w = 4;
  odd.patch_size = 14;
  odd.values.assign(12 * 588, 0.5f);
  EXPECT_NE(thrown_message([&] { enc.encode(odd); }).find("multiple of 2"), std::string::npos);
}

}  // namespace
}  // namespace squeeze::vision
