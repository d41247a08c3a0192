// chat/parser.cpp — recursive descent over the tokens, with jinja2's precedence:
//   x if c else y  <  or  <  and  <  not  <  comparisons, in, not in  <  + -  <  ~
//   <  * / // %  <  **  <  unary - +  <  filters (|), tests (is)  <  . [] ()
// Filters bind tighter than arithmetic: `'a' + x | trim` is `'a' + (x | trim)`.
#include "chat/parser.h"

#include <set>

#include "core/error.h"

namespace squeeze::chat {
namespace {

class Parser {
 public:
  Parser(const std::vector<Token>& t, const std::string& name) : t_(t), name_(name) {}

  Body run() {
    std::string end;
    return parse_body({}, end, cur().pos);
  }

 private:
  // --- token helpers -----------------------------------------------------------
  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool is_op(const char* op) const { return cur().type == Tok::op && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == Tok::name && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case Tok::text: return "template text";
      case Tok::var_begin: return "'{{'";
      case Tok::var_end: return "'}}'";
      case Tok::block_begin: return "'{%'";
      case Tok::block_end: return "'%}'";
      case Tok::name: return "'" + t.text + "'";
      case Tok::string: return "string";
      case Tok::integer:
      case Tok::real: return "number";
      case Tok::op: return "'" + t.text + "'";
      case Tok::eof: return "end of template";
    }
    return "?";
  }
  [[noreturn]] void error_at(const Pos& p, const std::string& msg) const {
    fail(name_, ":", p.line, ":", p.col, ": ", msg);
  }
  [[noreturn]] void unexpected(const std::string& expected) const {
    error_at(cur().pos, "expected " + expected + ", got " + describe(cur()));
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) unexpected(std::string("'") + op + "'");
  }
  std::string expect_name() {
    if (cur().type != Tok::name) unexpected("a name");
    std::string n = cur().text;
    next();
    return n;
  }
  void expect_block_end() {
    if (cur().type != Tok::block_end) unexpected("'%}'");
    next();
  }

  struct DepthGuard {
    Parser& p;
    DepthGuard(Parser& parser, const Pos& pos) : p(parser) {
      if (++p.depth_ > kMaxParseDepth) p.error_at(pos, "template nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
  };

  ExprPtr node(Expr::Kind k, const Pos& pos) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->pos = pos;
    return e;
  }

