// text/normalizer.h — Hugging Face tokenizers' normalizers that byte-level BPE models
// declare in tokenizer.json (Qwen2's NFC, others' Lowercase, Strip, Replace, Prepend), run
// on each text fragment between special tokens before pre-tokenizing, as the tokenizers
// library does. GGUF has no key for them (llama.cpp drops them, and its ids then differ
// from Hugging Face's on unnormalized input); squeeze stores the steps under
// `squeeze.tokenizer.normalizer`, one string per step:
//   "NFC" "NFD" "NFKC" "NFKD" "Lowercase" "Strip <left 0|1> <right 0|1>"
//   "Replace <hex pattern> <hex content>" "Prepend <hex text>"
// (hex: the UTF-8 bytes, so any text survives the string array).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace squeeze::text {

class Normalizer {
 public:
  Normalizer() = default;  // no steps: the identity
  // Errors (an unknown step, bad hex) are one-line squeeze::Errors naming the step.
  explicit Normalizer(const std::vector<std::string>& steps);

  bool empty() const { return steps_.empty(); }
  std::string apply(std::string_view text) const;

  // Step strings, for the converter.
  static std::string replace_step(std::string_view pattern, std::string_view content);
  static std::string prepend_step(std::string_view text);

 private:
  struct Step {
    enum class Kind { nfc, nfd, nfkc, nfkd, lowercase, strip, replace, prepend } kind;
    bool left = false, right = false;
    std::string pattern, content;
  };
  std::vector<Step> steps_;
};

}  // namespace squeeze::text
