// chat/lexer.cpp — Jinja's lexer, reproduced where chat templates depend on it: the
// whitespace rules follow jinja2 3.1's lexer.py (newlines normalised to \n first, one
// trailing newline dropped, `-` strips all whitespace, trim_blocks eats one newline
// after `%}` / `#}`, lstrip_blocks strips a line's indentation before `{%` / `{#`
// unless the tag says `+`).
#include "chat/lexer.h"

#include <algorithm>
#include <cstring>

#include "chat/value.h"
#include "core/error.h"

namespace squeeze::chat {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Lexer {
 public:
  Lexer(std::string_view src, const LexOptions& o, const std::string& name) : o_(o), name_(name) {
    // jinja2 splits on every newline convention and rejoins with \n.
    src_.reserve(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
      if (src[i] == '\r') {
        src_ += '\n';
        if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
      } else {
        src_ += src[i];
      }
    }
    if (!o_.keep_trailing_newline && !src_.empty() && src_.back() == '\n') src_.pop_back();
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    while (p_ < src_.size()) {
      const size_t tag = find_tag(p_);
      std::string text = src_.substr(p_, tag - p_);
      if (tag == src_.size()) {
        push_text(std::move(text), p_);
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'
      const char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      const size_t text_pos = p_;
      strip_before(text, sign, kind != '{');
      push_text(std::move(text), text_pos);
      p_ = tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') comment(tag);
      else if (kind == '%' && raw(tag)) continue;
      else tag_body(tag, kind == '%');
    }
    out_.push_back(Token{Tok::eof, "", 0, 0, pos(src_.size())});
    return std::move(out_);
  }

 private:
  [[noreturn]] void error(size_t at, const std::string& msg) const {
    const Pos p = pos(at);
    fail(name_, ":", p.line, ":", p.col, ": ", msg);
  }

  Pos pos(size_t at) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), at);
    const size_t line_start = it == line_starts_.begin() ? 0 : *(it - 1);
    const int line = static_cast<int>(it - line_starts_.begin()) + 1;
    // Columns count bytes: cheap for any line length (a code point count would make
    // lexing a long one-line template quadratic).
    return Pos{line, static_cast<int>(at - line_start) + 1};
  }

  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i)
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return src_.size();
  }

  // Whitespace control on the text before a tag.
  void strip_before(std::string& text, char sign, bool block_or_comment) const {
    if (sign == '-') {
      while (!text.empty() && is_space(text.back())) text.pop_back();
    } else if (sign != '+' && o_.lstrip_blocks && block_or_comment) {
      const size_t nl = text.rfind('\n');
      const size_t l = nl == std::string::npos ? 0 : nl + 1;
      if ((l > 0 || line_starting_) && text.find_first_not_of(" \t", l) == std::string::npos) text.resize(l);
    }
  }

  void push_text(std::string text, size_t at) {
    if (!text.empty()) out_.push_back(Token{Tok::text, std::move(text), 0, 0, pos(at)});
  }

  // After a tag's closing delimiter at p_: `-` eats all whitespace, otherwise
  // trim_blocks eats one newline after blocks and comments.
  void after_tag_end(char sign, bool block_or_comment) {
    const size_t start = p_;
    if (sign == '-') {
      while (p_ < src_.size() && is_space(src_[p_])) ++p_;
    } else if (sign != '+' && block_or_comment && o_.trim_blocks && p_ < src_.size() && src_[p_] == '\n') {
      ++p_;
    }
    line_starting_ = p_ > start && src_[p_ - 1] == '\n';
  }

  void comment(size_t tag) {
    const size_t end = src_.find("#}", p_);
    if (end == std::string::npos) error(tag, "unterminated comment");
    const char sign = end > p_ ? src_[end - 1] : '\0';
    p_ = end + 2;
    after_tag_end(sign == '-' || sign == '+' ? sign : '\0', true);
  }

  // {% raw %}...{% endraw %}: the text between is output as it is.
  bool raw(size_t tag) {
    size_t q = p_;
    while (q < src_.size() && is_space(src_[q])) ++q;
    if (src_.compare(q, 3, "raw") != 0 || (q + 3 < src_.size() && is_name_char(src_[q + 3]))) return false;
    q += 3;
    while (q < src_.size() && is_space(src_[q])) ++q;
    const bool strip_after = q < src_.size() && src_[q] == '-';
    if (strip_after) ++q;
    if (src_.compare(q, 2, "%}") != 0) error(tag, "expected '%}' after 'raw'");
    p_ = q + 2;
    if (strip_after)
      while (p_ < src_.size() && is_space(src_[p_])) ++p_;
    const size_t content = p_;
    for (size_t i = src_.find("{%", content); i != std::string::npos; i = src_.find("{%", i + 1)) {
      size_t k = i + 2;
      const char sign = k < src_.size() && (src_[k] == '-' || src_[k] == '+') ? src_[k++] : '\0';
      while (k < src_.size() && is_space(src_[k])) ++k;
      if (src_.compare(k, 6, "endraw") != 0) continue;
      k += 6;
      while (k < src_.size() && is_space(src_[k])) ++k;
      const char end_sign = k < src_.size() && (src_[k] == '-' || src_[k] == '+') ? src_[k++] : '\0';
      if (src_.compare(k, 2, "%}") != 0) continue;
      std::string text = src_.substr(content, i - content);
      strip_before(text, sign, true);
      push_text(std::move(text), content);
      p_ = k + 2;
      after_tag_end(end_sign, true);
      return true;
    }
    error(tag, "missing '{% endraw %}'");
  }

  void tag_body(size_t tag, bool block) {
    out_.push_back(Token{block ? Tok::block_begin : Tok::var_begin, "", 0, 0, pos(tag)});
    int depth = 0;  // inside (), [] or {} a '}}' or '%}' does not end the tag
    for (;;) {
      while (p_ < src_.size() && is_space(src_[p_])) ++p_;
      if (p_ >= src_.size()) error(tag, block ? "unterminated '{%' tag" : "unterminated '{{' tag");
      if (depth == 0) {
        const char* close = block ? "%}" : "}}";
        char sign = '\0';
        size_t at = p_;
        if ((src_[p_] == '-' || (block && src_[p_] == '+')) && src_.compare(p_ + 1, 2, close) == 0) sign = src_[at++];
        if (src_.compare(at, 2, close) == 0) {
          out_.push_back(Token{block ? Tok::block_end : Tok::var_end, "", 0, 0, pos(p_)});
          p_ = at + 2;
          after_tag_end(sign, block);
          return;
        }
      }
      expression_token(depth);
    }
  }

  void expression_token(int& depth) {
    const size_t start = p_;
    const char c = src_[p_];
    Token t;
    t.pos = pos(start);
    if (is_name_start(c)) {
      while (p_ < src_.size() && is_name_char(src_[p_])) ++p_;
      t.type = Tok::name;
      t.text = src_.substr(start, p_ - start);
    } else if (is_digit(c)) {
      number(t);
    } else if (c == '\'' || c == '"') {
      t.type = Tok::string;
      t.text = string_literal();
    } else {
      static const char* const ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                        "=",  "(",  ")",  "[",  "]",  "{",  "}", ",", ".", ":", "|", ";"};
      for (const char* op : ops) {
        if (src_.compare(p_, std::strlen(op), op) == 0) {
          t.type = Tok::op;
          t.text = op;
          p_ += std::strlen(op);
          break;
        }
      }
      if (t.type != Tok::op) error(start, std::string("unexpected character '") + c + "'");
      if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
      if ((t.text == ")" || t.text == "]" || t.text == "}") && depth > 0) --depth;
    }
    out_.push_back(std::move(t));
  }

  void number(Token& t) {
    const size_t start = p_;
    auto digits = [&] {
      while (p_ < src_.size() && (is_digit(src_[p_]) || (src_[p_] == '_' && p_ + 1 < src_.size() && is_digit(src_[p_ + 1]))))
        ++p_;
    };
    digits();
    bool real = false;
    // After a '.', "x.0.1" is attribute access, never a float (jinja2's lookbehind).
    const bool after_dot = start > 0 && src_[start - 1] == '.';
    if (!after_dot && p_ + 1 < src_.size() && src_[p_] == '.' && is_digit(src_[p_ + 1])) {
      ++p_;
      digits();
      real = true;
    }
    if (!after_dot && p_ < src_.size() && (src_[p_] == 'e' || src_[p_] == 'E')) {
      size_t q = p_ + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && is_digit(src_[q])) {
        p_ = q;
        digits();
        real = true;
      }
    }
    std::string text = src_.substr(start, p_ - start);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    try {
      if (real) {
        t.type = Tok::real;
        t.d = std::stod(text);
      } else {
        t.type = Tok::integer;
        t.i = std::stoll(text);
      }
    } catch (const std::exception&) {
      error(start, "number out of range: " + text);
    }
  }

  // A quoted literal with Python's escapes (jinja2 decodes them as unicode-escape);
  // an unknown escape keeps its backslash.
  std::string string_literal() {
    const size_t start = p_;
    const char quote = src_[p_++];
    std::string out;
    for (;;) {
      if (p_ >= src_.size()) error(start, "unterminated string");
      const char c = src_[p_++];
      if (c == quote) return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ >= src_.size()) error(start, "unterminated string");
      const char e = src_[p_++];
      auto hex = [&](int n) -> char32_t {
        char32_t v = 0;
        for (int k = 0; k < n; ++k, ++p_) {
          if (p_ >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[p_])))
            error(start, "truncated \\x, \\u or \\U escape in string");
          const char h = src_[p_];
          v = v * 16 + static_cast<char32_t>(is_digit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        return v;
      };
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\n': break;  // line continuation
        case 'x': utf8_append(out, hex(2)); break;
        case 'u': utf8_append(out, hex(4)); break;
        case 'U': {
          const char32_t cp = hex(8);
          if (cp > 0x10ffff) error(start, "\\U escape out of range");
          utf8_append(out, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            char32_t v = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && p_ < src_.size() && src_[p_] >= '0' && src_[p_] <= '7'; ++k)
              v = v * 8 + static_cast<char32_t>(src_[p_++] - '0');
            utf8_append(out, v);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
  }

  LexOptions o_;
  const std::string& name_;
  std::string src_;
  std::vector<size_t> line_starts_;
  size_t p_ = 0;
  bool line_starting_ = true;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& options, const std::string& name) {
  return Lexer(source, options, name).run();
}

}  // namespace squeeze::chat
