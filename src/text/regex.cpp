// text/regex.cpp — see regex.h. A pattern parses into a tree of nodes; matching is
// backtracking in continuation-passing style (each node is given "what must match
// after me"), which gives leftmost-first alternation and greedy/lazy backtracking
// without an explicit stack. Repeats of a one-code-point item (`\p{L}+`, `[^\s]*`,
// the tekken `((?=[\p{L}])([^a-z]))*`) are counted in a loop instead of recursing per
// iteration, so a long run of letters costs no stack depth.
#include "text/regex.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "text/unicode.h"

namespace squeeze::text {

namespace regex_detail {

enum class Kind : uint8_t { cls, seq, alt, repeat, look, anchor };
enum class Mode : uint8_t { greedy, lazy, possessive };

struct ClassItem {
  enum Type : uint8_t { range, cats, space, word } type;
  bool negate = false;  // \P{..}, \S, \W, \D
  uint32_t lo = 0, hi = 0;  // range
  uint32_t mask = 0;        // cats: bit per Category
};

struct Node {
  Kind kind;
  // cls
  std::vector<ClassItem> items;
  bool negated = false, icase = false;
  // seq, alt
  std::vector<const Node*> kids;
  // repeat, look
  const Node* kid = nullptr;
  size_t min = 0, max = 0;  // max == SIZE_MAX: unbounded
  Mode mode = Mode::greedy;
  bool one_char = false;  // the repeated item always consumes exactly one code point
  bool negate = false;    // look: (?!..)
  char anchor = 0;        // '^', '$', 'b', 'B'
};

constexpr size_t kUnbounded = static_cast<size_t>(-1);

uint32_t bit(Category c) { return 1u << static_cast<unsigned>(c); }

uint32_t major_mask(char major) {
  uint32_t m = 0;
  for (int c = 0; c <= static_cast<int>(Category::Co); ++c)
    if (major_category(static_cast<Category>(c)) == major) m |= 1u << c;
  return m;
}

bool is_word(uint32_t c) {
  const Category cat = general_category(c);
  const char major = major_category(cat);
  return major == 'L' || major == 'M' || cat == Category::Nd || cat == Category::Pc;
}

bool items_hit(const Node& n, uint32_t c) {
  for (const ClassItem& it : n.items) {
    bool h = false;
    switch (it.type) {
      case ClassItem::range: h = c >= it.lo && c <= it.hi; break;
      case ClassItem::cats: h = (it.mask & bit(general_category(c))) != 0; break;
      case ClassItem::space: h = is_whitespace(c); break;
      case ClassItem::word: h = is_word(c); break;
    }
    if (h != it.negate) return true;
  }
  return false;
}

bool class_match(const Node& n, uint32_t c) {
  bool hit = items_hit(n, c);
  // (?i:..) folds ASCII letters only: the patterns use it for English contractions,
  // and Unicode folding would also match e.g. U+017F (long s) for 's'.
  if (!hit && n.icase && c < 0x80 && ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) hit = items_hit(n, c ^ 0x20);
  return hit != n.negated;
}

// ---- matching ------------------------------------------------------------------------

struct Cont {
  enum Type : uint8_t { seq_rest, repeat_more } type;
  const Node* node;
  size_t index;  // seq_rest: next kid; repeat_more: iterations done
  size_t start;  // repeat_more: where the last iteration began
  const Cont* next;
};

class Matcher {
 public:
  explicit Matcher(std::span<const uint32_t> t) : t_(t) {}
  size_t end = 0;

  bool run(const Node* n, size_t i, const Cont* k) {
    switch (n->kind) {
      case Kind::cls:
        return i < t_.size() && class_match(*n, t_[i]) && cont(i + 1, k);
      case Kind::seq:
        return seq_from(n, 0, i, k);
      case Kind::alt:
        for (const Node* kid : n->kids)
          if (run(kid, i, k)) return true;
        return false;
      case Kind::repeat:
        if (n->one_char) return repeat_one(n, i, k);
        if (n->mode == Mode::possessive) {  // atomic: the repeat's first match, no backtracking into it
          Matcher sub(t_);
          if (!sub.repeat_from(n, 0, kUnbounded, i, nullptr)) return false;
          return cont(sub.end, k);
        }
        return repeat_from(n, 0, kUnbounded, i, k);
      case Kind::look: {
        Matcher sub(t_);
        return sub.run(n->kid, i, nullptr) != n->negate && cont(i, k);
      }
      case Kind::anchor:
        return anchor_ok(n->anchor, i) && cont(i, k);
    }
    return false;
  }

