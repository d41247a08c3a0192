// tests/vision/test_image_errors.cpp — bad image input is one clear error, never a crash,
// a hang or a silently wrong image: unknown formats, truncated and corrupt PNG / JPEG
// data, a header declaring a huge image (checked before any pixel is decoded), files past
// the size limit, missing files.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "common/thrown_message.h"
#include "core/error.h"
#include "vision/image.h"

namespace squeeze::vision {
namespace {

const std::string kFixtures = SQUEEZE_VISION_FIXTURES;

std::vector<uint8_t> file_bytes(const std::string& name) {
  std::ifstream in(kFixtures + "/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string decode_error(const std::vector<uint8_t>& bytes, const ImageLimits& limits = {}) {
  return thrown_message([&] { decode_image(bytes.data(), bytes.size(), "img", limits); });
}

uint32_t crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void put_be32(std::vector<uint8_t>& v, uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(uint8_t(x >> s));
}

// A PNG signature and a valid IHDR declaring width × height, then nothing.
std::vector<uint8_t> png_header(uint32_t width, uint32_t height) {
  std::vector<uint8_t> v = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> chunk = {'I', 'H', 'D', 'R'};
  put_be32(chunk, width);
  put_be32(chunk, height);
  chunk.insert(chunk.end(), {8, 2, 0, 0, 0});  // 8-bit RGB, deflate, no filter, no interlace
  put_be32(v, 13);
  v.insert(v.end(), chunk.begin(), chunk.end());
  put_be32(v, crc32(chunk.data(), chunk.size()));
  return v;
}

TEST(VisionImageErrors, UnknownFormatsAndEmptyInput) {
  EXPECT_NE(decode_error({}).find("img: not a PNG or JPEG image"), std::string::npos);
  const std::vector<uint8_t> gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0};
  EXPECT_NE(decode_error(gif).find("not a PNG or JPEG image"), std::string::npos);
}

TEST(VisionImageErrors, TruncatedAndCorruptPng) {
  const auto png = file_bytes("rgb_noise.png");
  for (size_t keep : {size_t(8), size_t(30), png.size() / 2, png.size() - 13}) {
    const std::vector<uint8_t> cut(png.begin(), png.begin() + long(keep));
    EXPECT_NE(decode_error(cut).find("img: corrupt PNG"), std::string::npos) << keep;
  }
  auto flipped = png;
  flipped[png.size() / 2] ^= 0x5a;  // inside IDAT: its CRC no longer matches
  EXPECT_NE(decode_error(flipped).find("corrupt PNG"), std::string::npos);
}

TEST(VisionImageErrors, TruncatedAndCorruptJpeg) {
  const auto jpg = file_bytes("smooth.jpg");
  ASSERT_NO_THROW(decode_image(jpg.data(), jpg.size(), "img"));
  for (size_t keep : {size_t(3), size_t(20), jpg.size() / 2, jpg.size() - 2}) {
    const std::vector<uint8_t> cut(jpg.begin(), jpg.begin() + long(keep));
    EXPECT_NE(decode_error(cut).find("img: corrupt JPEG"), std::string::npos) << keep;
  }
  auto garbage = jpg;
  for (size_t i = 3; i < 40 && i < garbage.size(); ++i) garbage[i] = 0x13;
  EXPECT_NE(decode_error(garbage).find("corrupt JPEG"), std::string::npos);
}

TEST(VisionImageErrors, HugeDeclaredSizeIsRefusedBeforeDecoding) {
  // 100000 × 100000 pixels would be 30 GB of RGB: refused from the header alone.
  const std::string m = decode_error(png_header(100000, 100000));
  EXPECT_NE(m.find("100000 x 100000 pixels exceeds the limit"), std::string::npos) << m;
  ImageLimits small;
  small.max_pixels = 1000;
  const auto jpg = file_bytes("smooth.jpg");  // 97 x 33
  EXPECT_NE(decode_error(jpg, small).find("97 x 33 pixels exceeds the limit of 1000"), std::string::npos);
  small = {};
  small.max_file_bytes = 100;
  EXPECT_NE(decode_error(jpg, small).find("bytes exceeds the limit of 100 bytes"), std::string::npos);
}

// Found by fuzz/fuzz_data_url_image.cpp: 2^32 - 1 squared overflowed the int64 pixel count
// (undefined behaviour; wrapped negative, it passed the limit and libpng refused it instead).
TEST(VisionImageErrors, LargestDeclaredPngSizeIsRefusedWithoutOverflow) {
  const std::string m = decode_error(png_header(0xffffffffu, 0xffffffffu));
  EXPECT_NE(m.find("4294967295 x 4294967295 pixels exceeds the limit"), std::string::npos) << m;
}

TEST(VisionImageErrors, MissingFileIsNamed) {
  const std::string m = thrown_message([] { read_image("/nonexistent/screen.png"); });
  EXPECT_NE(m.find("/nonexistent/screen.png: cannot open the image"), std::string::npos) << m;
}

}  // namespace
}  // namespace squeeze::vision
