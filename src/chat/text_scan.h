// chat/text_scan.h — the small text tests the output parsers share.
#pragma once

#include <algorithm>
#include <string_view>

namespace squeeze::chat::scan {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// How many bytes at the end of `s` could begin `lit` (a proper prefix of it): text a
// streaming parser holds back until the next chunk decides it.
inline size_t partial_suffix(std::string_view s, std::string_view lit) {
  for (size_t n = std::min(s.size(), lit.size() - 1); n > 0; --n)
    if (lit.starts_with(s.substr(s.size() - n))) return n;
  return 0;
}

}  // namespace squeeze::chat::scan
