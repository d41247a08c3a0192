// generate/grammar_matcher.cpp — one byte at a time through every live parse.
#include "generate/grammar_matcher.h"

#include <algorithm>

namespace squeeze::generate {

namespace {

using Kind = JsonGrammar::Kind;
using Node = JsonGrammar::Node;
using Frame = GrammarMatcher::Frame;
using Parse = GrammarMatcher::Parse;
using Parses = GrammarMatcher::Parses;

enum FrameType : uint8_t { kValue, kLiteral, kKey, kRoot };

constexpr int kMaxNumberDigits = 16;   // integer and fraction parts of an unbounded number
constexpr int kMaxBoundedDigits = 18;  // a bounded integer (bounds below 1e17)
constexpr int kMaxExponentDigits = 2;  // 1e99 at most: every number stays a finite double

bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// The magnitudes an integer node allows for a sign; empty when lo > hi.
struct Magnitudes {
  __int128 lo = 0, hi = 0;
};
constexpr __int128 kUnbounded = static_cast<__int128>(1) << 100;

Magnitudes magnitudes(const Node& n, bool negative) {
  Magnitudes m;
  if (!negative) {
    m.lo = n.has_lo ? std::max<int64_t>(n.lo, 0) : 0;
    m.hi = n.has_hi ? static_cast<__int128>(n.hi) : kUnbounded;
  } else {
    m.lo = n.has_hi ? std::max<int64_t>(-n.hi, 1) : 1;  // no "-0": 0 is written unsigned
    m.hi = n.has_lo ? static_cast<__int128>(-n.lo) : kUnbounded;
  }
  return m;
}

bool bounded(const Node& n) { return n.kind == Kind::integer && (n.has_lo || n.has_hi); }

bool in_range(const Node& n, const Frame& f) {
  if (!bounded(n)) return true;
  const Magnitudes m = magnitudes(n, f.extra != 0);
  return f.value >= m.lo && f.value <= m.hi;
}

// Whether digits may still follow `value` (written with `digits` digits; 0: only the sign
// so far) to an integer in range.
bool viable(const Node& n, bool negative, int64_t value, int digits) {
  if (!bounded(n)) return digits <= kMaxNumberDigits;
  const Magnitudes m = magnitudes(n, negative);
  if (m.lo > m.hi) return false;
  __int128 limit = 1;
  for (int i = 0; i < kMaxBoundedDigits; ++i) limit *= 10;
  if (digits == 0) return m.lo < limit;
  if (value >= m.lo && value <= m.hi) return true;
  if (value == 0) return false;  // a leading 0 takes no more digits
  __int128 scale = 1;
  for (int len = digits + 1; len <= kMaxBoundedDigits; ++len) {
    scale *= 10;
    const __int128 lo = static_cast<__int128>(value) * scale, hi = lo + scale - 1;
    if (lo > m.hi) break;
    if (hi >= m.lo) return true;
  }
  return false;
}

class Stepper {
 public:
  Stepper(const JsonGrammar& g, Parses& out) : g_(g), out_(out) {}

  void feed(Parse p, uint8_t c, int eps = 0) {
    Frame& f = p.top();
    switch (f.type) {
      case kRoot: return root(p, c, eps);
      case kLiteral:
      case kKey: return literal(p, c);
      default: break;
    }
    switch (g_.node(f.node).kind) {
      case Kind::object: return object(p, c, eps);
      case Kind::map: return map(p, c, eps);
      case Kind::array: return array(p, c, eps);
      case Kind::string: return string(p, c);
      case Kind::number:
      case Kind::integer: return number(p, c, eps);
      case Kind::sequence: {
        const Node& n = g_.node(f.node);
        if (static_cast<size_t>(f.phase) < n.alts.size()) push_value(p, n.alts[f.phase], c, eps);
        return;
      }
      case Kind::alternatives:
      case Kind::literals: return;  // never on the stack: expanded when pushed
    }
  }

  // The top frame is complete: pop it and tell its parent (a sequence whose last part
  // this was is complete too).
  static void child_done(const JsonGrammar& g, Parse& p) {
    for (;;) {
      --p.depth;
      Frame& f = p.top();
      f.ws = 0;
      if (f.type == kRoot) {
        f.phase = 1;
        return;
      }
      const Node& n = g.node(f.node);
      switch (n.kind) {
        case Kind::object:
          if (f.phase == 2) f.phase = 3;
          else f.phase = 5, f.count = f.aux + 1;
          return;
        case Kind::map:
          if (f.phase == 2) f.phase = 3;
          else f.phase = 5, ++f.count;
          return;
        case Kind::array:
          f.phase = 3, ++f.count;
          return;
        case Kind::sequence:
          if (static_cast<size_t>(++f.phase) < n.alts.size()) return;
          continue;
        default: return;
      }
    }
  }

