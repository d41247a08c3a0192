// text/unicode.h — UTF-8 decoding that never fails and the Unicode classes the
// pre-tokenizers need (general categories \p{L}, \p{N}, \p{M}, \p{P}, \p{S}, ... and
// whitespace \s). Categories come from utf8proc (Debian's libutf8proc), a maintained
// copy of the Unicode Character Database, rather than tables of our own.
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

// The text as byte-level BPE tokenizers of the ecosystem read it (llama.cpp decodes
// leniently, then re-encodes each code point): a lead byte followed by the continuation
// bytes it announces is one code point — overlong forms decode to their value and come
// back in shortest form, surrogates stay as they are — and every other byte becomes
// U+FFFD. Returns false, leaving `out` alone, when nothing would change (the common
// case: well-formed UTF-8).
bool lenient_utf8(std::string_view text, std::string& out);

// Unicode general categories (the UCD's two-letter values), as utf8proc numbers them.
enum class Category : uint8_t {
  Cn, Lu, Ll, Lt, Lm, Lo, Mn, Mc, Me, Nd, Nl, No, Pc, Pd, Ps, Pe, Pi, Pf, Po,
  Sm, Sc, Sk, So, Zs, Zl, Zp, Cc, Cf, Cs, Co,
};
// kInvalidCodePoint (a byte that is not UTF-8) and unassigned code points give Cn.
Category general_category(uint32_t cp);
// The category's major class: 'L', 'M', 'N', 'P', 'S', 'Z' or 'C'.
char major_category(Category c);

// General category L* (Lu, Ll, Lt, Lm, Lo).
bool is_letter(uint32_t cp);
// General category N* (Nd, Nl, No).
bool is_number(uint32_t cp);
// The Unicode White_Space property (what \s means in the pre-tokenizer regexes).
bool is_whitespace(uint32_t cp);
// Simple lower-case mapping (identity for code points without one and for invalid units).
uint32_t to_lower(uint32_t cp);
// The Unicode version of the category data (utf8proc's).
const char* unicode_data_version();

}  // namespace squeeze::text
