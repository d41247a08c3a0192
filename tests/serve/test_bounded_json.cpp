// core/bounded_json.h: depth and key limits hold while parsing, on every JSON type squeeze
// reads, and what is within them parses exactly as nlohmann does.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "core/bounded_json.h"

namespace squeeze {
namespace {

std::string nested(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

std::string object_with_keys(int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  return s + "}";
}

TEST(BoundedJson, DepthIsCheckedWhileParsing) {
  EXPECT_TRUE(parse_json_bounded<nlohmann::ordered_json>(nested(64), {.max_depth = 64}).error.empty());
  const auto deep = parse_json_bounded<nlohmann::ordered_json>(nested(65), {.max_depth = 64});
  EXPECT_EQ(deep.error, "nested deeper than 64 levels");
  EXPECT_TRUE(deep.value.is_null());
  // Far past any stack: refused without recursion, in linear time.
  EXPECT_EQ(parse_json_bounded<nlohmann::json>(nested(1'000'000), {}).error, "nested deeper than 64 levels");
  std::string deep_objects;
  for (int i = 0; i < 100'000; ++i) deep_objects += "{\"a\":";
  deep_objects += "1" + std::string(100'000, '}');
  EXPECT_EQ(parse_json_bounded<nlohmann::ordered_json>(deep_objects, {}).error, "nested deeper than 64 levels");
}

TEST(BoundedJson, KeysPerObjectAreCounted) {
  EXPECT_TRUE(parse_json_bounded<nlohmann::ordered_json>(object_with_keys(100), {.max_object_keys = 100}).error.empty());
  EXPECT_EQ(parse_json_bounded<nlohmann::ordered_json>(object_with_keys(101), {.max_object_keys = 100}).error,
            "an object with more than 100 keys");
  // Per object, not in all: 50 objects of 100 keys each are fine; a nested one is counted apart.
  std::string many = "[";
  for (int i = 0; i < 50; ++i) many += (i ? "," : "") + object_with_keys(100);
  EXPECT_TRUE(parse_json_bounded<nlohmann::ordered_json>(many + "]", {.max_object_keys = 100}).error.empty());
  const std::string inner = R"({"a": )" + object_with_keys(100) + R"(, "b": 1})";
  EXPECT_TRUE(parse_json_bounded<nlohmann::ordered_json>(inner, {.max_object_keys = 100}).error.empty());
  // 300k keys: refused at once (unbounded, ordered_json would take minutes).
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(parse_json_bounded<nlohmann::ordered_json>(object_with_keys(300'000), {}).error.empty());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST(BoundedJson, WithinTheLimitsTheValueIsNlohmanns) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    // A random document: nested arrays and objects of numbers, strings, literals.
    std::string doc;
    int depth = 0;
    const std::function<void()> value = [&] {
      const int kind = static_cast<int>(rng() % (depth < 6 ? 7 : 4));
      if (kind == 0) doc += std::to_string(static_cast<int>(rng() % 2000) - 1000);
      if (kind == 1) doc += "\"s" + std::to_string(rng() % 100) + "\\u00e9\"";
      if (kind == 2) doc += rng() % 2 ? "true" : "null";
      if (kind == 3) doc += std::to_string(static_cast<double>(rng() % 1000) / 7.0);
      if (kind >= 4) {
        const bool object = kind == 4;
        doc += object ? "{" : "[";
        ++depth;
        const int n = static_cast<int>(rng() % 5);
        for (int i = 0; i < n; ++i) {
          if (i) doc += ",";
          if (object) doc += "\"k" + std::to_string(i) + "\":";
          value();
        }
        --depth;
        doc += object ? "}" : "]";
      }
    };
    value();
    const auto bounded = parse_json_bounded<nlohmann::ordered_json>(doc, {});
    ASSERT_TRUE(bounded.error.empty()) << doc;
    EXPECT_EQ(bounded.value, nlohmann::ordered_json::parse(doc)) << doc;
  }
  EXPECT_EQ(parse_json_bounded<nlohmann::json>("{\"a\": ", {}).error, "not valid JSON");
  EXPECT_EQ(parse_json_bounded<nlohmann::json>("", {}).error, "not valid JSON");
  EXPECT_THROW(parse_json_or_throw<nlohmann::json>("[", "x.json:"), Error);
}

}  // namespace
}  // namespace squeeze
