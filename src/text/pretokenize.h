// text/pretokenize.h — the regex splits byte-level BPE applies before merging,
// written by hand over UTF-8 code points (no regex engine).
//
// Each split reproduces the leftmost-first, backtracking semantics of the regex it is
// named after (alternatives tried in order at each position); byte offsets tile the
// input exactly, so concatenating the pieces gives back the input byte for byte.
// Bytes that are not well-formed UTF-8 count as "other" (the class of punctuation).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace squeeze::text {

enum class PreTokenizer {
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  gpt2,
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  //   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  llama3,
  // As llama3 but numbers split one digit at a time (\p{N} instead of \p{N}{1,3}).
  qwen2,
};

// Maps a GGUF `tokenizer.ggml.pre` value to a split: "default"/"gpt2"/"gpt-2" → gpt2,
// "llama3"/"llama-bpe"/"llama-v3" → llama3, "qwen2" → qwen2. Anything else is an error
// naming the value (a wrong split silently changes every token id).
PreTokenizer pre_tokenizer_from_name(std::string_view name);
const char* pre_tokenizer_name(PreTokenizer p);

struct Piece {
  size_t offset, length;  // bytes
};

// Splits text into pre-tokens; the pieces are contiguous and cover all of text.
std::vector<Piece> pre_tokenize(std::string_view text, PreTokenizer kind);

}  // namespace squeeze::text
