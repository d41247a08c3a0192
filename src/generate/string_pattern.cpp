// generate/string_pattern.cpp — regex parsing, the Glushkov construction and stepping.
#include "generate/string_pattern.h"

#include <algorithm>

#include "generate/json_grammar.h"

namespace squeeze::generate {

namespace {

using CharClass = StringPattern::CharClass;
using Range = std::pair<uint32_t, uint32_t>;

constexpr uint32_t kPrintableLo = 0x20, kPrintableHi = 0x7E;

CharClass normalized(std::vector<Range> r) {
  for (const Range& x : r)
    if (x.first <= 0xDFFF && x.second >= 0xD800) throw SchemaError("pattern: surrogate code points (U+D800-U+DFFF) cannot be written");
  std::sort(r.begin(), r.end());
  CharClass c;
  for (const Range& x : r) {
    if (!c.ranges.empty() && x.first <= c.ranges.back().second + 1) c.ranges.back().second = std::max(c.ranges.back().second, x.second);
    else c.ranges.push_back(x);
  }
  return c;
}

// Printable ASCII outside `c` (what a negated class may generate everywhere).
CharClass negated(const CharClass& c) {
  std::vector<Range> out;
  uint32_t next = kPrintableLo;
  for (const Range& r : c.ranges) {
    if (r.second < next) continue;
    if (r.first > kPrintableHi) break;
    if (r.first > next) out.push_back({next, r.first - 1});
    next = std::max(next, r.second + 1);
  }
  if (next <= kPrintableHi) out.push_back({next, kPrintableHi});
  return normalized(out);
}

const std::vector<Range> kDigit = {{'0', '9'}};
const std::vector<Range> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<Range> kSpace = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x2028, 0x2029}, {0xFEFF, 0xFEFF}};

// The regex as a tree; {m,n} repeats are unrolled into copies.
struct Re {
  enum Kind { empty, chars, concat, alt, star, opt } kind = empty;
  CharClass cls;
  std::vector<Re> kids;
  int positions() const {
    if (kind == chars) return 1;
    int n = 0;
    for (const Re& k : kids) n += k.positions();
    return n;
  }
};

[[noreturn]] void refuse(const std::string& what) { throw SchemaError("pattern: " + what); }

}  // namespace

class PatternCompiler {
 public:
  explicit PatternCompiler(std::string_view s) : s_(s) {}