 private:
  bool cont(size_t i, const Cont* k) {
    if (k == nullptr) {
      end = i;
      return true;
    }
    if (k->type == Cont::seq_rest) return seq_from(k->node, k->index, i, k->next);
    return repeat_from(k->node, k->index, k->start, i, k->next);
  }

  bool seq_from(const Node* n, size_t idx, size_t i, const Cont* k) {
    if (idx == n->kids.size()) return cont(i, k);
    if (idx + 1 == n->kids.size()) return run(n->kids[idx], i, k);
    const Cont c{Cont::seq_rest, n, idx + 1, 0, k};
    return run(n->kids[idx], i, &c);
  }

  // `count` iterations are done and the last began at `start`; we are at `i`.
  bool repeat_from(const Node* n, size_t count, size_t start, size_t i, const Cont* k) {
    // An iteration that matched nothing would repeat forever: stop iterating.
    const bool more = (n->max == kUnbounded || count < n->max) && !(count > 0 && i == start);
    const Cont c{Cont::repeat_more, n, count + 1, i, k};
    if (n->mode == Mode::lazy) {
      if (count >= n->min && cont(i, k)) return true;
      return more && run(n->kid, i, &c);
    }
    if (more && run(n->kid, i, &c)) return true;
    return count >= n->min && cont(i, k);
  }

  bool one_at(const Node* kid, size_t j) {
    if (j >= t_.size()) return false;
    if (kid->kind == Kind::cls) return class_match(*kid, t_[j]);
    Matcher sub(t_);
    return sub.run(kid, j, nullptr);
  }

  bool repeat_one(const Node* n, size_t i, const Cont* k) {
    const size_t limit = n->max == kUnbounded ? t_.size() : std::min(t_.size(), i + n->max);
    size_t j = i;
    while (j < limit && one_at(n->kid, j)) ++j;
    if (j - i < n->min) return false;
    switch (n->mode) {
      case Mode::possessive:
        return cont(j, k);
      case Mode::greedy:
        for (size_t e = j;; --e) {
          if (cont(e, k)) return true;
          if (e == i + n->min) return false;
        }
      case Mode::lazy:
        for (size_t e = i + n->min; e <= j; ++e)
          if (cont(e, k)) return true;
        return false;
    }
    return false;
  }

  bool anchor_ok(char a, size_t i) const {
    switch (a) {
      case '^': return i == 0;
      case '$': return i == t_.size();  // end of text only (ECMAScript, as llama.cpp's std::regex)
      default: {
        const bool before = i > 0 && is_word(t_[i - 1]);
        const bool after = i < t_.size() && is_word(t_[i]);
        return (before != after) == (a == 'b');
      }
    }
  }

  std::span<const uint32_t> t_;
};

// ---- parsing ---------------------------------------------------------------------------

class Parser {
 public:
  Parser(std::string_view pattern, std::vector<std::unique_ptr<Node>>& nodes) : pattern_(pattern), nodes_(nodes) {
    for (size_t pos = 0; pos < pattern.size();) {
      const CodeUnit u = decode_utf8_at(pattern, pos);
      if (u.cp == kInvalidCodePoint) bad("is not valid UTF-8");
      p_.push_back(u.cp);
      pos += u.length;
    }
  }

