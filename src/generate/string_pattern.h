// generate/string_pattern.h — a JSON schema's `pattern` (and the `format`s written as one)
// as a position automaton the grammar matcher can carry in one integer.
//
// The regular expression is compiled to its Glushkov automaton: one position per character
// class it contains (after {m,n} repeats are unrolled), no ε-moves, so a state is a set of
// positions — a 64-bit mask, bit 63 standing for "nothing read yet". At most 63 positions;
// a longer pattern is refused.
//
// Generation must give strings the validator accepts, so the generated language is a
// subset of the pattern's under both ECMA-262 and Python's `re` (what jsonschema uses):
//   - the whole string matches (a pattern without anchors matches anywhere: a whole match
//     is one); ^ only at the start and $ only at the end;
//   - \d \w are ASCII ([0-9], [A-Za-z0-9_]), \s the ASCII spaces and U+00A0 U+2028 U+2029
//     U+FEFF; a negated class (\D \W \S [^…]) takes printable ASCII outside it only;
//   - . is any character but \n \r U+2028 U+2029.
// Refused: backreferences, lookarounds, \b \B, named groups, flags, classes inside classes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace squeeze::generate {

class StringPattern {
 public:
  static constexpr int kMaxPositions = 63;
  static constexpr uint64_t kStart = uint64_t{1} << 63;  // the state before any character

  // Throws SchemaError (generate/json_grammar.h) naming what is not supported.
  static StringPattern compile(std::string_view regex);
  // RFC 3339 date, time and date-time, uuid, ipv4 as patterns (dates with days 01–28, so
  // every one generated exists); nullopt-like empty string for a format not written here.
  static std::string format_pattern(std::string_view format);

  static constexpr int64_t kNever = INT64_MAX / 4;

  // The state after one more character (0: the character is refused).
  uint64_t step(uint64_t state, uint32_t cp) const;
  // The fewest characters that take `state` to a match (kNever: none do).
  int64_t remaining(uint64_t state) const;
  // The fewest characters to a match when the next one is in [lo, hi] (it included; a
  // UTF-8 sequence or \u escape being read); kNever when no such character may come next.
  int64_t remaining_after(uint64_t state, uint32_t lo, uint32_t hi) const;
  bool accepts(uint64_t state) const { return ((state & kStart) && nullable_) || (state & last_) != 0; }

  struct CharClass {
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive, sorted
    bool contains(uint32_t cp) const;
    bool intersects(uint32_t lo, uint32_t hi) const;
  };

 private:
  friend class PatternCompiler;
  uint64_t candidates(uint64_t state) const;
  std::vector<CharClass> classes_;  // per position
  std::vector<uint64_t> follow_;    // per position
  std::vector<int64_t> to_match_;   // per position: characters after it to a match (0: a last one)
  uint64_t first_ = 0, last_ = 0;
  bool nullable_ = false;
};

}  // namespace squeeze::generate
