// text/pretokenize.h — the regex splits byte-level BPE applies before merging.
//
// Each pre-tokenizer is the list of regexes llama.cpp pairs with a GGUF
// `tokenizer.ggml.pre` name; the patterns are those of the models' HF tokenizer.json
// pre_tokenizer (a Sequence of Split(Isolated) steps, then ByteLevel's own regex when
// it has use_regex). Each step re-splits every piece of the step before: matches and
// the gaps between them both become pieces. The three commonest patterns (GPT-2,
// llama3, qwen2) run as hand-written matchers; the others through text/regex.h.
// Byte offsets tile the input exactly, so concatenating the pieces gives back the
// input byte for byte. Bytes that are not well-formed UTF-8 count as "other" (no
// category: like punctuation under [^\s\p{L}\p{N}]).
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
  starcoder,       // \p{N} then gpt2 (smollm, starcoder, refact, command-r, codeshell, ...)
  deepseek_llm,
  deepseek_coder,
  deepseek_v3,
  falcon,
  qwen35,          // qwen2 with combining marks \p{M} joined to letters
  bloom,           // bloom, poro-chat, gpt3-finnish
  viking,
  tekken,
  gpt4o,           // gpt-4o, llama4
};

// Maps a GGUF `tokenizer.ggml.pre` value to a split. Anything unknown is an error
// naming the value (a wrong split silently changes every token id).
PreTokenizer pre_tokenizer_from_name(std::string_view name);
const char* pre_tokenizer_name(PreTokenizer p);
// Every name pre_tokenizer_from_name accepts.
std::vector<std::string> pre_tokenizer_names();
// The regexes of a pre-tokenizer, applied in order.
std::vector<std::string> pre_tokenizer_patterns(PreTokenizer p);
// llama.cpp emits a piece that is itself a token whole, without merging, for some names
// (llama3 and tekken vocabularies rely on it).
bool pre_tokenizer_ignores_merges(std::string_view name);

struct Piece {
  size_t offset, length;  // bytes
};

// Splits text into pre-tokens; the pieces are contiguous and cover all of text.
std::vector<Piece> pre_tokenize(std::string_view text, PreTokenizer kind);

// Splits with the regex engine only, never the hand-written fast paths (tests compare
// the two).
std::vector<Piece> pre_tokenize_with_regex(std::string_view text, PreTokenizer kind);

}  // namespace squeeze::text