  // Whether a number at the top may end here (its value complete and in range).
  static bool number_may_end(const JsonGrammar& g, const Frame& f) {
    if (f.type != kValue) return false;
    const Node& n = g.node(f.node);
    if (n.kind != Kind::number && n.kind != Kind::integer) return false;
    const bool end_phase = f.phase == 2 || f.phase == 3 || f.phase == 5 || f.phase == 8;
    return end_phase && in_range(n, f);
  }

 private:
  void emit(const Parse& p) { out_.push_back(p); }
  void done(Parse p) {
    child_done(g_, p);
    emit(p);
  }
  // Whitespace where pretty-printing puts it, as llama.cpp's schema grammars allow it: one
  // space, or one newline and up to kMaxWhitespace spaces or tabs of indentation. (ws: 0
  // none yet, 1 after the space, 2 + n after the newline and n indentation bytes.)
  static bool take_ws(Frame& f, uint8_t c) {
    if (f.ws == 0 && (c == ' ' || c == '\n')) return f.ws = c == ' ' ? 1 : 2, true;
    if (f.ws >= 2 && (c == ' ' || c == '\t') && f.ws - 2 < JsonGrammar::kMaxWhitespace) return ++f.ws, true;
    return false;
  }

  // Pushes the frames `node` may start with and feeds them `c`: never one whose value
  // could not be completed within kMaxDepth frames.
  void push_value(const Parse& p, int32_t node, uint8_t c, int eps) {
    for (int32_t s : g_.starts(node)) {
      if (p.depth + g_.need(s) > JsonGrammar::kMaxDepth) continue;
      const Node& n = g_.node(s);
      Parse q = p;
      if (n.kind == Kind::literals) {  // every literal at once: the range of them matching so far
        q.frames[q.depth++] = Frame{.node = s, .type = kLiteral, .aux = 0, .value = static_cast<int64_t>(n.literals.size())};
        literal(q, c);
        continue;
      }
      q.frames[q.depth++] = Frame{.node = s, .type = kValue};
      feed(q, c, eps + 1);
    }
  }

  void root(Parse& p, uint8_t c, int eps) {
    Frame& f = p.top();
    if (f.phase != 0) return;
    if (g_.root_whitespace() && take_ws(f, c)) return emit(p);
    push_value(p, g_.root(), c, eps);
  }

  // A key (kKey: one text), or the literals of a node (kLiteral: sorted, the range [aux,
  // value) of them that match the `count` bytes so far; a literal that ends here is the
  // range's first, as a text sorts before its extensions).
  void literal(Parse& p, uint8_t c) {
    Frame& f = p.top();
    const Node& n = g_.node(f.node);
    const auto at = static_cast<size_t>(f.count);
    if (f.type == kKey) {
      const std::string& text = n.props[static_cast<size_t>(f.aux)].key;
      if (at >= text.size() || static_cast<uint8_t>(text[at]) != c) return;
      if (++f.count == static_cast<int32_t>(text.size())) return done(p);
      return emit(p);
    }
    const auto& lits = n.literals;
    const auto byte_at = [&](const std::string& t) { return t.size() > at ? static_cast<int>(static_cast<uint8_t>(t[at])) : -1; };
    const auto first = lits.begin() + f.aux, last = lits.begin() + static_cast<ptrdiff_t>(f.value);
    const auto lo = std::partition_point(first, last, [&](const std::string& t) { return byte_at(t) < c; });
    const auto hi = std::partition_point(lo, last, [&](const std::string& t) { return byte_at(t) <= c; });
    if (lo == hi) return;
    f.count += 1;
    f.aux = static_cast<int32_t>(lo - lits.begin());
    f.value = hi - lits.begin();
    if (lo->size() == at + 1) {  // a literal ends here: complete, and the longer ones go on
      if (hi - lo > 1) {
        Parse longer = p;
        ++longer.top().aux;
        emit(longer);
      }
      return done(p);
    }
    emit(p);
  }

  static bool required_from(const Node& n, int32_t from) {
    for (size_t j = static_cast<size_t>(from); j < n.props.size(); ++j)
      if (n.props[j].required) return true;
    return false;
  }

