// chat/interpreter.cpp — evaluates the statement tree. Scoping follows jinja2: a for
// loop gives every iteration a fresh scope (a `set` inside a loop is gone after it —
// why templates use namespace()), `if` adds none, and a macro body sees the template's
// top-level variables as they are when it is called, plus its own parameters.
#include "chat/interpreter.h"

#include <unordered_map>

#include "chat/budget.h"
#include "chat/builtins.h"
#include "core/error.h"

namespace squeeze::chat {
namespace {

// An error that already names its template position; wrapping stops at the innermost.
class PositionedError : public Error {
 public:
  using Error::Error;
};

enum class Flow { normal, break_, continue_ };

using Frame = std::unordered_map<std::string, Value>;

class Interpreter {
 public:
  Interpreter(const DictItems& context, const TemplateOptions& o, const RenderLimits& limits)
      : o_(o), limits_(limits) {
    for (auto& [k, v] : make_globals(o.now)) globals_[k] = v;
    for (const auto& [k, v] : context) root_[k] = v;
    scopes_ = {&globals_, &root_};
  }

  std::string run(const Body& body) {
    std::string out;
    exec_body(body, out);
    return out;
  }

 private:
  [[noreturn]] void error_at(const Pos& p, const std::string& msg) const {
    throw PositionedError(o_.name + ":" + std::to_string(p.line) + ":" + std::to_string(p.col) + ": " + msg);
  }

  // One step of the render's budget, the error naming `p`.
  void step(const Pos& p) const {
    try {
      charge_steps(1);
    } catch (const Error& e) {
      error_at(p, e.what());
    }
  }

  struct Depth {
    Interpreter& in;
    Depth(Interpreter& i, const Pos& p) : in(i) {
      if (++in.depth_ > in.limits_.max_depth) {
        --in.depth_;
        in.error_at(p, "nesting too deep (recursion?)");
      }
      try {
        in.step(p);
      } catch (...) {
        --in.depth_;
        throw;
      }
    }
    ~Depth() { --in.depth_; }
  };

  // Appends to the output (or a block's text): counted as built bytes like any string
  // the template makes, so a macro printing a big value in a loop is bounded too.
  static void emit(std::string& out, const std::string& text) {
    charge_string(text.size());
    out += text;
  }
  static void emit(std::string& out, const Value& v) {
    if (v.is_string()) emit(out, v.str());  // no copy
    else emit(out, v.to_str());
  }

  // --- statements --------------------------------------------------------------
  Flow exec_body(const Body& body, std::string& out) {
    for (const auto& s : body) {
      const Flow f = exec(*s, out);
      if (f != Flow::normal) return f;
      if (out.size() > limits_.max_output) error_at(s->pos, "output too large");
    }
    return Flow::normal;
  }

  Flow exec(const Stmt& s, std::string& out) {
    Depth guard(*this, s.pos);
    try {
      return exec_inner(s, out);
    } catch (const PositionedError&) {
      throw;
    } catch (const Error& e) {
      error_at(s.pos, e.what());
    }
  }

  Flow exec_inner(const Stmt& s, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::text: emit(out, s.text); return Flow::normal;
      case Stmt::Kind::output: emit(out, eval(*s.expr)); return Flow::normal;
      case Stmt::Kind::if_:
        for (const auto& [cond, body] : s.branches)
          if (eval(*cond).truthy()) return exec_body(body, out);
        return exec_body(s.else_body, out);
      case Stmt::Kind::for_: return exec_for(s, out);
      case Stmt::Kind::set: {
        Value v = eval(*s.expr);
        if (!s.attr.empty()) {
          const Value ns = lookup(s.name);
          if (!ns.is_ns()) error_at(s.pos, "can only assign attributes of a namespace(), not " + object_name(ns));
          ns.ns_set(s.attr, std::move(v));
        } else {
          assign(s.targets, v, *scopes_.back(), s.pos);
        }
        return Flow::normal;
      }
      case Stmt::Kind::set_block: {
        std::string text;
        exec_body(s.body, text);
        (*scopes_.back())[s.targets[0]] = Value(std::move(text));
        return Flow::normal;
      }
      case Stmt::Kind::macro: (*scopes_.back())[s.name] = make_macro(s); return Flow::normal;
      case Stmt::Kind::filter: {
        std::string text;
        exec_body(s.body, text);
        emit(out, eval_filters(*s.expr, Value(std::move(text))));
        return Flow::normal;
      }
      case Stmt::Kind::break_: return Flow::break_;
      case Stmt::Kind::continue_: return Flow::continue_;
      case Stmt::Kind::block: return exec_body(s.body, out);
    }
    return Flow::normal;
  }

