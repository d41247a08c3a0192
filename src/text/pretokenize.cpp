// text/pretokenize.cpp — see pretokenize.h. The hand-written Splitter below reproduces
// the three commonest patterns; each of its *_at functions returns the end of the
// match at unit index i (one alternative of the regex after another).
#include "text/pretokenize.h"

#include <array>
#include <memory>
#include <mutex>
#include <span>

#include "core/error.h"
#include "text/regex.h"
#include "text/unicode.h"

namespace squeeze::text {

namespace {

// Source of truth: the `pre_tokenizer` of each model family's HF tokenizer.json (the
// same lists llama.cpp keeps per LLAMA_VOCAB_PRE_TYPE_*). ByteLevel's regex is written
// with its final `|\s+`; llama.cpp drops it, which splits the same (a lone whitespace
// before a non-space is a gap piece of its own either way).
constexpr const char* kGpt2 = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";
constexpr const char* kLlama3 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kQwen2 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kBloom = R"re( ?[^(\s|.,!?…。，、।۔،)]+)re";
constexpr const char* kCjk = R"re([一-龥ࠀ-一가-퟿]+)re";
constexpr const char* kCasedWords = R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)re";
constexpr const char* kUpperWords = R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)re";
constexpr const char* kContractionOpt = R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)?)re";

struct Spec {
  PreTokenizer kind;
  const char* name;
  std::vector<std::string> patterns;
};

