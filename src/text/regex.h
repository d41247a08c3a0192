// text/regex.h — a small backtracking regex engine over code points, for the
// pre-tokenizer patterns of HF tokenizer.json files (which llama.cpp lists per
// `tokenizer.ggml.pre`).
//
// Why our own: std::regex has no \p{..} classes and works on bytes or wchar_t, and
// the patterns need Unicode general categories; a pre-tokenizer only needs a small,
// well-defined subset, matched with the leftmost-first backtracking semantics of the
// Oniguruma / fancy-regex engines HF tokenizers use.
//
// Supported: literals (UTF-8), `.`, classes `[...]` / `[^...]` with ranges and escapes,
// \p{X} / \P{X} for general categories (L, Lu, Ll, Lt, Lm, Lo, M, Mn, Mc, Me, N, Nd, Nl,
// No, P, Pc, Pd, Ps, Pe, Pi, Pf, Po, S, Sm, Sc, Sk, So, Z, Zs, Zl, Zp, C, Cc, Cf, Cs, Co,
// Cn), \s \S (White_Space), \d \D (Nd), \w \W, \r \n \t \f \v, escaped punctuation;
// groups (...) (?:...) (?i:...) (ASCII case folding), lookahead (?=...) (?!...),
// alternation, quantifiers ? * + {n} {n,} {n,m} with lazy (?) and possessive (+)
// forms, anchors ^ $ \b \B. Anything else is an error naming the pattern (never a
// silent misparse). Inputs are code points; kInvalidCodePoint (a byte that is not
// UTF-8) belongs to no category and is not whitespace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace squeeze::text {

namespace regex_detail {
struct Node;
}

class Regex {
 public:
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // End of the first (leftmost-first) match starting exactly at `pos` of `text`, or
  // `npos`. Lookarounds and anchors see only `text`.
  static constexpr size_t npos = static_cast<size_t>(-1);
  size_t match_at(std::span<const uint32_t> text, size_t pos) const;

  // HF "Split(behavior = Isolated)": every non-empty match becomes a piece and so does
  // every gap between matches. Appends the end index of each piece to `ends`.
  void split(std::span<const uint32_t> text, std::vector<size_t>& ends) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::vector<std::unique_ptr<regex_detail::Node>> nodes_;  // owns every node
  const regex_detail::Node* root_ = nullptr;
};

}  // namespace squeeze::text