  void assign(const std::vector<std::string>& targets, const Value& v, Frame& frame, const Pos& pos) {
    if (targets.size() == 1) {
      frame[targets[0]] = v;
      return;
    }
    std::vector<Value> items = iterate(v);
    if (items.size() != targets.size())
      error_at(pos, std::string(items.size() > targets.size() ? "too many" : "not enough") +
                        " values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                        std::to_string(items.size()) + ")");
    for (size_t i = 0; i < targets.size(); ++i) frame[targets[i]] = items[i];
  }

  Flow exec_for(const Stmt& s, std::string& out) {
    std::vector<Value> items = iterate(eval(*s.expr));
    if (s.cond) {  // {% for x in xs if cond %}: the filter sees the item, not `loop`
      std::vector<Value> kept;
      for (const Value& item : items) {
        Frame f;
        assign(s.targets, item, f, s.pos);
        scopes_.push_back(&f);
        const bool keep = eval(*s.cond).truthy();
        scopes_.pop_back();
        if (keep) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      Frame f;
      scopes_.push_back(&f);
      exec_body(s.else_body, out);
      scopes_.pop_back();
      return Flow::normal;
    }
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      step(s.pos);
      Frame f;
      assign(s.targets, items[static_cast<size_t>(i)], f, s.pos);
      f["loop"] = Value::dict({
          {"index", Value(i + 1)},
          {"index0", Value(i)},
          {"revindex", Value(n - i)},
          {"revindex0", Value(n - i - 1)},
          {"first", Value(i == 0)},
          {"last", Value(i == n - 1)},
          {"length", Value(n)},
          {"depth", Value(1)},
          {"depth0", Value(0)},
          {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item")},
          {"nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item")},
          {"cycle", Value::callable("cycle", [i](CallArgs& a) -> Value {
             if (a.args.empty()) fail("no items for cycling given");
             return a.args[static_cast<size_t>(i) % a.args.size()];
           })},
      });
      scopes_.push_back(&f);
      Flow flow;
      try {
        flow = exec_body(s.body, out);
      } catch (...) {
        scopes_.pop_back();
        throw;
      }
      scopes_.pop_back();
      if (flow == Flow::break_) break;
    }
    return Flow::normal;
  }

  Value make_macro(const Stmt& s) {
    const Stmt* m = &s;
    return Value::callable(s.name, [this, m](CallArgs& a) -> Value {
      if (a.args.size() > m->params.size())
        fail("macro '", m->name, "' takes not more than ", m->params.size(), " argument(s)");
      Frame f;
      std::vector<Frame*> saved = {&globals_, &root_, &f};
      std::swap(saved, scopes_);
      std::string out;
      try {
        for (const auto& [k, v] : a.kwargs) {
          bool known = false;
          for (const auto& p : m->params) known = known || p.first == k;
          if (!known) fail("macro '", m->name, "' takes no keyword argument '", k, "'");
        }
        for (size_t i = 0; i < m->params.size(); ++i) {
          const auto& [name, def] = m->params[i];
          Value v = Value::undefined("'" + name + "' is undefined");
          bool given = false;
          if (i < a.args.size()) v = a.args[i], given = true;
          for (const auto& [k, kv] : a.kwargs)
            if (k == name) v = kv, given = true;
          if (!given && def) v = eval(*def);
          f[name] = v;
        }
        exec_body(m->body, out);
      } catch (...) {
        std::swap(saved, scopes_);
        throw;
      }
      std::swap(saved, scopes_);
      return Value(std::move(out));
    });
  }

