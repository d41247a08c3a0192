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

// What the text seen so far says of a pattern: no continuation can make it match (no),
// the text ends inside it (partial), or it matched (yes). A streaming parser decides on
// no and yes only, so that how the text was split never changes the result.
enum class Match { no, partial, yes };

inline Match match_at(std::string_view s, size_t i, std::string_view lit) {
  const std::string_view rest = s.substr(std::min(i, s.size()));
  if (rest.size() >= lit.size()) return rest.starts_with(lit) ? Match::yes : Match::no;
  return lit.starts_with(rest) ? Match::partial : Match::no;
}

// Past the whitespace at i, looking at no more than limit + 1 bytes (so a caller can tell
// "more than limit" from "limit").
inline size_t skip_space(std::string_view s, size_t i, size_t limit) {
  const size_t stop = std::min(s.size(), i + limit + 1);
  while (i < stop && is_space(s[i])) ++i;
  return i;
}

// A name in markup (a recipient, a channel): from i, bytes that are neither whitespace nor
// '<', ended by either; at most max_len of them, and at least one.
struct Word {
  Match match = Match::no;
  size_t end = 0;         // just past the name (yes)
  std::string_view text;  // (yes)
};

inline Word word_at(std::string_view s, size_t i, size_t max_len) {
  size_t k = i;
  while (k < s.size() && !is_space(s[k]) && s[k] != '<') {
    if (k - i == max_len) return {};
    ++k;
  }
  if (k == s.size()) return {Match::partial, 0, {}};
  if (k == i) return {};
  return {Match::yes, k, s.substr(i, k - i)};
}

}  // namespace squeeze::chat::scan
