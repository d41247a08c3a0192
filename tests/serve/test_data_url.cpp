// tests/serve/test_data_url.cpp — base64 data: URLs as OpenAI clients send images: the
// RFC 4648 test vectors, random round trips against an independent encoder (tests/common/base64.h), and every
// kind of malformed input refused.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "common/base64.h"
#include "serve/data_url.h"

namespace squeeze::serve {
namespace {

using squeeze::testing::base64_encode;

std::string text(const std::optional<std::vector<uint8_t>>& b) { return b ? std::string(b->begin(), b->end()) : "<none>"; }

TEST(DataUrl, Rfc4648Vectors) {
  EXPECT_EQ(text(decode_base64("")), "");
  EXPECT_EQ(text(decode_base64("Zg==")), "f");
  EXPECT_EQ(text(decode_base64("Zm8=")), "fo");
  EXPECT_EQ(text(decode_base64("Zm9v")), "foo");
  EXPECT_EQ(text(decode_base64("Zm9vYg==")), "foob");
  EXPECT_EQ(text(decode_base64("Zm9vYmE=")), "fooba");
  EXPECT_EQ(text(decode_base64("Zm9vYmFy")), "foobar");
}

TEST(DataUrl, RandomRoundTrips) {
  std::mt19937 rng(std::random_device{}());
  for (int n = 0; n < 200; ++n) {
    std::vector<uint8_t> b(static_cast<size_t>(n), 0);
    for (auto& x : b) x = uint8_t(rng());
    const auto back = decode_base64(base64_encode(b));
    ASSERT_TRUE(back.has_value()) << n;
    EXPECT_EQ(*back, b);
  }
}

TEST(DataUrl, Refusals) {
  for (const char* bad : {"Zg=", "Zg===", "Z===", "Zm9v\n", "Zm 9", "Zm9v!A==", "=Zm9", "Zg==Zm9v"})
    EXPECT_FALSE(decode_base64(bad).has_value()) << bad;
  std::string why;
  EXPECT_FALSE(parse_data_url("http://example.com/a.png", &why));
  EXPECT_NE(why.find("fetches nothing"), std::string::npos);
  EXPECT_FALSE(parse_data_url("data:image/png;base64", &why));   // no comma
  EXPECT_FALSE(parse_data_url("data:image/png,abcd", &why));     // not base64
  EXPECT_FALSE(parse_data_url("data:image/png;base64,a$cd", &why));
  const auto ok = parse_data_url("data:image/png;base64,Zm9v", &why);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->media_type, "image/png");
  EXPECT_EQ(std::string(ok->bytes.begin(), ok->bytes.end()), "foo");
}

}  // namespace
}  // namespace squeeze::serve
