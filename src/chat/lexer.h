// chat/lexer.h — template source to tokens: text runs, tag delimiters, and the
// expression tokens inside tags, with Jinja's whitespace control applied to the text
// (`{%-`/`-%}` strip, trim_blocks, lstrip_blocks, {% raw %}, comments dropped).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace squeeze::chat {

struct Pos {
  int line = 1;
  int col = 1;
};

enum class Tok { text, var_begin, var_end, block_begin, block_end, name, string, integer, real, op, eof };

struct Token {
  Tok type = Tok::eof;
  std::string text;  // text run, name, decoded string literal, or operator
  int64_t i = 0;
  double d = 0;
  Pos pos;
};

struct LexOptions {
  bool trim_blocks = true;    // drop the first newline after a block tag or comment
  bool lstrip_blocks = true;  // drop spaces and tabs before a block tag or comment on its own line
  bool keep_trailing_newline = false;
};

// Throws squeeze::Error "<name>:LINE:COL: message" on an unterminated tag, comment,
// string or raw block, or a character no token starts with.
std::vector<Token> lex(std::string_view source, const LexOptions& options, const std::string& name);

}  // namespace squeeze::chat