  StringPattern run() {
    if (at('^')) ++i_;
    Re re = alternation();
    if (at('$')) ++i_;
    if (i_ != s_.size()) refuse(std::string("unexpected '") + s_[i_] + "' at " + std::to_string(i_) +
                                " ($ only at the end, ^ only at the start)");
    if (re.positions() > StringPattern::kMaxPositions)
      refuse("too long for the grammar (more than " + std::to_string(StringPattern::kMaxPositions) + " character positions)");
    StringPattern p;
    const Sets s = glushkov(re, p);
    p.first_ = s.first, p.last_ = s.last, p.nullable_ = s.nullable;
    // Characters from each position to a match: shortest paths over the follow sets.
    const size_t n = p.classes_.size();
    p.to_match_.assign(n, StringPattern::kNever);
    const auto writable = [&](size_t q) { return !p.classes_[q].ranges.empty(); };  // an empty class is a dead end
    for (size_t q = 0; q < n; ++q)
      if ((p.last_ >> q & 1) && writable(q)) p.to_match_[q] = 0;
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t q = 0; q < n; ++q)
        for (size_t r = 0; r < n; ++r)
          if (writable(q) && (p.follow_[q] >> r & 1) && p.to_match_[r] + 1 < p.to_match_[q])
            p.to_match_[q] = p.to_match_[r] + 1, changed = true;
    }
    return p;
  }

 private:
  struct Sets {
    bool nullable;
    uint64_t first, last;
  };

  bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }

  // Every tree node made, copies of repeats included: a hostile pattern is refused before
  // it costs memory or stack.
  static constexpr int64_t kMaxNodes = 4096;
  static constexpr int kMaxGroupDepth = 32;
  int64_t made_ = 0;
  int groups_ = 0;
  void count_nodes(int64_t n) {
    made_ += n;
    if (made_ > kMaxNodes) refuse("too complex for the grammar (more than " + std::to_string(kMaxNodes) + " nodes)");
  }
  static int64_t size_of(const Re& r) {
    int64_t n = 1;
    for (const Re& k : r.kids) n += size_of(k);
    return n;
  }

  Re chars(CharClass c) {
    count_nodes(1);
    Re r;
    r.kind = Re::chars;
    r.cls = std::move(c);
    return r;
  }
  Re node(Re::Kind k, std::vector<Re> kids) {
    count_nodes(1);
    Re r;
    r.kind = k;
    r.kids = std::move(kids);
    return r;
  }

  Re alternation() {
    std::vector<Re> alts = {sequence()};
    while (at('|')) {
      ++i_;
      alts.push_back(sequence());
    }
    return alts.size() == 1 ? std::move(alts[0]) : node(Re::alt, std::move(alts));
  }

  Re sequence() {
    std::vector<Re> parts;
    while (i_ < s_.size() && !at('|') && !at(')') && !(at('$') && i_ + 1 == s_.size())) parts.push_back(repeat());
    if (parts.empty()) return Re{};
    return parts.size() == 1 ? std::move(parts[0]) : node(Re::concat, std::move(parts));
  }

  size_t number() {
    size_t n = 0, digits = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      n = n * 10 + static_cast<size_t>(s_[i_++] - '0');
      if (++digits > 4) refuse("a repeat count above 9999");
    }
    if (digits == 0) refuse("a repeat {m,n} needs numbers");
    return n;
  }

  Re repeat() {
    Re e = atom();
    bool quantified = false;
    for (;;) {
      const bool quantifier = at('*') || at('+') || at('?') || at('{');
      if (!quantifier) break;
      if (quantified) refuse("a quantifier on a quantifier (e.g. a**) is not supported");
      quantified = true;
      if (e.positions() == 0) e = Re{};  // a repeat of nothing is nothing
      if (at('*') || at('+') || at('?')) {
        const char q = s_[i_++];
        if (q == '*') e = node(Re::star, {std::move(e)});
        else if (q == '+') {
          count_nodes(size_of(e));
          e = node(Re::concat, {e, node(Re::star, {e})});
        } else {
          e = node(Re::opt, {std::move(e)});
        }
      } else if (at('{')) {
        ++i_;
        const size_t m = number();
        size_t n = m;
        bool unbounded = false;
        if (at(',')) {
          ++i_;
          if (at('}')) unbounded = true;
          else n = number();
        }
        if (!at('}')) refuse("an unclosed repeat {m,n}");
        ++i_;
        if (!unbounded && n < m) refuse("a repeat {m,n} with n < m");
        const int each = e.positions();
        if (each * static_cast<int64_t>(unbounded ? m + 1 : n) > StringPattern::kMaxPositions)
          refuse("too long for the grammar (more than " + std::to_string(StringPattern::kMaxPositions) + " character positions)");
        if (each == 0) continue;  // a repeat of nothing is nothing
        count_nodes(size_of(e) * static_cast<int64_t>(unbounded ? m + 1 : n));
        std::vector<Re> parts(m, e);
        if (unbounded) parts.push_back(node(Re::star, {e}));
        for (size_t k = m; !unbounded && k < n; ++k) parts.push_back(node(Re::opt, {e}));
        e = parts.empty() ? Re{} : node(Re::concat, std::move(parts));
      }
      if (at('?')) ++i_;  // a lazy quantifier matches the same strings
    }
    return e;
  }

  uint32_t code_point() {  // one UTF-8 sequence of the pattern
    const auto c = static_cast<uint8_t>(s_[i_++]);
    if (c < 0x80) return c;
    const int more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
    if (more < 0) refuse("invalid UTF-8");
    uint32_t cp = c & (0x3F >> more);
    for (int k = 0; k < more; ++k) {
      if (i_ >= s_.size() || (static_cast<uint8_t>(s_[i_]) & 0xC0) != 0x80) refuse("invalid UTF-8");
      cp = (cp << 6) | (static_cast<uint8_t>(s_[i_++]) & 0x3F);
    }
    return cp;
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k, ++i_) {
      if (i_ >= s_.size()) refuse("a short hex escape");
      const char c = s_[i_];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) refuse("a bad hex escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  // After a backslash: a class (\d \w \s and negations) or one code point.
  CharClass escape(bool in_class) {
    if (i_ >= s_.size()) refuse("a pattern ending in a backslash");
    const char c = s_[i_++];
    switch (c) {
      case 'd': return normalized(kDigit);
      case 'w': return normalized(kWord);
      case 's': return normalized(kSpace);
      case 'D': return negated(normalized(kDigit));
      case 'W': return negated(normalized(kWord));
      case 'S': return negated(normalized(kSpace));
      case 'n': return normalized({{'\n', '\n'}});
      case 't': return normalized({{'\t', '\t'}});
      case 'r': return normalized({{'\r', '\r'}});
      case 'f': return normalized({{'\f', '\f'}});
      case 'v': return normalized({{'\v', '\v'}});
      case 'x': {
        const uint32_t v = hex(2);
        return normalized({{v, v}});
      }
      case 'u': {
        const uint32_t v = hex(4);
        return normalized({{v, v}});
      }
      default: break;
    }
    if (c == 'b' && in_class) return normalized({{'\b', '\b'}});
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      refuse(std::string("the escape \\") + c + " is not supported (no backreferences or word boundaries)");
    --i_;
    const uint32_t cp = code_point();  // an escaped punctuation character stands for itself
    return normalized({{cp, cp}});
  }

  CharClass bracket() {
    bool negate = false;
    if (at('^')) negate = true, ++i_;
    std::vector<Range> ranges;
    while (i_ < s_.size() && !at(']')) {
      if (at('[')) refuse("a class inside a class");
      CharClass item;
      uint32_t lo = 0;
      bool single = true;
      if (at('\\')) {
        ++i_;
        item = escape(true);
        single = item.ranges.size() == 1 && item.ranges[0].first == item.ranges[0].second;
        lo = single ? item.ranges[0].first : 0;
      } else {
        lo = code_point();
        item = normalized({{lo, lo}});
      }
      if (single && at('-') && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
        ++i_;
        uint32_t hi = 0;
        if (at('\\')) {
          ++i_;
          const CharClass h = escape(true);
          if (h.ranges.size() != 1 || h.ranges[0].first != h.ranges[0].second) refuse("a range ending in a class");
          hi = h.ranges[0].first;
        } else {
          hi = code_point();
        }
        if (hi < lo) refuse("a range out of order");
        ranges.push_back({lo, hi});
      } else {
        ranges.insert(ranges.end(), item.ranges.begin(), item.ranges.end());
      }
    }
    if (!at(']')) refuse("an unclosed [");
    ++i_;
    const CharClass c = normalized(ranges);
    return negate ? negated(c) : c;
  }

  Re atom() {
    const char c = s_[i_];
    if (c == '(') {
      if (++groups_ > kMaxGroupDepth) refuse("groups nested deeper than " + std::to_string(kMaxGroupDepth));
      ++i_;
      if (at('?')) {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == ':') i_ += 2;
        else refuse("lookarounds and named groups are not supported");
      }
      Re inner = alternation();
      if (!at(')')) refuse("an unclosed (");
      ++i_;
      --groups_;
      return inner;
    }
    if (c == '[') {
      ++i_;
      return chars(bracket());
    }
    if (c == '.') {
      ++i_;
      return chars(normalized({{0, '\n' - 1}, {'\n' + 1, '\r' - 1}, {'\r' + 1, 0x2027}, {0x202A, 0xD7FF}, {0xE000, 0x10FFFF}}));
    }
    if (c == '\\') {
      ++i_;
      return chars(escape(false));
    }
    if (c == '*' || c == '+' || c == '?' || c == '{' || c == ')' || c == '^' || c == '$')
      refuse(std::string("'") + c + "' at " + std::to_string(i_) + " has nothing to apply to");
    const uint32_t cp = code_point();
    return chars(normalized({{cp, cp}}));
  }

  Sets glushkov(const Re& re, StringPattern& p) {
    switch (re.kind) {
      case Re::empty: return {true, 0, 0};
      case Re::chars: {
        const auto pos = static_cast<int>(p.classes_.size());
        p.classes_.push_back(re.cls);
        p.follow_.push_back(0);
        return {false, uint64_t{1} << pos, uint64_t{1} << pos};
      }
      case Re::concat: {
        Sets a = glushkov(re.kids[0], p);
        for (size_t k = 1; k < re.kids.size(); ++k) {
          const Sets b = glushkov(re.kids[k], p);
          for (size_t q = 0; q < p.follow_.size(); ++q)
            if (a.last >> q & 1) p.follow_[q] |= b.first;
          a = {a.nullable && b.nullable, a.first | (a.nullable ? b.first : 0), b.last | (b.nullable ? a.last : 0)};
        }
        return a;
      }
      case Re::alt: {
        Sets s{false, 0, 0};
        for (const Re& k : re.kids) {
          const Sets x = glushkov(k, p);
          s = {s.nullable || x.nullable, s.first | x.first, s.last | x.last};
        }
        return s;
      }
      case Re::star: {
        const Sets x = glushkov(re.kids[0], p);
        for (size_t q = 0; q < p.follow_.size(); ++q)
          if (x.last >> q & 1) p.follow_[q] |= x.first;
        return {true, x.first, x.last};
      }
      case Re::opt: {
        const Sets x = glushkov(re.kids[0], p);
        return {true, x.first, x.last};
      }
    }
    return {true, 0, 0};
  }

  std::string_view s_;
  size_t i_ = 0;
};

