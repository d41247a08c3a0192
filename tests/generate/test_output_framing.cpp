// tests/generate/test_output_framing.cpp — which output framing (and so which parser) a
// vocabulary gets: Muse Glimmer's specials, harmony's (gpt-oss), Qwen's <think> / <tool_call>,
// Llama 3's <|python_tag|>, else plain; and that ChatFormat's parser for a tagged vocabulary starts
// inside the thinking only when the prompt opened it.
#include <gtest/gtest.h>

#include "common/harmony_tokenizer.h"
#include "common/muse_tokenizer.h"
#include "generate/chat_format.h"
#include "train/corpus.h"

using namespace squeeze;
using generate::OutputFraming;

namespace {

// A small BPE vocabulary whose first special tokens are renamed to `specials`.
text::Tokenizer vocabulary(const std::vector<std::string>& specials) {
  text::TokenizerData data = train::train_tokenizer(std::string(40, 'a') + " think tool call ", 300);
  data.token_types.resize(data.tokens.size(), static_cast<int32_t>(text::TokenType::normal));
  for (size_t i = 0; i < specials.size(); ++i) {
    data.tokens[i] = specials[i];
    // Qwen's <think> and <tool_call> are user-defined tokens (rendered in text), Llama's tag a control one.
    data.token_types[i] = static_cast<int32_t>(specials[i].starts_with("<|") ? text::TokenType::control
                                                                             : text::TokenType::user_defined);
  }
  return text::Tokenizer(data);
}

}  // namespace

TEST(OutputFraming, TheVocabularyChoosesTheFraming) {
  EXPECT_EQ(generate::output_framing(muse_test_tokenizer("one two three ", 20, 300)), OutputFraming::muse_glimmer);
  EXPECT_EQ(generate::output_framing(vocabulary({"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"})),
            OutputFraming::tagged);
  EXPECT_EQ(generate::output_framing(vocabulary({"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>"})),
            OutputFraming::tagged);
  EXPECT_EQ(generate::output_framing(vocabulary({"<|begin_of_text|>", "<|eot_id|>", "<|python_tag|>"})),
            OutputFraming::llama3_json);
  EXPECT_EQ(generate::output_framing(harmony_test_tokenizer("one two three ", 20, 300)), OutputFraming::harmony);
  EXPECT_EQ(generate::output_framing(vocabulary({"<|start|>", "<|channel|>", "<|message|>", "<|return|>"})),
            OutputFraming::harmony);
  // Harmony needs <|channel|> and <|return|> beside <|start|> <|message|>; Muse Glimmer's
  // specials win where a vocabulary has both.
  EXPECT_EQ(generate::output_framing(vocabulary({"<|start|>", "<|message|>", "<|return|>"})), OutputFraming::plain);
  EXPECT_EQ(generate::output_framing(
                vocabulary({"<|start|>", "<|channel|>", "<|message|>", "<|return|>", "<|eom|>", "<|eot|>"})),
            OutputFraming::muse_glimmer);
  // squeeze's own trained vocabularies reserve <think> as a control token: plain.
  EXPECT_EQ(generate::output_framing(vocabulary({"<|endoftext|>", "<|im_start|>", "<|im_end|>"})), OutputFraming::plain);
}
