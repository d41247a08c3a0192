// generate/grammar_matcher.h — the bytes a JsonGrammar still accepts after a prefix.
//
// A pushdown matcher: a parse is a stack of frames (one per open value: object, array,
// string, number, a literal being spelled, and the root); where the grammar branches
// (anyOf, enum literals sharing a prefix, which optional key comes next, whether a number
// goes on) the matcher keeps every live parse, deduplicated and capped at kMaxParses (a
// cap only drops alternatives, never admits a byte the grammar refuses). A byte no parse
// accepts leaves the matcher unchanged and is reported as refused.
//
//   GrammarMatcher m(grammar);
//   m.accept_bytes("{\"a\": 1");   // true
//   m.can_end();                    // false: the object is open
//   m.accept_bytes("}"); m.closed(); // true: nothing may follow
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "generate/json_grammar.h"

namespace squeeze::generate {

class GrammarMatcher {
 public:
  static constexpr size_t kMaxParses = 256;

  explicit GrammarMatcher(std::shared_ptr<const JsonGrammar> grammar);

  // Consumes the bytes if every one is accepted in turn (true), else changes nothing.
  bool accept_bytes(std::string_view bytes);
  // Whether the text so far is a complete value (generation may stop here).
  bool can_end() const;
  // Whether the value is complete and no byte may follow.
  bool closed() const;
  // In a string's text (one parse, no escape or UTF-8 sequence open): how many more
  // characters the string may take (INT64_MAX: unbounded); else -1.
  int64_t string_room() const;

  // One parse: the open frames, the innermost last.
  struct Frame {
    int32_t node = -1;
    uint8_t type = 0;   // FrameType
    uint8_t phase = 0;
    uint8_t ws = 0;     // whitespace bytes in the current run
    uint8_t extra = 0;  // string: the UTF-8 continuation range; number: negative sign
    int32_t aux = 0;    // object: the property being written; literal: which text; string: continuation bytes left
    int32_t count = 0;  // object: next property; array: items; string: characters; literal: bytes matched; number: digits
    int64_t value = 0;  // integer: the digits' value so far; string with a pattern: its state
    uint32_t cp = 0;    // string: the code point being read (UTF-8, \u)
    bool operator==(const Frame&) const = default;
  };
  struct Parse {
    std::array<Frame, JsonGrammar::kMaxDepth> frames;
    uint8_t depth = 0;
    Parse() = default;
    Parse(const Parse& o) : depth(o.depth) { std::copy_n(o.frames.begin(), depth, frames.begin()); }
    Parse& operator=(const Parse& o) {
      depth = o.depth;
      std::copy_n(o.frames.begin(), depth, frames.begin());
      return *this;
    }
    bool operator==(const Parse& o) const {
      return depth == o.depth && std::equal(frames.begin(), frames.begin() + depth, o.frames.begin());
    }
    Frame& top() { return frames[depth - 1u]; }
    const Frame& top() const { return frames[depth - 1u]; }
  };
  using Parses = std::vector<Parse>;

  // The parses after one more byte (out is cleared first); the trie walk of the token mask
  // uses it to try bytes without committing them.
  void step(const Parses& in, uint8_t byte, Parses& out) const;
  const Parses& parses() const { return parses_; }
  static bool can_end(const JsonGrammar& g, const Parses& ps);

 private:
  std::shared_ptr<const JsonGrammar> g_;
  Parses parses_, scratch_;
};

}  // namespace squeeze::generate
