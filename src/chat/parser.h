// chat/parser.h — tokens to a statement tree. Syntax errors are one-line
// squeeze::Errors "<name>:LINE:COL: message"; nesting is bounded so a malformed or
// hostile template cannot exhaust the stack.
#pragma once

#include <string>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"

namespace squeeze::chat {

// Nested blocks plus nested expressions; real templates stay under 20.
inline constexpr int kMaxParseDepth = 128;

Body parse(const std::vector<Token>& tokens, const std::string& name);

}  // namespace squeeze::chat