  // --- expressions -------------------------------------------------------------
  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = (*it)->find(name);
      if (f != (*it)->end()) return f->second;
    }
    return Value::undefined("'" + name + "' is undefined");
  }

  Value eval(const Expr& e) {
    Depth guard(*this, e.pos);
    try {
      return eval_inner(e);
    } catch (const PositionedError&) {
      throw;
    } catch (const Error& err) {
      error_at(e.pos, err.what());
    }
  }

  CallArgs eval_args(const Expr& e) {
    CallArgs a;
    for (const auto& x : e.items) a.args.push_back(eval(*x));
    for (const auto& [k, x] : e.kwargs) a.kwargs.emplace_back(k, eval(*x));
    return a;
  }

  // A filter chain applied to `input` where the innermost operand is absent
  // ({% filter %} blocks).
  Value eval_filters(const Expr& e, const Value& input) {
    Value x = e.a ? eval_filters(*e.a, input) : input;
    CallArgs a = eval_args(e);
    return apply_filter(e.name, x, a);
  }

  Value eval_inner(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::literal: return e.value;
      case Expr::Kind::name: return lookup(e.name);
      case Expr::Kind::list: {
        std::vector<Value> items;
        for (const auto& x : e.items) items.push_back(eval(*x));
        return Value::list(std::move(items), e.tuple);
      }
      case Expr::Kind::dict: {
        DictItems items;
        for (size_t i = 0; i < e.items.size(); ++i) {
          const Value k = eval(*e.keys[i]);
          if (!k.is_string()) fail("dict keys must be strings here, not ", k.type_name());
          Value v = eval(*e.items[i]);
          // The key is copied and compared with every earlier key.
          charge_string(k.str().size());
          charge_scan(saturating_mul(items.size(), k.str().size()));
          charge_steps(items.size() / 8);
          bool replaced = false;
          for (auto& [key, old] : items)
            if (key == k.str()) old = v, replaced = true;
          if (!replaced) items.emplace_back(k.str(), std::move(v));
        }
        return Value::dict(std::move(items));
      }
      case Expr::Kind::attr: return get_attr(eval(*e.a), e.name);
      case Expr::Kind::item: return get_item(eval(*e.a), eval(*e.b));
      case Expr::Kind::slice: {
        const Value obj = eval(*e.a);
        Value parts[3] = {Value::none(), Value::none(), Value::none()};
        for (size_t i = 0; i < 3; ++i)
          if (e.items[i]) parts[i] = eval(*e.items[i]);
        return get_slice(obj, parts[0], parts[1], parts[2]);
      }
      case Expr::Kind::call: {
        const Value fn = eval(*e.a);
        CallArgs a = eval_args(e);
        if (fn.is_undefined()) fail_undefined(fn);
        if (!fn.is_callable()) fail(object_name(fn), " is not callable");
        return fn.call(a);
      }
      case Expr::Kind::filter: {
        const Value x = eval(*e.a);
        CallArgs a = eval_args(e);
        return apply_filter(e.name, x, a);
      }
      case Expr::Kind::test: {
        const Value x = eval(*e.a);
        CallArgs a = eval_args(e);
        return Value(apply_test(e.name, x, a) != e.negated);
      }
      case Expr::Kind::unary: {
        const Value x = eval(*e.a);
        if (e.name == "not") return Value(!x.truthy());
        if (e.name == "-") return negate(x);
        if (!x.is_number()) {
          if (x.is_undefined()) fail_undefined(x);
          fail("bad operand type for unary +: '", x.type_name(), "'");
        }
        return x.is_real() ? x : Value(x.as_int());
      }
      case Expr::Kind::binary: {
        Value a = eval(*e.a);
        if (e.name == "and") return a.truthy() ? eval(*e.b) : a;
        if (e.name == "or") return a.truthy() ? a : eval(*e.b);
        return binary_op(e.name, a, eval(*e.b));
      }
      case Expr::Kind::compare: {
        Value left = eval(*e.a);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.items[i]);
          const std::string& op = e.ops[i];
          bool ok;
          if (op == "==") ok = equal(left, right);
          else if (op == "!=") ok = !equal(left, right);
          else if (op == "in") ok = contains(right, left);
          else if (op == "not in") ok = !contains(right, left);
          else {
            if (left.is_undefined()) fail_undefined(left);
            if (right.is_undefined()) fail_undefined(right);
            const int c = compare(left, right);
            ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
          }
          if (!ok) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case Expr::Kind::cond:
        if (eval(*e.b).truthy()) return eval(*e.a);
        return e.c ? eval(*e.c) : Value::undefined("the inline if's condition was false and it has no else");
    }
    return Value();
  }

  const TemplateOptions& o_;
  const RenderLimits& limits_;
  Frame globals_, root_;
  std::vector<Frame*> scopes_;
  int depth_ = 0;
};

}  // namespace

std::string run_template(const Body& body, const DictItems& context, const TemplateOptions& options,
                         const RenderLimits& limits) {
  const RenderBudget budget(limits);  // outlives the interpreter: it empties the namespaces last
  return Interpreter(context, options, limits).run(body);
}

}  // namespace squeeze::chat