  void object(Parse& p, uint8_t c, int eps) {
    Frame& f = p.top();
    const Node& n = g_.node(f.node);
    switch (f.phase) {
      case 0:
        if (c == '{') f.phase = 1, emit(p);
        return;
      case 1:
      case 6:
        if (take_ws(f, c)) return emit(p);
        if (c == '}' && f.phase == 1 && !required_from(n, f.count)) return done(p);
        if (c != '"') return;
        for (size_t j = static_cast<size_t>(f.count); j < n.props.size(); ++j) {  // the next key: any up to the next required one
          Parse q = p;
          Frame& o = q.top();
          o.aux = static_cast<int32_t>(j), o.phase = 2, o.ws = 0;
          if (q.depth >= JsonGrammar::kMaxDepth || q.depth + g_.need(n.props[j].value) > JsonGrammar::kMaxDepth) {
            if (n.props[j].required) break;
            continue;  // its value could not be closed this deep
          }
          q.frames[q.depth++] = Frame{.node = o.node, .type = kKey, .aux = static_cast<int32_t>(j), .count = 1};
          emit(q);
          if (n.props[j].required) break;
        }
        return;
      case 3:
        if (take_ws(f, c)) return emit(p);
        if (c == ':') f.phase = 4, f.ws = 0, emit(p);
        return;
      case 4:
        if (take_ws(f, c)) return emit(p);
        return push_value(p, n.props[static_cast<size_t>(f.aux)].value, c, eps);
      case 5:
        if (take_ws(f, c)) return emit(p);
        if (c == ',' && static_cast<size_t>(f.count) < n.props.size()) return f.phase = 6, f.ws = 0, emit(p);
        if (c == '}' && !required_from(n, f.count)) return done(p);
        return;
      default: return;
    }
  }

  void map(Parse& p, uint8_t c, int eps) {
    Frame& f = p.top();
    const Node& n = g_.node(f.node);
    switch (f.phase) {
      case 0:
        if (c == '{') f.phase = 1, emit(p);
        return;
      case 1:
      case 6:
        if (take_ws(f, c)) return emit(p);
        if (c == '}' && f.phase == 1) return done(p);
        if (c != '"') return;
        f.phase = 2, f.ws = 0;
        return push_value(p, g_.key_string(), c, eps);
      case 3:
        if (take_ws(f, c)) return emit(p);
        if (c == ':') f.phase = 4, f.ws = 0, emit(p);
        return;
      case 4:
        if (take_ws(f, c)) return emit(p);
        return push_value(p, n.item, c, eps);
      case 5:
        if (take_ws(f, c)) return emit(p);
        if (c == ',') return f.phase = 6, f.ws = 0, emit(p);
        if (c == '}') return done(p);
        return;
      default: return;
    }
  }

  void array(Parse& p, uint8_t c, int eps) {
    Frame& f = p.top();
    const Node& n = g_.node(f.node);
    switch (f.phase) {
      case 0:
        if (c == '[') f.phase = 1, emit(p);
        return;
      case 1:
      case 4:
        if (take_ws(f, c)) return emit(p);
        if (c == ']' && f.phase == 1 && n.min == 0) return done(p);
        if (n.max == 0) return;
        f.phase = 2, f.ws = 0;
        return push_value(p, n.item, c, eps);
      case 3:
        if (take_ws(f, c)) return emit(p);
        if (c == ',' && (n.max < 0 || f.count < n.max)) return f.phase = 4, f.ws = 0, emit(p);
        if (c == ']' && f.count >= n.min) return done(p);
        return;
      default: return;
    }
  }

  // A whole character of a string's text: counted, and through the pattern when it has one
  // — never into a state whose shortest match would pass maxLength.
  bool take_char(Frame& f, const Node& n, uint32_t cp) const {
    if (n.max >= 0 && f.count >= n.max) return false;
    if (n.pattern >= 0) {
      const StringPattern& pat = g_.pattern(n.pattern);
      const uint64_t next = pat.step(static_cast<uint64_t>(f.value), cp);
      if (next == 0 || (n.max >= 0 && f.count + 1 + pat.remaining(next) > n.max)) return false;
      f.value = static_cast<int64_t>(next);
    }
    ++f.count;
    return true;
  }
  // The lowest code point a UTF-8 sequence with these leading bits and `left` bytes to come
  // can be (no overlongs: 3-byte sequences start at U+0800, 4-byte ones at U+10000).
  static uint32_t utf8_low(uint32_t bits, int32_t left) {
    static constexpr uint32_t kLowest[] = {0, 0x80, 0x800, 0x10000};
    return std::max(bits << (6 * left), kLowest[left]);
  }
  // Whether the character being read (its code point somewhere in [lo, hi]) may still fit.
  bool may_take(const Frame& f, const Node& n, uint32_t lo, uint32_t hi) const {
    if (n.max >= 0 && f.count >= n.max) return false;
    if (n.pattern < 0) return true;
    const int64_t need = g_.pattern(n.pattern).remaining_after(static_cast<uint64_t>(f.value), lo, hi);
    return need < StringPattern::kNever && (n.max < 0 || f.count + need <= n.max);
  }

