// tests/gguf/test_metadata.cpp — metadata values and the typed getters' contract:
// lenient across integer widths when the value fits, an error naming the key otherwise.
#include <gtest/gtest.h>

#include "common/thrown_message.h"
#include "core/error.h"
#include "gguf/json.h"
#include "gguf/metadata.h"
#include "gguf_test_util.h"

namespace squeeze::gguf {
namespace {

TEST(GgufMetadata, ValueTypesMatchTheirIds) {
  EXPECT_EQ(Value::u8(1).type(), ValueType::U8);
  EXPECT_EQ(Value::i16(1).type(), ValueType::I16);
  EXPECT_EQ(Value::u64(1).type(), ValueType::U64);
  EXPECT_EQ(Value::i64(1).type(), ValueType::I64);
  EXPECT_EQ(Value::f64(1).type(), ValueType::F64);
  EXPECT_EQ(Value("s").type(), ValueType::String);
  EXPECT_EQ(Value::boolean(true).type(), ValueType::Bool);
  EXPECT_EQ(static_cast<uint32_t>(Value::f64(1).type()), 12u);
  EXPECT_EQ(static_cast<uint32_t>(Value::string_array({}).type()), 9u);
  for (uint32_t id = 0; id <= 12; ++id)
    EXPECT_EQ(value_type_from_name(value_type_name(*value_type_from_id(id))), value_type_from_id(id));
  EXPECT_FALSE(value_type_from_id(13).has_value());
  EXPECT_THROW(Value::array(ValueType::U32, {Value::i32(1)}), Error);
}

TEST(GgufMetadata, IntegerGettersAcceptAnyWidthThatFits) {
  Metadata md("m.gguf");
  md.set("a", Value::i32(7));
  md.set("b", Value::u64(5000000000ull));
  md.set("c", Value::i8(-3));
  md.set("d", Value::u16(9));
  EXPECT_EQ(md.get_u32("a"), 7u);
  EXPECT_EQ(md.get_u64("a"), 7u);
  EXPECT_EQ(md.get_i64("b"), 5000000000ll);
  EXPECT_EQ(md.get_i32("c"), -3);
  EXPECT_EQ(md.get_u8("d"), 9);
  EXPECT_EQ(thrown_message([&] { md.get_u32("b"); }),
            "m.gguf: metadata key 'b' has value 5000000000, expected an integer in u32 range");
  EXPECT_EQ(thrown_message([&] { md.get_u64("c"); }), "m.gguf: metadata key 'c' has value -3, expected a non-negative integer");
}

TEST(GgufMetadata, MissingAndWrongTypeErrorsNameTheKey) {
  Metadata md("m.gguf");
  md.set("name", "x");
  md.set("f", Value::f32(0.5f));
  EXPECT_EQ(thrown_message([&] { md.get_u32("llama.block_count"); }), "m.gguf: metadata key 'llama.block_count' is missing");
  EXPECT_EQ(thrown_message([&] { md.get_u32("name"); }),
            "m.gguf: metadata key 'name' has type string, expected an integer in u32 range");
  EXPECT_EQ(thrown_message([&] { md.get_string("f"); }), "m.gguf: metadata key 'f' has type f32, expected string");
  EXPECT_EQ(thrown_message([&] { md.get_bool("f"); }), "m.gguf: metadata key 'f' has type f32, expected bool");
  EXPECT_EQ(thrown_message([&] { md.get_f32("name"); }), "m.gguf: metadata key 'name' has type string, expected f32 or f64");
  EXPECT_EQ(thrown_message([&] { md.get_string_array("name"); }),
            "m.gguf: metadata key 'name' has type string, expected an array");
  EXPECT_DOUBLE_EQ(md.get_f64("f"), 0.5);
}

TEST(GgufMetadata, OptionalGettersAreNulloptOnlyWhenMissing) {
  Metadata md("m.gguf");
  md.set("n", Value::u32(4));
  md.set("s", "text");
  EXPECT_EQ(md.get_u32_opt("n"), 4u);
  EXPECT_EQ(md.get_u32_opt("absent"), std::nullopt);
  EXPECT_EQ(md.get_u32_or("absent", 12), 12u);
  EXPECT_EQ(md.get_u32_or("n", 12), 4u);
  EXPECT_EQ(md.get_string_or("absent", "dflt"), "dflt");
  EXPECT_FALSE(md.get_f32_array_opt("absent").has_value());
  EXPECT_THROW(md.get_u32_opt("s"), Error);  // present but wrong: still an error
  EXPECT_THROW(md.get_bool_or("s", true), Error);
}

TEST(GgufMetadata, ArrayGettersConvertAndNameTheBadItem) {
  Metadata md("m.gguf");
  md.set("tokens", Value::string_array({"a", "b"}));
  md.set("types", Value::array(ValueType::U8, {Value::u8(1), Value::u8(6)}));
  md.set("scores", Value::array(ValueType::F64, {Value::f64(0.5), Value::f64(-1)}));
  md.set("mixed", Value::array(ValueType::I64, {Value::i64(1), Value::i64(int64_t{1} << 40)}));
  md.set("swa", Value::array(ValueType::Bool, {Value::boolean(true), Value::boolean(false)}));
  EXPECT_EQ(md.get_string_array("tokens"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(md.get_i32_array("types"), (std::vector<int32_t>{1, 6}));
  EXPECT_EQ(md.get_f32_array("scores"), (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(md.get_i64_array("mixed"), (std::vector<int64_t>{1, int64_t{1} << 40}));
  EXPECT_EQ(md.get_bool_array("swa"), (std::vector<bool>{true, false}));
  EXPECT_EQ(thrown_message([&] { md.get_i32_array("mixed"); }),
            "m.gguf: metadata key 'mixed' is an array of i64 whose item 1 (1099511627776) is not an integer in i32 range");
  EXPECT_EQ(thrown_message([&] { md.get_string_array("types"); }),
            "m.gguf: metadata key 'types' is an array of u8 whose item 0 (1) is not a string");
}

TEST(GgufMetadata, SetKeepsOrderEraseAndAddRejectsDuplicates) {
  Metadata md;
  md.set("a", Value::u32(1));
  md.set("b", Value::u32(2));
  md.set("a", Value::u32(3));
  ASSERT_EQ(md.size(), 2u);
  EXPECT_EQ(md.entries()[0].key, "a");
  EXPECT_EQ(md.get_u32("a"), 3u);
  EXPECT_THROW(md.add("b", Value::u32(9)), Error);
  EXPECT_TRUE(md.erase("a"));
  EXPECT_FALSE(md.erase("a"));
  EXPECT_EQ(md.get_u32("b"), 2u);
  EXPECT_EQ(md.entries()[0].key, "b");
}

TEST(GgufMetadata, DisplayAbbreviatesLongArrays) {
  std::vector<int32_t> xs(100);
  for (int i = 0; i < 100; ++i) xs[static_cast<size_t>(i)] = i;
  EXPECT_EQ(Value::i32_array(xs).to_display(3), "[0, 1, 2, ...] (100 items)");
  EXPECT_EQ(Value::i32_array({1, 2}).to_display(3), "[1, 2]");
  EXPECT_EQ(Value("a'b\n").to_display(), "'a\\'b\\n'");
  EXPECT_EQ(Value::f32(0.1f).to_display(), "0.1");
  EXPECT_EQ(Value::u8(200).to_display(), "200");
}

TEST(GgufMetadata, JsonRoundTripKeepsEveryTypeExactly) {
  const Metadata md = testing::sample_metadata();
  for (const KeyValue& kv : md.entries()) {
    const Json j = value_to_json(kv.value);
    const Value back = value_from_json(Json::parse(j.dump()));
    EXPECT_EQ(back, kv.value) << kv.key << " " << j.dump();
  }
  EXPECT_THROW(value_from_json(Json::parse(R"({"type":"u8","value":256})")), Error);
  EXPECT_THROW(value_from_json(Json::parse(R"({"type":"i8","value":-129})")), Error);
  EXPECT_THROW(value_from_json(Json::parse(R"({"type":"u128","value":1})")), Error);
  EXPECT_THROW(value_from_json(Json::parse(R"({"type":"array","element_type":"u8","value":[1,"x"]})")), Error);
}

}  // namespace
}  // namespace squeeze::gguf