  const Node* parse() {
    const Node* n = alternation();
    if (i_ < p_.size()) bad("has an unmatched ')'");
    return n;
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    fail("regex '", pattern_, "' ", why, " (at character ", i_, ")");
  }
  bool at(uint32_t c) const { return i_ < p_.size() && p_[i_] == c; }
  bool eat(uint32_t c) {
    if (!at(c)) return false;
    ++i_;
    return true;
  }
  uint32_t next() {
    if (i_ >= p_.size()) bad("ends early");
    return p_[i_++];
  }
  Node* make(Kind k) {
    nodes_.push_back(std::make_unique<Node>());
    nodes_.back()->kind = k;
    return nodes_.back().get();
  }
  Node* single(uint32_t cp) {
    Node* n = make(Kind::cls);
    n->items.push_back({ClassItem::range, false, cp, cp, 0});
    n->icase = icase_;
    return n;
  }

  const Node* alternation() {
    std::vector<const Node*> alts{sequence()};
    while (eat('|')) alts.push_back(sequence());
    if (alts.size() == 1) return alts[0];
    Node* n = make(Kind::alt);
    n->kids = std::move(alts);
    return n;
  }

  const Node* sequence() {
    Node* n = make(Kind::seq);
    while (i_ < p_.size() && !at('|') && !at(')')) n->kids.push_back(quantified(atom()));
    if (n->kids.size() == 1) return n->kids[0];
    return n;
  }

  const Node* atom() {
    const uint32_t c = next();
    switch (c) {
      case '(': return group();
      case '[': return char_class();
      case '.': {
        Node* n = single('\n');
        n->negated = true;
        return n;
      }
      case '^': case '$': {
        Node* n = make(Kind::anchor);
        n->anchor = static_cast<char>(c);
        return n;
      }
      case '\\': {
        if (eat('b') || eat('B')) {
          Node* n = make(Kind::anchor);
          n->anchor = static_cast<char>(p_[i_ - 1]);
          return n;
        }
        Node* n = make(Kind::cls);
        n->icase = icase_;
        n->items.push_back(escape());
        return n;
      }
      case '*': case '+': case '?': case '{': bad("has a quantifier with nothing to repeat");
      default: return single(c);
    }
  }

  const Node* group() {
    if (!eat('?')) return closed(alternation());  // a capturing group: captures are not needed
    if (eat(':')) return closed(alternation());
    if (eat('=') || eat('!')) {
      Node* n = make(Kind::look);
      n->negate = p_[i_ - 1] == '!';
      n->kid = closed(alternation());
      return n;
    }
    if (eat('i')) {
      if (!eat(':')) bad("uses an unsupported inline flag");
      const bool saved = icase_;
      icase_ = true;
      const Node* n = closed(alternation());
      icase_ = saved;
      return n;
    }
    bad("uses an unsupported group kind (lookbehind, named or flags)");
  }

  const Node* closed(const Node* n) {
    if (!eat(')')) bad("has an unclosed '('");
    return n;
  }

  // One escape after '\': a class item (a single code point is a one-point range).
  ClassItem escape() {
    const uint32_t c = next();
    auto range = [](uint32_t v) { return ClassItem{ClassItem::range, false, v, v, 0}; };
    switch (c) {
      case 'n': return range('\n');
      case 'r': return range('\r');
      case 't': return range('\t');
      case 'f': return range('\f');
      case 'v': return range('\v');
      case 's': case 'S': return {ClassItem::space, c == 'S', 0, 0, 0};
      case 'w': case 'W': return {ClassItem::word, c == 'W', 0, 0, 0};
      case 'd': case 'D': return {ClassItem::cats, c == 'D', 0, 0, bit(Category::Nd)};
      case 'p': case 'P': return {ClassItem::cats, c == 'P', 0, 0, property()};
      default:
        if (c < 0x80 && ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) bad("uses an unsupported escape");
        if (c >= '0' && c <= '9') bad("uses a back-reference or octal escape (unsupported)");
        return range(c);  // \\ \. \- \[ \( \$ \' ...
    }
  }

  uint32_t property() {
    if (!eat('{')) bad("needs \\p{NAME}");
    std::string name;
    while (!at('}')) {
      const uint32_t c = next();
      if (c >= 0x80) bad("has a non-ASCII property name");
      name += static_cast<char>(c);
    }
    ++i_;
    static const char* const kNames[] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd",
                                         "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm",
                                         "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};
    if (name.size() == 1 && std::string_view("LMNPSZC").find(name[0]) != std::string_view::npos)
      return major_mask(name[0]);
    for (uint32_t k = 0; k < std::size(kNames); ++k)
      if (name == kNames[k]) return 1u << k;
    bad("uses an unsupported property \\p{" + name + "}");
  }

