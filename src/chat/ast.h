// chat/ast.h — the parsed template: expression and statement nodes, each with the
// source position its errors name.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/lexer.h"
#include "chat/value.h"

namespace squeeze::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    literal,   // value
    name,      // name
    list,      // items (tuple when `tuple`)
    dict,      // keys[i] : items[i]
    attr,      // a.name
    item,      // a[b]
    slice,     // a[items[0] : items[1] : items[2]] (null parts omitted)
    call,      // a(items..., kwargs...)
    filter,    // a | name(items..., kwargs...)   (a null for {% filter %} blocks)
    test,      // a is [not] name(items...)
    unary,     // op a        op: "-", "+", "not"
    binary,    // a op b      op: + - * / // % ** ~ and or in "not in"
    compare,   // a ops[0] items[0] ops[1] items[1] ...   (Python's chained comparison)
    cond,      // a if b else c (c may be null)
  };
  Kind kind;
  Pos pos;
  Value value;
  std::string name;  // name, attribute, filter, test or operator
  bool negated = false;
  bool tuple = false;
  ExprPtr a, b, c;
  std::vector<ExprPtr> items;
  std::vector<ExprPtr> keys;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    text,        // text
    output,      // {{ expr }}
    if_,         // branches: (cond, body)...; else_body
    for_,        // for targets in expr [if cond]: body [else: else_body]
    set,         // set targets = expr  |  set ns.attr = expr (attr non-empty)
    set_block,   // set targets[0] %}body{% endset
    macro,       // macro name(params = defaults) body
    filter,      // filter expr(chain with null operand) body
    break_,
    continue_,
    block,       // a body rendered in place ({% generation %})
  };
  Kind kind;
  Pos pos;
  std::string text;
  std::string name;     // macro name, or the namespace variable of set ns.attr
  std::string attr;
  std::vector<std::string> targets;
  ExprPtr expr;
  ExprPtr cond;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters and defaults (may be null)
};

}  // namespace squeeze::chat
