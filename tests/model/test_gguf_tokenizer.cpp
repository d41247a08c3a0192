// tests/model/test_gguf_tokenizer.cpp — the tokenizer's GGUF keys are validated where
// they are read: token ids in range (no int64 → int32 wrap), token types of the right
// count and kind, each error naming the key.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "common/thrown_message.h"
#include "gguf/metadata.h"
#include "model/gguf_config.h"

namespace squeeze::model {
namespace {

using gguf::Metadata;
using gguf::Value;

Metadata vocab_of(int n) {
  Metadata m;
  m.set("tokenizer.ggml.model", Value::string("gpt2"));
  std::vector<std::string> tokens;
  for (int i = 0; i < n; ++i) tokens.push_back("t" + std::to_string(i));
  m.set("tokenizer.ggml.tokens", Value::string_array(tokens));
  return m;
}

void expect_error(const std::function<void(Metadata&)>& edit, const std::string& key, const std::string& what) {
  Metadata m = vocab_of(10);
  edit(m);
  const std::string msg = thrown_message([&] { tokenizer_data_from_gguf(m); });
  EXPECT_NE(msg.find("'" + key + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(what), std::string::npos) << msg;
}

TEST(GgufTokenizer, TokenIdsMustNameATokenAndErrorsNameTheKey) {
  Metadata ok = vocab_of(10);
  ok.set("tokenizer.ggml.bos_token_id", Value::u32(9));
  ok.set("tokenizer.ggml.eos_token_id", Value::i32(0));
  const auto d = tokenizer_data_from_gguf(ok);
  EXPECT_EQ(d.bos_id, 9);
  EXPECT_EQ(d.eos_id, 0);
  EXPECT_EQ(d.pad_id, -1);  // absent: none
  // 2^32 + 3 would wrap to 3, a valid-looking id, through an unchecked int32 cast.
  expect_error([](Metadata& m) { m.set("tokenizer.ggml.bos_token_id", Value::u64((uint64_t{1} << 32) + 3)); },
               "tokenizer.ggml.bos_token_id", "4294967299, outside the vocabulary of 10");
  expect_error([](Metadata& m) { m.set("tokenizer.ggml.eos_token_id", Value::u32(10)); },
               "tokenizer.ggml.eos_token_id", "10, outside");
  expect_error([](Metadata& m) { m.set("tokenizer.ggml.padding_token_id", Value::i32(-1)); },
               "tokenizer.ggml.padding_token_id", "-1, outside");
  expect_error([](Metadata& m) { m.set("tokenizer.ggml.unknown_token_id", Value::i64(-5)); },
               "tokenizer.ggml.unknown_token_id", "-5, outside");
  expect_error([](Metadata& m) { m.set("tokenizer.ggml.token_type", Value::i32_array({1, 1, 1})); },
               "tokenizer.ggml.token_type", "3 entries for 10 tokens");
  expect_error([](Metadata& m) { m.set("tokenizer.ggml.token_type", Value::i32_array({1, 1, 1, 1, 1, 1, 1, 1, 9, 1})); },
               "tokenizer.ggml.token_type", "token 8 the unknown type 9");
}

}  // namespace
}  // namespace squeeze::model
