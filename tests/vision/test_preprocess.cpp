// tests/vision/test_preprocess.cpp — the image preprocessing against the reference
// (tests/fixtures/vision, made by scripts/make-muse-glimmer-fixtures vision from
// transformers 5.25's MuseGlimmerImageProcessor and Pillow): smart_resize on many sizes
// and caps (ties included), then decode + Lanczos resize + normalise + patches within 1/255
// per pixel of the reference's pixel values, and the bicubic option within 1/255 of
// torchvision's antialiased bicubic.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vision/image.h"
#include "vision/preprocess.h"
#include "vision/resample.h"

namespace squeeze::vision {
namespace {

const std::string kFixtures = SQUEEZE_VISION_FIXTURES;

nlohmann::json cases() {
  std::ifstream in(kFixtures + "/cases.json");
  EXPECT_TRUE(in) << "missing " << kFixtures << "/cases.json";
  return nlohmann::json::parse(in);
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "missing " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(VisionPreprocess, SmartResizeMatchesTheReference) {
  const auto j = cases();
  ASSERT_GE(j["smart_resize"].size(), 50u);
  for (const auto& c : j["smart_resize"]) {
    const GridSize g = smart_resize(c["height"], c["width"], 28, c["max_tokens"]);
    EXPECT_EQ(g.height, c["target_height"].get<int>()) << c.dump();
    EXPECT_EQ(g.width, c["target_width"].get<int>()) << c.dump();
  }
}

TEST(VisionPreprocess, PixelValuesWithinOneLevelOfTheReference) {
  const auto j = cases();
  ASSERT_GE(j["cases"].size(), 10u);
  for (const auto& c : j["cases"]) {
    const std::string what = c["stem"];
    const Image img = read_image(kFixtures + "/" + c["image"].get<std::string>());
    EXPECT_EQ(img.width, c["width"].get<int>()) << what;
    EXPECT_EQ(img.height, c["height"].get<int>()) << what;
    PreprocessOptions opt;
    opt.max_image_tokens = c["max_image_tokens"];
    const PixelPatches p = preprocess(img, opt);
    ASSERT_EQ(p.grid_h, c["grid_h"].get<int>()) << what;
    ASSERT_EQ(p.grid_w, c["grid_w"].get<int>()) << what;
    const std::vector<uint8_t> ref = read_bytes(kFixtures + "/" + what + ".pixel_values.u8");
    ASSERT_EQ(ref.size(), p.values.size()) << what;
    double worst = 0;
    size_t off_by_one = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      // the reference's value for pixel u is (u − 127.5) / 127.5: compare in pixel levels
      const double ours = double(p.values[i]) * 127.5 + 127.5;
      const double d = std::fabs(ours - double(ref[i]));
      worst = std::max(worst, d);
      off_by_one += d > 0.5;
    }
    EXPECT_LE(worst, 1.0 + 1e-4) << what << ": " << off_by_one << " of " << ref.size() << " values differ";
    // Most values agree exactly: a layout error (patch order, channel order) would not.
    EXPECT_LE(off_by_one, ref.size() / 20) << what;
  }
}

TEST(VisionPreprocess, BicubicWithinOneLevelOfTorchvision) {
  const auto j = cases();
  for (const auto& c : j["cases"]) {
    const std::string what = c["stem"];
    const Image img = read_image(kFixtures + "/" + c["image"].get<std::string>());
    const int w = c["grid_w"].get<int>() * 14, h = c["grid_h"].get<int>() * 14;
    const Image ours = resize(img, w, h, Resample::Bicubic);
    const std::vector<uint8_t> ref = read_bytes(kFixtures + "/" + what + ".tv_bicubic.u8");
    ASSERT_EQ(ref.size(), ours.rgb.size()) << what;
    int worst = 0;
    size_t differ = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const int d = std::abs(int(ours.rgb[i]) - int(ref[i]));
      worst = std::max(worst, d);
      differ += d > 0;
    }
    EXPECT_LE(worst, 1) << what;
    EXPECT_LE(differ, ref.size() / 20) << what;
  }
}

TEST(VisionPreprocess, TokenCountFollowsTheCap) {
  Image img;
  img.width = 1920;
  img.height = 1080;
  img.rgb.assign(size_t(1920) * 1080 * 3, 128);
  PreprocessOptions opt;
  opt.max_image_tokens = 1024;
  const PixelPatches p = preprocess(img, opt);
  EXPECT_LE(p.image_tokens(2), 1024);
  EXPECT_GE(p.image_tokens(2), 900);
  EXPECT_EQ(p.grid_h % 2, 0);
  EXPECT_EQ(p.grid_w % 2, 0);
  for (float v : p.values) ASSERT_NEAR(v, (128 - 127.5) / 127.5, 1e-6);
}

}  // namespace
}  // namespace squeeze::vision
