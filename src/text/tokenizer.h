// text/tokenizer.h — byte-level BPE (GGUF `tokenizer.ggml.model = gpt2`) and
// SentencePiece (`llama`): encode, decode.
//
// The vocabulary arrives as plain vectors (TokenizerData) in the form GGUF stores it, so
// this component needs no file reader: normal tokens and merges are written in GPT-2's
// byte→unicode alphabet ("Ġthe" is " the"), control and user-defined tokens as raw text.
//
// encode(): special tokens are cut out of the text first, whole, the way llama.cpp
// does it: longest token text first, each at every place it occurs in what is left
// (user-defined tokens always; control and unknown ones only with parse_special).
// Byte-level BPE: the rest is split by the pre-tokenizer and each piece is merged by
// rank (lowest rank first, leftmost on ties). Any piece whose bytes end up without a
// token falls back to single-byte tokens, so with all 256 byte tokens in the
// vocabulary decode(encode(s)) == s for every byte string s (invalid UTF-8 included).
// SentencePiece (llama.cpp's SPM algorithm, text/spm.cpp): spaces become U+2581 "▁"
// (plus one in front with add_space_prefix, also after each special token), the text
// is split into UTF-8 characters, and the adjacent pair whose concatenation is a token
// with the highest score merges first (leftmost on ties); a symbol that is no token
// falls back to its bytes' <0xNN> tokens, or the unknown token.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/normalizer.h"
#include "text/pretokenize.h"

namespace squeeze::text {

// GGUF `tokenizer.ggml.token_type` values.
enum class TokenType : int32_t {
  undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6,
};

// What the GGUF loader (or a test) hands over; field names follow the GGUF keys.
struct TokenizerData {
  std::string model = "gpt2";           // tokenizer.ggml.model: "gpt2" (BPE) or "llama" (SentencePiece)
  std::string pre = "default";          // tokenizer.ggml.pre
  std::vector<std::string> tokens;      // tokenizer.ggml.tokens (index = id)
  std::vector<std::string> merges;      // tokenizer.ggml.merges ("left right", rank = index)
  std::vector<int32_t> token_types;     // tokenizer.ggml.token_type; empty = all normal
  std::vector<float> scores;            // tokenizer.ggml.scores (SentencePiece merge priority)
  int32_t bos_id = -1, eos_id = -1, pad_id = -1, unk_id = -1;  // -1 = absent
  bool add_bos = false, add_eos = false;  // tokenizer.ggml.add_{bos,eos}_token
  bool add_space_prefix = true;           // tokenizer.ggml.add_space_prefix (SentencePiece only)
  // When true a piece that is itself a token is emitted whole without merging
  // (llama.cpp does this for the llama-bpe pre-tokenizer; the loader sets it from `pre`).
  bool ignore_merges = false;
  // squeeze.tokenizer.normalizer: Hugging Face normalizer steps (text/normalizer.h).
  std::vector<std::string> normalizer = {};
};

struct EncodeOptions {
  bool add_special = true;    // prepend BOS / append EOS as the data's add_* flags say
  bool parse_special = true;  // match control token texts in the input (user-defined ones always)
  // Byte ranges [first, second) of the input where control token texts stay text even with
  // parse_special: message content inside a rendered chat prompt, so a user who types
  // "<|im_end|>" cannot end their turn and speak as another role. Sorted, disjoint.
  std::span<const std::pair<size_t, size_t>> literal_ranges = {};
};

struct DecodeOptions {
  bool render_control = true;  // control tokens (BOS, EOS, ...) as their text; false: nothing
};

class Tokenizer {
 public:
  // Validates the data (errors name the offending token/merge index) and builds the
  // merge table.
  explicit Tokenizer(const TokenizerData& data);

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& opt = {}) const;
  std::string decode(std::span<const int32_t> ids, const DecodeOptions& opt = {}) const;
  // The bytes one token stands for (what a streaming decoder appends).
  std::string token_to_piece(int32_t id, const DecodeOptions& opt = {}) const;

  int32_t n_vocab() const { return static_cast<int32_t>(texts_.size()); }
  const std::string& token_text(int32_t id) const;  // as stored in the vocabulary
  TokenType token_type(int32_t id) const;
  std::optional<int32_t> find_token(std::string_view stored_text) const;
  int32_t bos_id() const { return bos_; }
  int32_t eos_id() const { return eos_; }
  int32_t pad_id() const { return pad_; }
  int32_t unk_id() const { return unk_; }
  // Whether encode() with add_special prepends BOS / appends EOS (tokenizer.ggml.add_*).
  bool adds_bos() const { return add_bos_; }
  bool adds_eos() const { return add_eos_; }
  PreTokenizer pre_tokenizer() const { return pre_; }
  bool is_sentencepiece() const { return spm_; }

 private:
  Normalizer normalizer_;  // before pre-tokenizing each text fragment
  struct Merge {
    int32_t rank;
    int32_t result;  // symbol id
  };
  // Transparent hashing: look tokens up by string_view without building a string.
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  void check_id(int32_t id) const;
  int32_t intern(const std::string& bytes);
  void encode_text(std::string_view text, bool after_special, std::vector<int32_t>& out) const;
  void encode_spm(std::string_view text, bool after_special, std::vector<int32_t>& out) const;
  // Cuts special tokens out of text: (offset, length, token or -1 for plain text).
  struct Fragment {
    size_t offset, length;
    int32_t token;
  };
  std::vector<Fragment> partition_special(std::string_view text, const EncodeOptions& opt) const;
  void add_special(const std::string& text, int32_t id);
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;
  void emit_symbol(int32_t sym, std::vector<int32_t>& out) const;

  std::vector<std::string> texts_;   // stored text per token
  std::vector<TokenType> types_;
  std::vector<std::string> pieces_;  // decoded bytes per token (control: its text)
  std::unordered_map<std::string, int32_t, TextHash, std::equal_to<>> text_to_id_;

  // BPE symbols: byte strings met as tokens or merge parts/results. Symbols 0..255 are
  // the single bytes.
  std::vector<std::string> sym_bytes_;
  std::vector<int32_t> sym_token_;  // normal token with these bytes, or -1
  std::unordered_map<std::string, int32_t> sym_of_bytes_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left sym << 32 | right sym) → merge

  // Special token texts as a byte trie: (node << 8 | byte) → child node; a node's
  // token (or -1) in trie_token_. Finds which specials occur in linear time.
  std::unordered_map<uint64_t, int32_t> trie_;
  std::vector<int32_t> trie_token_{-1};

  // SentencePiece
  bool spm_ = false, add_space_prefix_ = false;
  std::vector<float> scores_;
  std::array<int32_t, 256> byte_token_;  // <0xNN> (or the one-byte token), or -1

  PreTokenizer pre_;
  int32_t bos_, eos_, pad_, unk_;
  bool add_bos_, add_eos_, ignore_merges_;
};

// GPT-2's byte↔unicode alphabet: printable Latin-1 bytes map to themselves, the other
// 68 bytes to U+0100.. in order. Returns the UTF-8 of the character for byte b.
const std::string& gpt2_byte_to_unicode(uint8_t b);
// The inverse on code points; nullopt for characters outside the alphabet.
std::optional<uint8_t> gpt2_unicode_to_byte(uint32_t cp);
// Encodes raw bytes in the alphabet (how GGUF stores normal tokens).
std::string gpt2_encode_bytes(std::string_view bytes);

}  // namespace squeeze::text
