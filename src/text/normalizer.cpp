// text/normalizer.cpp — the normalizer steps, through utf8proc for Unicode forms and case.
#include "text/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>
#include <sstream>

#include "core/error.h"

namespace squeeze::text {
namespace {

std::string hex_of(std::string_view s) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string unhex(const std::string& h, const std::string& step) {
  const auto digit = [&](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    fail("tokenizer normalizer step '", step, "': bad hex");
  };
  if (h.size() % 2) fail("tokenizer normalizer step '", step, "': bad hex");
  std::string out;
  for (size_t i = 0; i < h.size(); i += 2) out += static_cast<char>(digit(h[i]) << 4 | digit(h[i + 1]));
  return out;
}

// utf8proc's composition/decomposition; invalid UTF-8 is left as it is (the tokenizer
// reads it bytewise, as llama.cpp does).
std::string unicode_form(std::string_view text, int options) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          static_cast<utf8proc_ssize_t>(text.size()), &out,
                                          static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  if (n < 0) return std::string(text);
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> hold(out, &std::free);
  return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
}

std::string lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                                                static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    if (n <= 0) {  // an invalid byte: kept
      out += text[i++];
      continue;
    }
    utf8proc_uint8_t buf[4];
    const utf8proc_ssize_t m = utf8proc_encode_char(utf8proc_tolower(cp), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(m));
    i += static_cast<size_t>(n);
  }
  return out;
}

// Python's str.isspace, which tokenizers' Strip uses: White_Space characters.
bool is_space(utf8proc_int32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x1f) || cp == 0x85) return true;
  const utf8proc_category_t c = utf8proc_category(cp);
  return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

std::string strip(std::string_view text, bool left, bool right) {
  std::vector<std::pair<size_t, size_t>> chars;  // (offset, bytes) of each code point
  for (size_t i = 0; i < text.size();) {
    utf8proc_int32_t cp = -1;
    utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                                          static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    if (n <= 0) n = 1, cp = -1;
    chars.emplace_back(i, static_cast<size_t>(n));
    i += static_cast<size_t>(n);
  }
  const auto space_at = [&](size_t k) {
    utf8proc_int32_t cp = -1;
    utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + chars[k].first),
                     static_cast<utf8proc_ssize_t>(chars[k].second), &cp);
    return cp >= 0 && is_space(cp);
  };
  size_t b = 0, e = chars.size();
  if (left)
    while (b < e && space_at(b)) ++b;
  if (right)
    while (e > b && space_at(e - 1)) --e;
  if (b == e) return {};
  return std::string(text.substr(chars[b].first, chars[e - 1].first + chars[e - 1].second - chars[b].first));
}

std::string replace_all(std::string_view text, const std::string& pattern, const std::string& content) {
  if (pattern.empty()) return std::string(text);
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(pattern, pos)) != std::string_view::npos; pos = hit + pattern.size()) {
    out.append(text.substr(pos, hit - pos));
    out += content;
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace

Normalizer::Normalizer(const std::vector<std::string>& steps) {
  for (const std::string& s : steps) {
    std::istringstream in(s);
    std::string kind, a, b;
    in >> kind >> a >> b;
    Step st{};
    if (kind == "NFC") st.kind = Step::Kind::nfc;
    else if (kind == "NFD") st.kind = Step::Kind::nfd;
    else if (kind == "NFKC") st.kind = Step::Kind::nfkc;
    else if (kind == "NFKD") st.kind = Step::Kind::nfkd;
    else if (kind == "Lowercase") st.kind = Step::Kind::lowercase;
    else if (kind == "Strip" && (a == "0" || a == "1") && (b == "0" || b == "1")) {
      st.kind = Step::Kind::strip;
      st.left = a == "1";
      st.right = b == "1";
    } else if (kind == "Replace" && !a.empty()) {
      st.kind = Step::Kind::replace;
      st.pattern = unhex(a, s);
      st.content = b == "-" ? "" : unhex(b, s);
    } else if (kind == "Prepend" && !a.empty()) {
      st.kind = Step::Kind::prepend;
      st.content = unhex(a, s);
    } else {
      fail("tokenizer normalizer step '", s, "' is not one squeeze knows");
    }
    steps_.push_back(std::move(st));
  }
}

std::string Normalizer::replace_step(std::string_view pattern, std::string_view content) {
  return "Replace " + hex_of(pattern) + " " + (content.empty() ? "-" : hex_of(content));
}

std::string Normalizer::prepend_step(std::string_view text) { return "Prepend " + hex_of(text); }

std::string Normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (const Step& st : steps_) {
    switch (st.kind) {
      case Step::Kind::nfc: s = unicode_form(s, UTF8PROC_COMPOSE); break;
      case Step::Kind::nfd: s = unicode_form(s, UTF8PROC_DECOMPOSE); break;
      case Step::Kind::nfkc: s = unicode_form(s, UTF8PROC_COMPOSE | UTF8PROC_COMPAT); break;
      case Step::Kind::nfkd: s = unicode_form(s, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT); break;
      case Step::Kind::lowercase: s = lowercase(s); break;
      case Step::Kind::strip: s = strip(s, st.left, st.right); break;
      case Step::Kind::replace: s = replace_all(s, st.pattern, st.content); break;
      case Step::Kind::prepend:
        if (!s.empty()) s = st.content + s;  // tokenizers prepends only to non-empty text
        break;
    }
  }
  return s;
}

}  // namespace squeeze::text