  // String phases: 0 before the quote, 1 in text, 2 after a backslash, 3..6 the \u digits,
  // 7 inside a UTF-8 sequence (aux bytes left; extra: the range the next one must be in).
  // cp holds the code point read so far (UTF-8 and \u), value the pattern's state.
  void string(Parse& p, uint8_t c) {
    Frame& f = p.top();
    const Node& n = g_.node(f.node);
    switch (f.phase) {
      case 0:
        if (c != '"') return;
        f.phase = 1;
        if (n.pattern >= 0) f.value = static_cast<int64_t>(StringPattern::kStart);
        return emit(p);
      case 1: {
        if (c == '"') {
          if (f.count >= n.min && (n.pattern < 0 || g_.pattern(n.pattern).accepts(static_cast<uint64_t>(f.value)))) done(p);
          return;
        }
        if (c == '\\') {
          if (!may_take(f, n, 0, 0xFFFF)) return;
          return f.phase = 2, emit(p);
        }
        if (c < 0x20) return;
        if (c < 0x80) {
          if (take_char(f, n, c)) emit(p);
          return;
        }
        // UTF-8 lead bytes and the range of the first continuation byte (no overlongs, no
        // surrogates, nothing past U+10FFFF): 0: 80-BF, 1: A0-BF, 2: 80-9F, 3: 90-BF, 4: 80-8F.
        if (c >= 0xC2 && c <= 0xDF) f.aux = 1, f.extra = 0, f.cp = c & 0x1Fu;
        else if (c == 0xE0) f.aux = 2, f.extra = 1, f.cp = c & 0x0Fu;
        else if (c == 0xED) f.aux = 2, f.extra = 2, f.cp = c & 0x0Fu;
        else if (c >= 0xE1 && c <= 0xEF) f.aux = 2, f.extra = 0, f.cp = c & 0x0Fu;
        else if (c == 0xF0) f.aux = 3, f.extra = 3, f.cp = c & 0x07u;
        else if (c == 0xF4) f.aux = 3, f.extra = 4, f.cp = c & 0x07u;
        else if (c >= 0xF1 && c <= 0xF3) f.aux = 3, f.extra = 0, f.cp = c & 0x07u;
        else return;
        if (!may_take(f, n, utf8_low(f.cp, f.aux), ((f.cp + 1) << (6 * f.aux)) - 1)) return;
        f.phase = 7;
        return emit(p);
      }
      case 2: {
        static constexpr char kEscapes[] = "\"\\/bfnrt";
        static constexpr uint8_t kValues[] = {'"', '\\', '/', 0x08, 0x0C, '\n', '\r', '\t'};
        for (size_t i = 0; i < 8; ++i)
          if (c == static_cast<uint8_t>(kEscapes[i])) {
            if (take_char(f, n, kValues[i])) f.phase = 1, emit(p);
            return;
          }
        if (c == 'u') f.phase = 3, f.cp = 0, emit(p);
        return;
      }
      case 3:
      case 4:
      case 5:
      case 6: {
        if (!is_hex(c)) return;
        f.cp = f.cp * 16 + static_cast<uint32_t>(is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
        if (f.phase == 4 && f.cp >= 0xD8 && f.cp <= 0xDF) return;  // no surrogate halves (U+D800-U+DFFF)
        if (f.phase < 6) {
          const int left = 6 - f.phase;  // hex digits still to come
          if (!may_take(f, n, f.cp << (4 * left), ((f.cp + 1) << (4 * left)) - 1)) return;
          return ++f.phase, emit(p);
        }
        if (take_char(f, n, f.cp)) f.phase = 1, emit(p);
        return;
      }
      case 7: {
        static constexpr uint8_t lo[] = {0x80, 0xA0, 0x80, 0x90, 0x80}, hi[] = {0xBF, 0xBF, 0x9F, 0xBF, 0x8F};
        if (c < lo[f.extra] || c > hi[f.extra]) return;
        f.extra = 0;
        f.cp = (f.cp << 6) | (c & 0x3Fu);
        if (--f.aux == 0) {
          if (take_char(f, n, f.cp)) f.phase = 1, emit(p);
          return;
        }
        if (!may_take(f, n, utf8_low(f.cp, f.aux), ((f.cp + 1) << (6 * f.aux)) - 1)) return;
        return emit(p);
      }
      default: return;
    }
  }

  // Number phases: 0 start, 1 after '-', 2 after a leading 0, 3 integer digits, 4 after '.',
  // 5 fraction digits, 6 after e, 7 after the exponent's sign, 8 exponent digits.
  void number(Parse& p, uint8_t c, int eps) {
    Frame& f = p.top();
    const Node& n = g_.node(f.node);
    const bool real = n.kind == Kind::number;
    const int max_digits = bounded(n) ? kMaxBoundedDigits : kMaxNumberDigits;
    const bool neg = f.extra != 0;
    auto start_digit = [&](uint8_t d) {
      const int64_t v = d - '0';
      if (!viable(n, neg, v, 1)) return;
      f.value = v, f.count = 1, f.phase = d == '0' ? 2 : 3;
      emit(p);
    };
    switch (f.phase) {
      case 0:
        if (c == '-') {
          if (!viable(n, true, 0, 0)) return;
          return f.phase = 1, f.extra = 1, emit(p);
        }
        if (is_digit(c)) return start_digit(c);
        return;
      case 1:
        if (is_digit(c)) start_digit(c);
        return;
      case 2:
      case 3:
        if (f.phase == 3 && is_digit(c)) {
          const int64_t v = f.value * 10 + (c - '0');
          if (f.count < max_digits && viable(n, neg, v, f.count + 1)) f.value = v, ++f.count, emit(p);
          return;
        }
        if (real && c == '.') return f.phase = 4, emit(p);
        if (real && (c == 'e' || c == 'E')) return f.phase = 6, emit(p);
        break;
      case 4:
        if (is_digit(c)) f.phase = 5, f.count = 1, emit(p);
        return;
      case 5:
        if (is_digit(c)) {
          if (f.count < kMaxNumberDigits) ++f.count, emit(p);
          return;
        }
        if (c == 'e' || c == 'E') return f.phase = 6, emit(p);
        break;
      case 6:
        if (c == '+' || c == '-') return f.phase = 7, emit(p);
        if (is_digit(c)) f.phase = 8, f.count = 1, emit(p);
        return;
      case 7:
        if (is_digit(c)) f.phase = 8, f.count = 1, emit(p);
        return;
      case 8:
        if (is_digit(c)) {
          if (f.count < kMaxExponentDigits) ++f.count, emit(p);
          return;
        }
        break;
      default: return;
    }
    // The number ends before `c`, which goes to the value around it.
    if (!in_range(n, f)) return;
    child_done(g_, p);
    feed(p, c, eps + 1);
  }

  const JsonGrammar& g_;
  Parses& out_;
};

void dedupe(Parses& ps) {
  if (ps.size() < 2) return;
  size_t kept = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < kept && !seen; ++j) seen = ps[j] == ps[i];
    if (!seen && kept < GrammarMatcher::kMaxParses) {
      if (kept != i) ps[kept] = ps[i];
      ++kept;
    }
  }
  ps.resize(kept);
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const JsonGrammar> grammar) : g_(std::move(grammar)) {
  Parse p;
  p.frames[0] = Frame{.type = kRoot};
  p.depth = 1;
  parses_.push_back(p);
}

void GrammarMatcher::step(const Parses& in, uint8_t byte, Parses& out) const {
  out.clear();
  Stepper s(*g_, out);
  for (const Parse& p : in) s.feed(p, byte);
  dedupe(out);
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  Parses cur = parses_;
  for (char ch : bytes) {
    step(cur, static_cast<uint8_t>(ch), scratch_);
    if (scratch_.empty()) return false;
    cur.swap(scratch_);
  }
  parses_.swap(cur);
  return true;
}

bool GrammarMatcher::can_end(const JsonGrammar& g, const Parses& ps) {
  for (Parse p : ps) {
    while (p.depth > 1 && Stepper::number_may_end(g, p.top())) Stepper::child_done(g, p);
    if (p.depth == 1 && p.top().phase == 1) return true;
  }
  return false;
}

bool GrammarMatcher::can_end() const { return can_end(*g_, parses_); }

int64_t GrammarMatcher::string_room() const {
  if (parses_.size() != 1) return -1;
  const Frame& f = parses_[0].top();
  if (f.type != kValue) return -1;
  const Node& n = g_->node(f.node);
  if (n.kind != Kind::string || f.phase != 1 || n.pattern >= 0) return -1;
  return n.max < 0 ? INT64_MAX : n.max - f.count;
}

bool GrammarMatcher::closed() const {
  if (!can_end()) return false;
  Parses next;
  for (int b = 0; b < 256; ++b) {
    step(parses_, static_cast<uint8_t>(b), next);
    if (!next.empty()) return false;
  }
  return true;
}

}  // namespace squeeze::generate