  // --- statements --------------------------------------------------------------
  // Statements until a block tag whose keyword is in `ends` (returned in `end`, the
  // tag left open after the keyword), or the end of the template when `ends` is empty.
  Body parse_body(const std::set<std::string>& ends, std::string& end, const Pos& opened) {
    DepthGuard guard(*this, cur().pos);
    Body body;
    for (;;) {
      const Token& t = cur();
      if (t.type == Tok::eof) {
        if (ends.empty()) return body;
        std::string list;
        for (const auto& e : ends) list += (list.empty() ? "'" : " or '") + e + "'";
        error_at(opened, "block opened here is never closed: expected " + list);
      }
      if (t.type == Tok::text) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::text;
        s->pos = t.pos;
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == Tok::var_begin) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::output;
        s->pos = t.pos;
        next();
        s->expr = parse_tuple(true);
        if (cur().type != Tok::var_end) unexpected("'}}'");
        next();
        body.push_back(std::move(s));
      } else if (t.type == Tok::block_begin) {
        tag_pos_ = t.pos;
        next();
        if (cur().type != Tok::name) unexpected("a statement name");
        const std::string kw = cur().text;
        if (ends.count(kw)) {
          next();
          end = kw;
          return body;
        }
        body.push_back(parse_statement());
      } else {
        unexpected("text, '{{' or '{%'");
      }
    }
  }

  StmtPtr parse_statement() {
    const Token& t = cur();
    const std::string kw = t.text;
    auto s = std::make_unique<Stmt>();
    s->pos = t.pos;
    const Pos opened = tag_pos_;
    next();
    std::string end;
    if (kw == "if") {
      s->kind = Stmt::Kind::if_;
      ExprPtr cond = parse_tuple(false);
      for (;;) {
        expect_block_end();
        Body b = parse_body({"elif", "else", "endif"}, end, opened);
        s->branches.emplace_back(std::move(cond), std::move(b));
        if (end == "elif") {
          cond = parse_tuple(false);
          continue;
        }
        if (end == "else") {
          expect_block_end();
          s->else_body = parse_body({"endif"}, end, opened);
        }
        break;
      }
    } else if (kw == "for") {
      s->kind = Stmt::Kind::for_;
      s->targets = parse_targets();
      if (!skip_name("in")) unexpected("'in'");
      s->expr = parse_tuple(false);
      if (skip_name("if")) s->cond = parse_expression(true);
      if (is_name("recursive")) error_at(cur().pos, "recursive loops are not supported");
      expect_block_end();
      ++loop_depth_;
      s->body = parse_body({"else", "endfor"}, end, opened);
      --loop_depth_;
      if (end == "else") {
        expect_block_end();
        s->else_body = parse_body({"endfor"}, end, opened);
      }
    } else if (kw == "set") {
      s->kind = Stmt::Kind::set;
      if (cur().type == Tok::name && peek().type == Tok::op && peek().text == ".") {
        s->name = expect_name();
        next();
        s->attr = expect_name();
      } else {
        s->targets = parse_targets();
      }
      if (skip_op("=")) {
        s->expr = parse_tuple(true);
      } else {
        if (!s->attr.empty() || s->targets.size() != 1) unexpected("'='");
        s->kind = Stmt::Kind::set_block;
        expect_block_end();
        s->body = parse_body({"endset"}, end, opened);
      }
    } else if (kw == "macro") {
      s->kind = Stmt::Kind::macro;
      s->name = expect_name();
      expect_op("(");
      while (!is_op(")")) {
        if (!s->params.empty()) expect_op(",");
        if (is_op(")")) break;
        std::string p = expect_name();
        ExprPtr def;
        if (skip_op("=")) def = parse_expression(true);
        s->params.emplace_back(std::move(p), std::move(def));
      }
      next();
      expect_block_end();
      const int outer_loops = loop_depth_;
      loop_depth_ = 0;  // a loop around the definition is not a loop around the body
      s->body = parse_body({"endmacro"}, end, opened);
      loop_depth_ = outer_loops;
    } else if (kw == "filter") {
      s->kind = Stmt::Kind::filter;
      s->expr = parse_filters(nullptr, cur().pos);
      expect_block_end();
      s->body = parse_body({"endfilter"}, end, opened);
    } else if (kw == "break" || kw == "continue") {
      if (loop_depth_ == 0) error_at(s->pos, "'" + kw + "' outside a loop");
      s->kind = kw == "break" ? Stmt::Kind::break_ : Stmt::Kind::continue_;
    } else if (kw == "generation") {
      // transformers' AssistantTracker extension marks assistant text this way;
      // for rendering it is a plain block.
      s->kind = Stmt::Kind::block;
      expect_block_end();
      s->body = parse_body({"endgeneration"}, end, opened);
    } else {
      error_at(s->pos, "unknown or unsupported tag '" + kw + "'");
    }
    expect_block_end();
    return s;
  }

  // name | name, name | (name, name)
  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    const bool paren = skip_op("(");
    do {
      if (paren && is_op(")")) break;
      names.push_back(expect_name());
    } while (skip_op(","));
    if (paren) expect_op(")");
    return names;
  }

  // --- expressions -------------------------------------------------------------
  // An expression, or a tuple of them when commas follow (`{{ a, b }}`, `set x = 1, 2`).
  ExprPtr parse_tuple(bool with_condexpr) {
    const Pos pos = cur().pos;
    ExprPtr first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    auto t = node(Expr::Kind::list, pos);
    t->tuple = true;
    t->items.push_back(std::move(first));
    while (skip_op(",")) {
      if (at_expression_end()) break;
      t->items.push_back(parse_expression(with_condexpr));
    }
    return t;
  }

  bool at_expression_end() const {
    return cur().type == Tok::var_end || cur().type == Tok::block_end || is_op(")") || is_op("]") || is_op("}") ||
           cur().type == Tok::eof;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this, cur().pos);
    ExprPtr e = parse_or();
    if (!with_condexpr) return e;
    while (is_name("if")) {
      const Pos pos = cur().pos;
      next();
      auto c = node(Expr::Kind::cond, pos);
      c->a = std::move(e);
      c->b = parse_or();
      if (skip_name("else")) c->c = parse_expression(true);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr a, ExprPtr b, const Pos& pos) {
    auto e = node(Expr::Kind::binary, pos);
    e->name = op;
    e->a = std::move(a);
    e->b = std::move(b);
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Pos pos = cur().pos;
      next();
      e = binary("or", std::move(e), parse_and(), pos);
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Pos pos = cur().pos;
      next();
      e = binary("and", std::move(e), parse_not(), pos);
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this, cur().pos);
      auto e = node(Expr::Kind::unary, cur().pos);
      next();
      e->name = "not";
      e->a = parse_not();
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Pos pos = cur().pos;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    for (;;) {
      std::string op;
      if (cur().type == Tok::op &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
           cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && peek().type == Tok::name && peek().text == "in") {
        op = "not in";
        next();
        next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Expr::Kind::compare, pos);
        cmp->a = std::move(first);
      }
      cmp->ops.push_back(op);
      cmp->items.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Pos pos = cur().pos;
      const std::string op = cur().text;
      next();
      e = binary(op, std::move(e), parse_concat(), pos);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const Pos pos = cur().pos;
      next();
      e = binary("~", std::move(e), parse_math2(), pos);
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Pos pos = cur().pos;
      const std::string op = cur().text;
      next();
      e = binary(op, std::move(e), parse_pow(), pos);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Pos pos = cur().pos;
      next();
      e = binary("**", std::move(e), parse_unary(true), pos);
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this, cur().pos);
    const Pos pos = cur().pos;
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = node(Expr::Kind::unary, pos);
      e->name = cur().text;
      next();
      e->a = parse_unary(false);
    } else {
      e = parse_postfix(parse_primary());
    }
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    const Pos pos = t.pos;
    switch (t.type) {
      case Tok::name: {
        auto e = node(Expr::Kind::literal, pos);
        if (t.text == "true" || t.text == "True") e->value = Value(true);
        else if (t.text == "false" || t.text == "False") e->value = Value(false);
        else if (t.text == "none" || t.text == "None") e->value = Value::none();
        else {
          e->kind = Expr::Kind::name;
          e->name = t.text;
        }
        next();
        return e;
      }
      case Tok::string: {
        std::string s;
        while (cur().type == Tok::string) {  // adjacent literals join, as in Python
          s += cur().text;
          next();
        }
        auto e = node(Expr::Kind::literal, pos);
        e->value = Value(std::move(s));
        return e;
      }
      case Tok::integer:
      case Tok::real: {
        auto e = node(Expr::Kind::literal, pos);
        e->value = t.type == Tok::integer ? Value(t.i) : Value(t.d);
        next();
        return e;
      }
      case Tok::op:
        if (t.text == "(") {
          next();
          if (skip_op(")")) {
            auto e = node(Expr::Kind::list, pos);
            e->tuple = true;
            return e;
          }
          ExprPtr e = parse_tuple(true);
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          next();
          auto e = node(Expr::Kind::list, pos);
          while (!is_op("]")) {
            if (!e->items.empty()) expect_op(",");
            if (is_op("]")) break;
            e->items.push_back(parse_expression(true));
          }
          next();
          return e;
        }
        if (t.text == "{") {
          next();
          auto e = node(Expr::Kind::dict, pos);
          while (!is_op("}")) {
            if (!e->items.empty()) expect_op(",");
            if (is_op("}")) break;
            e->keys.push_back(parse_expression(true));
            expect_op(":");
            e->items.push_back(parse_expression(true));
          }
          next();
          return e;
        }
        break;
      default: break;
    }
    unexpected("an expression");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      if (is_op(".") || is_op("[")) e = parse_subscript(std::move(e));
      else if (is_op("(")) e = parse_call(std::move(e));
      else return e;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    for (;;) {
      if (is_op("|")) e = parse_filters(std::move(e), cur().pos);
      else if (is_name("is")) e = parse_test(std::move(e));
      else if (is_op("(")) e = parse_call(std::move(e));
      else return e;
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    const Pos pos = cur().pos;
    if (skip_op(".")) {
      if (cur().type == Tok::integer) {  // x.0 is x[0]
        auto e = node(Expr::Kind::item, pos);
        e->a = std::move(obj);
        e->b = node(Expr::Kind::literal, cur().pos);
        e->b->value = Value(cur().i);
        next();
        return e;
      }
      auto e = node(Expr::Kind::attr, pos);
      e->a = std::move(obj);
      e->name = expect_name();
      return e;
    }
    next();  // '['
    ExprPtr parts[3];
    bool slice = false;
    for (int k = 0; k < 3; ++k) {
      if (k > 0) {
        if (!skip_op(":")) break;
        slice = true;
      }
      if (!is_op(":") && !is_op("]")) parts[k] = parse_expression(true);
      if (k == 0 && !is_op(":")) break;
    }
    expect_op("]");
    auto e = node(slice ? Expr::Kind::slice : Expr::Kind::item, pos);
    e->a = std::move(obj);
    if (slice) {
      for (auto& p : parts) e->items.push_back(std::move(p));
    } else {
      if (!parts[0]) error_at(pos, "empty subscript");
      e->b = std::move(parts[0]);
    }
    return e;
  }

  void parse_args(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (!e.items.empty() || !e.kwargs.empty()) expect_op(",");
      if (is_op(")")) break;
      if (cur().type == Tok::name && peek().type == Tok::op && peek().text == "=") {
        std::string key = cur().text;
        next();
        next();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) error_at(cur().pos, "positional argument after keyword argument");
        e.items.push_back(parse_expression(true));
      }
    }
    next();
  }

  ExprPtr parse_call(ExprPtr callee) {
    DepthGuard guard(*this, cur().pos);
    auto e = node(Expr::Kind::call, callee->pos);  // errors point at what is called
    e->a = std::move(callee);
    parse_args(*e);
    return e;
  }

  // `| name(args) | name ...`; `obj` is null for a {% filter %} block's chain.
  ExprPtr parse_filters(ExprPtr obj, const Pos& start) {
    ExprPtr e = std::move(obj);
    bool first = e == nullptr;
    while (first || skip_op("|")) {
      first = false;
      DepthGuard guard(*this, start);
      auto f = node(Expr::Kind::filter, cur().pos);
      f->name = expect_name();
      f->a = std::move(e);
      if (is_op("(")) parse_args(*f);
      e = std::move(f);
    }
    return e;
  }

  ExprPtr parse_test(ExprPtr obj) {
    auto e = node(Expr::Kind::test, cur().pos);
    next();  // 'is'
    e->negated = skip_name("not");
    e->name = expect_name();
    e->a = std::move(obj);
    if (is_op("(")) {
      parse_args(*e);
    } else if ((cur().type == Tok::name || cur().type == Tok::string || cur().type == Tok::integer ||
                cur().type == Tok::real || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and") && !is_name("if") && !is_name("in") &&
               !is_name("not")) {
      // `is equalto 3`, `is sameas false`: one argument without parentheses.
      if (is_name("is")) error_at(cur().pos, "tests cannot be chained with 'is'");
      e->items.push_back(parse_postfix(parse_primary()));
    }
    return e;
  }

  const std::vector<Token>& t_;
  const std::string& name_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  Pos tag_pos_;  // the '{%' of the statement being parsed
};

}  // namespace

Body parse(const std::vector<Token>& tokens, const std::string& name) { return Parser(tokens, name).run(); }

}  // namespace squeeze::chat
