// text/pretokenize.cpp — see pretokenize.h. Each function below is one alternative of
// the regex: it returns the end of its match at unit index i, or i when it does not match.
#include "text/pretokenize.h"

#include "core/error.h"
#include "text/unicode.h"

namespace squeeze::text {

PreTokenizer pre_tokenizer_from_name(std::string_view name) {
  if (name == "default" || name == "gpt2" || name == "gpt-2") return PreTokenizer::gpt2;
  if (name == "llama3" || name == "llama-bpe" || name == "llama-v3") return PreTokenizer::llama3;
  if (name == "qwen2") return PreTokenizer::qwen2;
  fail("unsupported pre-tokenizer '", name, "' (known: default, gpt2, llama-bpe, llama3, qwen2)");
}

const char* pre_tokenizer_name(PreTokenizer p) {
  switch (p) {
    case PreTokenizer::gpt2: return "gpt2";
    case PreTokenizer::llama3: return "llama3";
    case PreTokenizer::qwen2: return "qwen2";
  }
  return "?";
}

namespace {

class Splitter {
 public:
  Splitter(std::string_view text) : u_(decode_utf8(text)), n_(u_.size()) {}

  uint32_t cp(size_t i) const { return i < n_ ? u_[i].cp : kInvalidCodePoint; }
  bool letter(size_t i) const { return i < n_ && is_letter(u_[i].cp); }
  bool number(size_t i) const { return i < n_ && is_number(u_[i].cp); }
  bool space(size_t i) const { return i < n_ && is_whitespace(u_[i].cp); }
  // [^\s\p{L}\p{N}]
  bool other(size_t i) const { return i < n_ && !letter(i) && !number(i) && !space(i); }
  bool newline(size_t i) const { return cp(i) == '\r' || cp(i) == '\n'; }

  // 's|'t|'re|'ve|'m|'ll|'d, optionally ASCII case-insensitive.
  size_t contraction(size_t i, bool fold) const {
    if (cp(i) != '\'') return i;
    auto lower = [&](size_t k) -> uint32_t {
      const uint32_t c = cp(k);
      return (fold && c >= 'A' && c <= 'Z') ? c + 32 : c;
    };
    const uint32_t a = lower(i + 1), b = lower(i + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    return i;
  }

  template <typename Pred>
  size_t run(size_t i, Pred pred) const {
    while (i < n_ && pred(i)) ++i;
    return i;
  }

  // ` ?X+` for a class X.
  template <typename Pred>
  size_t space_then_run(size_t i, Pred pred) const {
    const size_t j = (cp(i) == ' ' && pred(i + 1)) ? i + 1 : i;
    return pred(j) ? run(j, pred) : i;
  }

  // \s+(?!\S) then \s+: a whitespace run, leaving its last unit to the next piece when
  // a non-space follows (backtracking of the lookahead), but never matching nothing.
  size_t trailing_space(size_t i) const {
    if (!space(i)) return i;
    const size_t j = run(i, [&](size_t k) { return space(k); });
    if (j == n_ || j - i == 1) return j;
    return j - 1;
  }

  size_t gpt2_at(size_t i) const {
    size_t e;
    if ((e = contraction(i, false)) != i) return e;
    if ((e = space_then_run(i, [&](size_t k) { return letter(k); })) != i) return e;
    if ((e = space_then_run(i, [&](size_t k) { return number(k); })) != i) return e;
    if ((e = space_then_run(i, [&](size_t k) { return other(k); })) != i) return e;
    if ((e = trailing_space(i)) != i) return e;
    return i + 1;  // unreachable: every unit is letter, number, space or other
  }

  size_t llama3_at(size_t i, size_t max_digits) const {
    size_t e;
    if ((e = contraction(i, true)) != i) return e;
    // [^\r\n\p{L}\p{N}]?\p{L}+
    {
      const bool prefix = i < n_ && !newline(i) && !letter(i) && !number(i) && letter(i + 1);
      const size_t j = prefix ? i + 1 : i;
      if (letter(j)) return run(j, [&](size_t k) { return letter(k); });
    }
    // \p{N}{1,max_digits}
    if (number(i)) {
      size_t j = i;
      while (j < n_ && j - i < max_digits && number(j)) ++j;
      return j;
    }
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    if ((e = space_then_run(i, [&](size_t k) { return other(k); })) != i) {
      return run(e, [&](size_t k) { return newline(k); });
    }
    // \s*[\r\n]+ : up to and including the last newline of the whitespace run.
    if (space(i)) {
      const size_t j = run(i, [&](size_t k) { return space(k); });
      for (size_t k = j; k > i; --k) {
        if (newline(k - 1)) return k;
      }
    }
    if ((e = trailing_space(i)) != i) return e;
    return i + 1;
  }

  std::vector<Piece> split(PreTokenizer kind) const {
    std::vector<Piece> out;
    for (size_t i = 0; i < n_;) {
      size_t e = 0;
      switch (kind) {
        case PreTokenizer::gpt2: e = gpt2_at(i); break;
        case PreTokenizer::llama3: e = llama3_at(i, 3); break;
        case PreTokenizer::qwen2: e = llama3_at(i, 1); break;
      }
      const size_t begin = u_[i].offset;
      const size_t end = e < n_ ? u_[e].offset : u_.back().offset + u_.back().length;
      out.push_back({begin, end - begin});
      i = e;
    }
    return out;
  }

 private:
  std::vector<CodeUnit> u_;
  size_t n_;
};

}  // namespace

std::vector<Piece> pre_tokenize(std::string_view text, PreTokenizer kind) {
  if (text.empty()) return {};
  return Splitter(text).split(kind);
}

}  // namespace squeeze::text