const std::vector<Spec>& specs() {
  static const std::vector<Spec> s = {
      {PreTokenizer::gpt2, "gpt2", {kGpt2}},
      {PreTokenizer::llama3, "llama3", {kLlama3}},
      {PreTokenizer::qwen2, "qwen2", {kQwen2}},
      {PreTokenizer::starcoder, "starcoder", {R"re(\p{N})re", kGpt2}},
      {PreTokenizer::deepseek_llm, "deepseek-llm",
       {R"re([\r\n])re", R"re(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)re", R"re(\s?[!-/:-~！-／：-～‘-‟　-。]+)re", R"re(\s+$)re", kCjk,
        R"re(\p{N}+)re"}},
      {PreTokenizer::deepseek_coder, "deepseek-coder",
       {R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", kCjk, R"re(\p{N})re"}},
      {PreTokenizer::deepseek_v3, "deepseek-v3",
       {R"re(\p{N}{1,3})re", R"re([一-龥぀-ゟ゠-ヿ]+)re",
        R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"}},
      {PreTokenizer::falcon, "falcon", {R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2, R"re([0-9][0-9][0-9])re"}},
      {PreTokenizer::qwen35, "qwen35",
       {R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"}},
      {PreTokenizer::bloom, "bloom", {kBloom}},
      {PreTokenizer::viking, "viking", {kBloom, R"re(\p{N})re"}},
      {PreTokenizer::tekken, "tekken",
       {std::string(kCasedWords) + "|" + kUpperWords + R"re(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"}},
      {PreTokenizer::gpt4o, "gpt-4o",
       {std::string(kCasedWords) + kContractionOpt + "|" + kUpperWords + kContractionOpt +
        R"re(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"}},
  };
  return s;
}

struct Name {
  const char* name;
  PreTokenizer kind;
  bool ignore_merges;  // llama.cpp sets ignore_merges for these names
};

// GGUF `tokenizer.ggml.pre` values (as convert_hf_to_gguf.py writes them and llama.cpp
// reads them). "default" is GPT-2 here: squeeze's own vocabularies are written with it.
constexpr Name kNames[] = {
    {"default", PreTokenizer::gpt2, false},       {"gpt2", PreTokenizer::gpt2, false},
    {"gpt-2", PreTokenizer::gpt2, false},         {"phi-2", PreTokenizer::gpt2, false},
    {"mpt", PreTokenizer::gpt2, false},           {"olmo", PreTokenizer::gpt2, false},
    {"jais", PreTokenizer::gpt2, false},          {"llama3", PreTokenizer::llama3, true},
    {"llama-v3", PreTokenizer::llama3, true},     {"llama-bpe", PreTokenizer::llama3, true},
    {"falcon3", PreTokenizer::llama3, true},      {"pixtral", PreTokenizer::llama3, true},
    {"dbrx", PreTokenizer::llama3, false},        {"smaug-bpe", PreTokenizer::llama3, false},
    {"chatglm-bpe", PreTokenizer::llama3, false}, {"qwen2", PreTokenizer::qwen2, false},
    {"stablelm2", PreTokenizer::qwen2, false},    {"deepseek-r1-qwen", PreTokenizer::qwen2, false},
    {"starcoder", PreTokenizer::starcoder, false}, {"refact", PreTokenizer::starcoder, false},
    {"command-r", PreTokenizer::starcoder, false}, {"smollm", PreTokenizer::starcoder, false},
    {"codeshell", PreTokenizer::starcoder, false}, {"exaone", PreTokenizer::starcoder, false},
    {"minerva-7b", PreTokenizer::starcoder, false}, {"deepseek-llm", PreTokenizer::deepseek_llm, false},
    {"deepseek-coder", PreTokenizer::deepseek_coder, false}, {"deepseek-v3", PreTokenizer::deepseek_v3, false},
    {"falcon", PreTokenizer::falcon, false},      {"qwen35", PreTokenizer::qwen35, false},
    {"bloom", PreTokenizer::bloom, false},        {"poro-chat", PreTokenizer::bloom, false},
    {"gpt3-finnish", PreTokenizer::bloom, false}, {"viking", PreTokenizer::viking, false},
    {"tekken", PreTokenizer::tekken, true},       {"gpt-4o", PreTokenizer::gpt4o, false},
    {"llama4", PreTokenizer::gpt4o, false},
};

const Spec& spec(PreTokenizer p) {
  for (const Spec& s : specs())
    if (s.kind == p) return s;
  fail("pre-tokenizer ", static_cast<int>(p), " has no definition");
}

const Name* find_name(std::string_view name) {
  for (const Name& n : kNames)
    if (name == n.name) return &n;
  return nullptr;
}

enum class Hand { none, gpt2, llama3, qwen2 };

class Splitter {
 public:
  explicit Splitter(std::span<const uint32_t> cps) : u_(cps), n_(cps.size()) {}

  uint32_t cp(size_t i) const { return i < n_ ? u_[i] : kInvalidCodePoint; }
  bool letter(size_t i) const { return i < n_ && is_letter(u_[i]); }
  bool number(size_t i) const { return i < n_ && is_number(u_[i]); }
  bool space(size_t i) const { return i < n_ && is_whitespace(u_[i]); }
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

  // Appends the end index of each piece.
  void split(Hand kind, std::vector<size_t>& ends) const {
    for (size_t i = 0; i < n_;) {
      switch (kind) {
        case Hand::gpt2: i = gpt2_at(i); break;
        case Hand::llama3: i = llama3_at(i, 3); break;
        case Hand::qwen2: i = llama3_at(i, 1); break;
        case Hand::none: i = n_; break;
      }
      ends.push_back(i);
    }
  }

 private:
  std::span<const uint32_t> u_;
  size_t n_;
};


struct Step {
  Hand hand;                     // a hand-written fast path, or
  std::unique_ptr<Regex> regex;  // the general engine
};

// Compiled once per kind, on first use (thread-safe static initialisation).
const std::vector<Step>& steps(PreTokenizer p, bool regex_only) {
  static std::array<std::vector<Step>, 32> cache[2];
  static std::once_flag once[2][32];
  const size_t k = static_cast<size_t>(p);
  std::call_once(once[regex_only][k], [&] {
    for (const std::string& pat : spec(p).patterns) {
      Hand h = Hand::none;
      if (!regex_only) h = pat == kGpt2 ? Hand::gpt2 : pat == kLlama3 ? Hand::llama3 : pat == kQwen2 ? Hand::qwen2 : Hand::none;
      cache[regex_only][k].push_back({h, h == Hand::none ? std::make_unique<Regex>(pat) : nullptr});
    }
  });
  return cache[regex_only][k];
}

std::vector<Piece> run_steps(std::string_view text, PreTokenizer kind, bool regex_only) {
  if (text.empty()) return {};
  const std::vector<CodeUnit> units = decode_utf8(text);
  std::vector<uint32_t> cps(units.size());
  for (size_t i = 0; i < units.size(); ++i) cps[i] = units[i].cp;
  std::vector<size_t> ends{cps.size()}, next;
  for (const Step& step : steps(kind, regex_only)) {
    next.clear();
    size_t begin = 0;
    for (size_t end : ends) {
      const std::span<const uint32_t> piece(cps.data() + begin, end - begin);
      const size_t first = next.size();
      if (step.regex) step.regex->split(piece, next);
      else Splitter(piece).split(step.hand, next);
      for (size_t i = first; i < next.size(); ++i) next[i] += begin;
      begin = end;
    }
    ends.swap(next);
  }
  std::vector<Piece> out;
  out.reserve(ends.size());
  size_t begin = 0;
  for (size_t end : ends) {
    const size_t b = units[begin].offset;
    const size_t e = end < units.size() ? units[end].offset : text.size();
    out.push_back({b, e - b});
    begin = end;
  }
  return out;
}

}  // namespace

PreTokenizer pre_tokenizer_from_name(std::string_view name) {
  if (const Name* n = find_name(name)) return n->kind;
  std::string known;
  for (const Name& n : kNames) known += std::string(known.empty() ? "" : ", ") + n.name;
  fail("unsupported pre-tokenizer '", name, "' (known: ", known, ")");
}

const char* pre_tokenizer_name(PreTokenizer p) { return spec(p).name; }

std::vector<std::string> pre_tokenizer_names() {
  std::vector<std::string> out;
  for (const Name& n : kNames) out.push_back(n.name);
  return out;
}

std::vector<std::string> pre_tokenizer_patterns(PreTokenizer p) { return spec(p).patterns; }

bool pre_tokenizer_ignores_merges(std::string_view name) {
  const Name* n = find_name(name);
  return n != nullptr && n->ignore_merges;
}

std::vector<Piece> pre_tokenize(std::string_view text, PreTokenizer kind) { return run_steps(text, kind, false); }

std::vector<Piece> pre_tokenize_with_regex(std::string_view text, PreTokenizer kind) {
  return run_steps(text, kind, true);
}

}  // namespace squeeze::text
