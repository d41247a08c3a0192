// text/unicode.cpp — see unicode.h.
#include "text/unicode.h"

#include <utf8proc.h>

#include <algorithm>

#include "core/error.h"

namespace squeeze::text {

CodeUnit decode_utf8_at(std::string_view s, size_t pos) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  const uint32_t off = static_cast<uint32_t>(pos);
  const unsigned char b0 = p[pos];
  if (b0 < 0x80) return {b0, off, 1};
  size_t len;
  uint32_t cp, min_cp;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min_cp = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min_cp = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min_cp = 0x10000;
  } else {
    return {kInvalidCodePoint, off, 1};  // continuation byte or 0xF8..0xFF
  }
  if (pos + len > n) return {kInvalidCodePoint, off, 1};
  for (size_t i = 1; i < len; ++i) {
    const unsigned char b = p[pos + i];
    if ((b & 0xC0) != 0x80) return {kInvalidCodePoint, off, 1};
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, UTF-16 surrogates and values past U+10FFFF are not well-formed.
  if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {kInvalidCodePoint, off, 1};
  return {cp, off, static_cast<uint32_t>(len)};
}

std::vector<CodeUnit> decode_utf8(std::string_view s) {
  std::vector<CodeUnit> out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    out.push_back(decode_utf8_at(s, pos));
    pos += out.back().length;
  }
  return out;
}

bool lenient_utf8(std::string_view text, std::string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  // Lenient decode of the unit at pos: {code point or U+FFFD, bytes consumed}.
  auto unit = [&](size_t pos) -> std::pair<uint32_t, size_t> {
    const unsigned char b0 = p[pos];
    if (b0 < 0x80) return {b0, 1};
    size_t len;
    uint32_t cp;
    if ((b0 & 0xE0) == 0xC0) len = 2, cp = b0 & 0x1F;
    else if ((b0 & 0xF0) == 0xE0) len = 3, cp = b0 & 0x0F;
    else if ((b0 & 0xF8) == 0xF0) len = 4, cp = b0 & 0x07;
    else return {0xFFFD, 1};  // a continuation byte or 0xF8..0xFF
    if (pos + len > n) return {0xFFFD, 1};
    for (size_t i = 1; i < len; ++i) {
      if ((p[pos + i] & 0xC0) != 0x80) return {0xFFFD, 1};
      cp = (cp << 6) | (p[pos + i] & 0x3F);
    }
    return {cp > 0x10FFFF ? 0xFFFD : cp, len};
  };
  bool changed = false;
  for (size_t pos = 0; pos < n && !changed;) {
    const CodeUnit u = decode_utf8_at(text, pos);
    changed = u.cp == kInvalidCodePoint;
    pos += u.length;
  }
  if (!changed) return false;
  out.clear();
  out.reserve(n + n / 2);
  for (size_t pos = 0; pos < n;) {
    const auto [cp, len] = unit(pos);
    if (cp >= 0xD800 && cp <= 0xDFFF) {  // encoded as the three bytes it came from
      out.push_back(char(0xE0 | (cp >> 12)));
      out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
      append_utf8(out, cp);
    }
    pos += len;
  }
  return true;
}

void append_utf8(std::string& out, uint32_t cp) {
  SQZ_CHECK(cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF), "not a Unicode scalar value: ", cp);
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

Category general_category(uint32_t cp) {
  if (cp > 0x10FFFF) return Category::Cn;
  return static_cast<Category>(utf8proc_category(static_cast<utf8proc_int32_t>(cp)));
}

char major_category(Category c) {
  static constexpr char kMajor[] = "CLLLLLMMMNNNPPPPPPPSSSSZZZCCCC";
  return kMajor[static_cast<size_t>(c)];
}

bool is_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';  // the hot path
  return major_category(general_category(cp)) == 'L';
}

bool is_number(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return major_category(general_category(cp)) == 'N';
}

// White_Space is a property, not a category (it includes controls such as \t and \n
// and excludes U+200B); utf8proc has no accessor for it, and the list has been stable
// since Unicode 6.3.
bool is_whitespace(uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

uint32_t to_lower(uint32_t cp) {
  if (cp > 0x10FFFF) return cp;
  return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

const char* unicode_data_version() { return utf8proc_unicode_version(); }

}  // namespace squeeze::text
