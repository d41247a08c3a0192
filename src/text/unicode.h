// text/unicode.h — UTF-8 decoding that never fails and the Unicode classes the
// pre-tokenizer needs (letter \p{L}, number \p{N}, whitespace \s).
//
// Byte strings need not be valid UTF-8: every byte that does not start a well-formed
// sequence (stray continuation bytes, truncated or overlong sequences, surrogates,
// code points above U+10FFFF) decodes as a one-byte "invalid" unit, so a decoded
// sequence always covers the input exactly and byte-level BPE can round-trip it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace squeeze::text {

// Marks a byte that is not part of well-formed UTF-8. It classifies as "other"
// (neither letter, number nor whitespace), i.e. like punctuation.
inline constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFFu;

struct CodeUnit {
  uint32_t cp;      // code point, or kInvalidCodePoint
  uint32_t offset;  // byte offset in the input
  uint32_t length;  // bytes (1-4)
};

// Decodes the (well-formed, or invalid one-byte) unit starting at `pos` (< s.size()).
CodeUnit decode_utf8_at(std::string_view s, size_t pos);
// Decodes the whole string; the units' byte ranges tile [0, s.size()).
std::vector<CodeUnit> decode_utf8(std::string_view s);
// Appends the UTF-8 encoding of cp (must be a valid scalar value).
void append_utf8(std::string& out, uint32_t cp);

// General category L* (Lu, Ll, Lt, Lm, Lo), from generated range tables.
bool is_letter(uint32_t cp);
// General category N* (Nd, Nl, No).
bool is_number(uint32_t cp);
// The Unicode White_Space property (what \s means in the pre-tokenizer regexes).
bool is_whitespace(uint32_t cp);
// The Unicode version the letter/number tables were generated from.
const char* unicode_tables_version();

namespace detail {
struct CodeRange {
  uint32_t lo, hi;  // inclusive
};
extern const char kUnicodeVersion[];
extern const CodeRange kLetterRanges[];
extern const size_t kLetterRanges_count;
extern const CodeRange kNumberRanges[];
extern const size_t kNumberRanges_count;
}  // namespace detail

}  // namespace squeeze::text