bool StringPattern::CharClass::contains(uint32_t cp) const { return intersects(cp, cp); }

bool StringPattern::CharClass::intersects(uint32_t lo, uint32_t hi) const {
  for (const Range& r : ranges)
    if (r.first <= hi && lo <= r.second) return true;
  return false;
}

StringPattern StringPattern::compile(std::string_view regex) { return PatternCompiler(regex).run(); }

std::string StringPattern::format_pattern(std::string_view format) {
  static const std::string date = R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|1\d|2[0-8]))";
  static const std::string time = R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))";
  static const std::string octet = R"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))";
  if (format == "date") return "^" + date + "$";
  if (format == "time") return "^" + time + "$";
  if (format == "date-time") return "^" + date + "T" + time + "$";
  if (format == "uuid") return R"(^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$)";
  if (format == "ipv4") return "^" + octet + R"(\.)" + octet + R"(\.)" + octet + R"(\.)" + octet + "$";
  return {};
}

uint64_t StringPattern::candidates(uint64_t state) const {
  uint64_t c = (state & kStart) ? first_ : 0;
  for (size_t q = 0; q < follow_.size(); ++q)
    if (state >> q & 1) c |= follow_[q];
  return c;
}

uint64_t StringPattern::step(uint64_t state, uint32_t cp) const {
  const uint64_t c = candidates(state);
  uint64_t next = 0;
  for (size_t q = 0; q < classes_.size(); ++q)
    if ((c >> q & 1) && classes_[q].contains(cp)) next |= uint64_t{1} << q;
  return next;
}

int64_t StringPattern::remaining(uint64_t state) const {
  if ((state & kStart) && nullable_) return 0;
  int64_t best = kNever;
  if (state & kStart)
    for (size_t q = 0; q < classes_.size(); ++q)
      if (first_ >> q & 1) best = std::min(best, 1 + to_match_[q]);
  for (size_t q = 0; q < classes_.size(); ++q)
    if (state >> q & 1) best = std::min(best, to_match_[q]);
  return best;
}

int64_t StringPattern::remaining_after(uint64_t state, uint32_t lo, uint32_t hi) const {
  const uint64_t c = candidates(state);
  int64_t best = kNever;
  for (size_t q = 0; q < classes_.size(); ++q)
    if ((c >> q & 1) && classes_[q].intersects(lo, hi)) best = std::min(best, 1 + to_match_[q]);
  return best;
}

}  // namespace squeeze::generate