  const Node* char_class() {
    Node* n = make(Kind::cls);
    n->icase = icase_;
    n->negated = eat('^');
    bool first = true;
    while (first || !at(']')) {
      if (i_ >= p_.size()) bad("has an unclosed '['");
      first = false;
      ClassItem it;
      const uint32_t c = next();
      if (c == '[') bad("has a nested class (unsupported)");
      it = c == '\\' ? escape() : ClassItem{ClassItem::range, false, c, c, 0};
      // A range a-b (a '-' before ']' is a literal).
      if (it.type == ClassItem::range && it.lo == it.hi && at('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        const uint32_t d = next();
        const ClassItem hi = d == '\\' ? escape() : ClassItem{ClassItem::range, false, d, d, 0};
        if (hi.type != ClassItem::range || hi.lo < it.lo) bad("has an invalid range");
        it.hi = hi.lo;
      }
      n->items.push_back(it);
    }
    ++i_;  // ']'
    return n;
  }

  size_t number() {
    size_t v = 0;
    bool any = false;
    while (i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '9') {
      v = v * 10 + (p_[i_++] - '0');
      any = true;
      if (v > 100000) bad("has a repeat count that is too large");
    }
    if (!any) bad("has a malformed {n,m}");
    return v;
  }

  const Node* quantified(const Node* item) {
    size_t lo, hi;
    if (eat('?')) lo = 0, hi = 1;
    else if (eat('*')) lo = 0, hi = kUnbounded;
    else if (eat('+')) lo = 1, hi = kUnbounded;
    else if (eat('{')) {
      lo = hi = number();
      if (eat(',')) hi = at('}') ? kUnbounded : number();
      if (!eat('}') || hi < lo) bad("has a malformed {n,m}");
    } else {
      return item;
    }
    if (item->kind == Kind::anchor || item->kind == Kind::look) bad("repeats an assertion");
    Node* n = make(Kind::repeat);
    n->kid = item;
    n->min = lo;
    n->max = hi;
    if (eat('?')) n->mode = Mode::lazy;
    else if (eat('+')) n->mode = Mode::possessive;
    n->one_char = one_char(item);
    if (at('?') || at('*') || at('+') || at('{')) bad("has a doubled quantifier");
    return n;
  }

  // True when every match of n consumes exactly one code point.
  static bool one_char(const Node* n) {
    switch (n->kind) {
      case Kind::cls: return true;
      case Kind::alt:
        return std::all_of(n->kids.begin(), n->kids.end(), one_char);
      case Kind::seq: {
        int consuming = 0;
        for (const Node* k : n->kids) {
          if (k->kind == Kind::look || k->kind == Kind::anchor) continue;
          if (!one_char(k)) return false;
          ++consuming;
        }
        return consuming == 1;
      }
      default: return false;
    }
  }

  std::string_view pattern_;
  std::vector<std::unique_ptr<Node>>& nodes_;
  std::vector<uint32_t> p_;
  size_t i_ = 0;
  bool icase_ = false;
};

}  // namespace regex_detail

Regex::Regex(std::string_view pattern) : pattern_(pattern) {
  regex_detail::Parser parser(pattern, nodes_);
  root_ = parser.parse();
}
Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

size_t Regex::match_at(std::span<const uint32_t> text, size_t pos) const {
  regex_detail::Matcher m(text);
  return m.run(root_, pos, nullptr) ? m.end : npos;
}

void Regex::split(std::span<const uint32_t> text, std::vector<size_t>& ends) const {
  size_t gap = 0;  // start of the unmatched text before pos
  for (size_t pos = 0; pos < text.size();) {
    const size_t e = match_at(text, pos);
    if (e == npos || e == pos) {  // empty matches make no piece
      ++pos;
      continue;
    }
    if (gap < pos) ends.push_back(pos);
    ends.push_back(e);
    pos = gap = e;
  }
  if (gap < text.size()) ends.push_back(text.size());
}

}  // namespace squeeze::text
