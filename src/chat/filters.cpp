// chat/filters.cpp — jinja2's filters and tests that chat templates use, and the
// globals transformers provides (range, namespace, dict, raise_exception,
// strftime_now). `tojson` is transformers' override: json.dumps(x,
// ensure_ascii=False, indent=None, separators=None, sort_keys=False), not jinja2's
// HTML-safe one (which would write < > & ' as \u003c ...). Each charges the render's
// budget (chat/budget.h) for its work and, before building, for what it builds.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "chat/budget.h"
#include "chat/builtins.h"
#include "core/error.h"

namespace squeeze::chat {
namespace {

int64_t need_int(const Value& v, const char* what) {
  if (!v.is_int() && !v.is_bool()) fail(what, " must be an integer, not ", v.type_name());
  return v.as_int();
}

Value tojson(const Value& x, const CallArgs& a) {
  JsonOptions o;
  o.ensure_ascii = arg(a, 0, "ensure_ascii", Value(false)).truthy();
  const Value indent = arg(a, 1, "indent", Value::none());
  if (indent.is_string()) fail("tojson: indent as a string is not supported");
  if (!indent.is_none()) o.indent = static_cast<int>(std::clamp<int64_t>(need_int(indent, "indent"), 0, 64));
  const Value seps = arg(a, 2, "separators", Value::none());
  if (!seps.is_none()) {
    if (!seps.is_list() || seps.items().size() != 2 || !seps.items()[0].is_string() || !seps.items()[1].is_string())
      fail("tojson: separators must be a pair of strings");
    o.item_separator = seps.items()[0].str();
    o.key_separator = seps.items()[1].str();
  }
  o.sort_keys = arg(a, 3, "sort_keys", Value(false)).truthy();
  return to_json(x, o);
}

Value do_int(const Value& v, const Value& def) {
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_real()) return std::isfinite(v.as_double()) ? Value(static_cast<int64_t>(v.as_double())) : def;
  if (v.is_string()) {
    const std::string s = py_strip(v.str(), Value::none(), true, true);
    try {
      size_t used = 0;
      const long long i = std::stoll(s, &used);
      if (used == s.size()) return Value(static_cast<int64_t>(i));
      const double d = std::stod(s, &used);
      if (used == s.size() && std::isfinite(d)) return Value(static_cast<int64_t>(d));
    } catch (const std::exception&) {
    }
  }
  return def;
}

// jinja2's title filter: upper-case the first letter after - ( { [ < or whitespace.
std::string title_filter(const std::string& s) {
  will_build_string(s.size());
  std::string out;
  bool start = true;
  for (char32_t c : utf8_decode(s)) {
    const bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || c == ' ' || (c >= 9 && c <= 13);
    if (sep) utf8_append(out, c);
    else utf8_append(out, start ? (c >= 'a' && c <= 'z' ? c - 32 : c) : (c >= 'A' && c <= 'Z' ? c + 32 : c));
    start = sep;
  }
  return out;
}

std::string indent_filter(const std::string& s0, const Value& width, bool first, bool blank) {
  const std::string ind = width.is_string() ? width.str() : std::string(static_cast<size_t>(std::clamp<int64_t>(need_int(width, "indent width"), 0, 256)), ' ');
  // Every line gets `ind` (a width string may be long): sized before building.
  const size_t n_lines = static_cast<size_t>(std::count(s0.begin(), s0.end(), '\n')) + 1;
  charge_scan(s0.size());
  charge_steps(n_lines);  // a string per line
  will_build_string(s0.size() + saturating_mul(n_lines + 1, ind.size()));
  std::vector<std::string> lines;
  const std::string s = s0 + "\n";  // jinja2's quirk for splitlines
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t f = s.find('\n', pos);
    lines.push_back(s.substr(pos, f - pos));
    pos = f + 1;
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += '\n';
    if (i > 0 && (blank || !lines[i].empty())) out += ind;
    out += lines[i];
  }
  if (first) out = ind + out;
  return out;
}

// Attribute paths like "function.name" (jinja2 make_attrgetter): items, then attributes.
Value attr_path(const Value& v, const Value& attribute) {
  Value cur = v;
  if (attribute.is_int()) return get_item(cur, attribute);
  const std::string& path = attribute.str();
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = digits ? get_item(cur, Value(static_cast<int64_t>(std::stoll(part)))) : get_item(cur, Value(part));
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return cur;
}

// select / reject / selectattr / rejectattr: args[skip] is the test name, the rest its args.
Value select(const Value& seq, const CallArgs& a, bool by_attr, bool keep) {
  size_t next = 0;
  Value attribute;
  if (by_attr) attribute = arg(a, next++, "attribute");
  const Value test = arg(a, next++, "test", Value::none());
  CallArgs targs;
  for (size_t i = next; i < a.args.size(); ++i) targs.args.push_back(a.args[i]);
  std::vector<Value> out;
  for (const Value& item : iterate(seq)) {
    const Value v = by_attr ? attr_path(item, attribute) : item;
    const bool ok = test.is_none() ? v.truthy() : apply_test(test.str(), v, targs);
    if (ok == keep) {
      charge_items(1);
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) {
    charge_scan(v.str().size());  // a lowered copy per comparison
    std::string s = v.str();
    for (char& c : s)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return s;
  }
  return v;
}

std::string html_escape(const std::string& s) {
  charge_steps(s.size() / kDecodeBytesPerStep);  // byte by byte, twice
  size_t size = s.size();
  for (char c : s) size += c == '&' ? 4 : c == '<' || c == '>' ? 3 : c == '"' || c == '\'' ? 4 : 0;
  will_build_string(size);
  std::string out;
  out.reserve(size);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

Value apply_filter(const std::string& f, const Value& x, CallArgs& a) {
  if (f == "tojson") return tojson(x, a);
  if (f == "trim") return py_strip(x.to_str(), arg(a, 0, "chars", Value::none()), true, true);
  if (f == "string") return x.is_string() ? x : Value(x.to_str());
  if (f == "safe") return x;
  if (f == "escape" || f == "e") return html_escape(x.to_str());
  if (f == "lower" || f == "upper" || f == "capitalize") {
    CallArgs none;
    return get_attr(x.is_string() ? x : Value(x.to_str()), f).call(none);
  }
  if (f == "title") return title_filter(x.to_str());
  if (f == "replace") {
    CallArgs r;
    r.args = {arg(a, 0, "old"), arg(a, 1, "new"), arg(a, 2, "count", Value(-1))};
    return get_attr(Value(x.to_str()), "replace").call(r);
  }
  if (f == "indent")
    return indent_filter(x.to_str(), arg(a, 0, "width", Value(4)), arg(a, 1, "first", Value(false)).truthy(),
                         arg(a, 2, "blank", Value(false)).truthy());
  if (f == "length" || f == "count") {
    if (x.is_string()) return Value(static_cast<int64_t>(utf8_length(x.str())));
    if (x.is_list()) return Value(static_cast<int64_t>(x.items().size()));
    if (x.is_dict()) return Value(static_cast<int64_t>(x.entries().size()));
    if (x.is_undefined()) return Value(0);
    fail("object of type '", x.type_name(), "' has no len()");
  }
  if (f == "default" || f == "d") {
    const bool boolean = arg(a, 1, "boolean", Value(false)).truthy();
    return (x.is_undefined() || (boolean && !x.truthy())) ? arg(a, 0, "default_value", Value("")) : x;
  }
  if (f == "first" || f == "last") {
    if (x.is_undefined()) fail_undefined(x);
    std::vector<Value> items = x.is_list() ? std::vector<Value>() : iterate(x);
    const std::vector<Value>& seq = x.is_list() ? x.items() : items;  // a list is not copied
    if (seq.empty()) return Value::undefined("No " + f + " item, sequence was empty.");
    return f == "first" ? seq.front() : seq.back();
  }
  if (f == "int") return do_int(x, arg(a, 0, "default", Value(0)));
  if (f == "float") {
    if (x.is_number()) return Value(x.as_double());
    if (x.is_string()) {
      try {
        size_t used = 0;
        const std::string s = py_strip(x.str(), Value::none(), true, true);
        const double d = std::stod(s, &used);
        if (used == s.size()) return Value(d);
      } catch (const std::exception&) {
      }
    }
    return arg(a, 0, "default", Value(0.0));
  }
  if (f == "abs") {
    if (x.is_real()) return std::fabs(x.as_double());
    const int64_t i = need_int(x, "abs()");
    if (i == INT64_MIN) fail("integer overflow");
    return Value(i < 0 ? -i : i);
  }
  if (f == "round") {
    const double p = std::pow(10.0, static_cast<double>(need_int(arg(a, 0, "precision", Value(0)), "precision")));
    const std::string method = arg(a, 1, "method", Value("common")).to_str();
    const double v = x.as_double() * p;
    const double r = method == "ceil" ? std::ceil(v) : method == "floor" ? std::floor(v) : std::nearbyint(v);  // Python's round(): ties to even
    return r / p;
  }
  if (f == "list") {
    if (x.is_list()) will_build_items(x.items().size());  // strings and dicts: iterate() charges
    return Value::list(iterate(x));
  }
  if (f == "items") {
    if (x.is_undefined()) return Value::list({});
    if (!x.is_dict()) fail("items filter: expected a mapping, got ", x.type_name());
    CallArgs none;
    return get_attr(x, "items").call(none);
  }
  if (f == "join") {
    const Value attribute = arg(a, 1, "attribute", Value::none());
    const std::string sep = arg(a, 0, "d", Value("")).to_str();
    std::string out;
    bool first = true;
    for (const Value& v : iterate(x)) {
      const Value item = attribute.is_none() ? v : attr_path(v, attribute);
      const std::string text = item.is_string() ? std::string() : item.to_str();
      const std::string& piece = item.is_string() ? item.str() : text;
      const size_t add = (first ? 0 : sep.size()) + piece.size();
      check_size(out.size() + add);
      charge_string(add);
      if (!first) out += sep;
      first = false;
      out += piece;
    }
    return out;
  }
  if (f == "reverse") {
    if (x.is_string()) {
      will_build_string(x.str().size());
      auto cps = utf8_decode(x.str());
      std::reverse(cps.begin(), cps.end());
      return utf8_encode(cps);
    }
    if (x.is_list()) will_build_items(x.items().size());
    std::vector<Value> items = iterate(x);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (f == "unique") {
    std::vector<Value> out;
    for (const Value& v : iterate(x))
      if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return equal(sort_key(o, false), sort_key(v, false)); })) {
        charge_items(1);
        out.push_back(v);
      }
    return Value::list(std::move(out));
  }
  if (f == "sort" || f == "min" || f == "max") {
    const bool sort = f == "sort";
    const bool reverse = sort && arg(a, 0, "reverse", Value(false)).truthy();
    const bool cs = arg(a, sort ? 1 : 0, "case_sensitive", Value(false)).truthy();
    const Value attribute = arg(a, sort ? 2 : 1, "attribute", Value::none());
    if (sort && x.is_list()) will_build_items(x.items().size());
    std::vector<Value> items = iterate(x);
    auto key = [&](const Value& v) { return sort_key(attribute.is_none() ? v : attr_path(v, attribute), cs); };
    std::stable_sort(items.begin(), items.end(), [&](const Value& p, const Value& q) {
      return reverse ? compare(key(q), key(p)) < 0 : compare(key(p), key(q)) < 0;
    });
    if (sort) return Value::list(std::move(items));
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    return f == "min" ? items.front() : items.back();
  }
  if (f == "sum") {
    const Value attribute = arg(a, 0, "attribute", Value::none());
    Value total = arg(a, 1, "start", Value(0));
    for (const Value& v : iterate(x)) total = binary_op("+", total, attribute.is_none() ? v : attr_path(v, attribute));
    return total;
  }
  if (f == "map") {
    std::vector<Value> out;
    const Value attribute = arg(a, 99, "attribute", Value::none());
    if (!attribute.is_none()) {
      const Value def = arg(a, 99, "default", Value());
      for (const Value& v : iterate(x)) {
        Value r = attr_path(v, attribute);
        charge_items(1);
        out.push_back(r.is_undefined() && !def.is_undefined() ? def : r);
      }
      return Value::list(std::move(out));
    }
    if (a.args.empty()) fail("map: give a filter name or attribute=");
    const std::string name = a.args[0].to_str();
    CallArgs rest;
    rest.args.assign(a.args.begin() + 1, a.args.end());
    rest.kwargs = a.kwargs;
    for (const Value& v : iterate(x)) {
      Value r = apply_filter(name, v, rest);
      charge_items(1);
      out.push_back(std::move(r));
    }
    return Value::list(std::move(out));
  }
  if (f == "select" || f == "reject") return select(x, a, false, f == "select");
  if (f == "selectattr" || f == "rejectattr") return select(x, a, true, f == "selectattr");
  if (f == "attr") return get_attr(x, arg(a, 0, "name").to_str());
  if (f == "dictsort") {
    if (!x.is_dict()) fail("dictsort: expected a mapping");
    const bool cs = arg(a, 0, "case_sensitive", Value(false)).truthy();
    const bool by_value = arg(a, 1, "by", Value("key")).to_str() == "value";
    const bool reverse = arg(a, 2, "reverse", Value(false)).truthy();
    CallArgs none;
    std::vector<Value> items = get_attr(x, "items").call(none).items();
    std::stable_sort(items.begin(), items.end(), [&](const Value& p, const Value& q) {
      const int c = compare(sort_key(p.items()[by_value], cs), sort_key(q.items()[by_value], cs));
      return reverse ? c > 0 : c < 0;
    });
    return Value::list(std::move(items));
  }
  fail("no filter named '", f, "'");
}

bool apply_test(const std::string& t, const Value& x, CallArgs& a) {
  using K = Value::Kind;
  if (t == "defined") return !x.is_undefined();
  if (t == "undefined") return x.is_undefined();
  if (t == "none") return x.is_none();
  if (t == "string") return x.is_string();
  if (t == "mapping") return x.is_dict();
  if (t == "iterable") return x.is_list() || x.is_dict() || x.is_string() || x.is_undefined();
  if (t == "sequence") return x.is_list() || x.is_dict() || x.is_string() || x.is_undefined();
  if (t == "number") return x.is_number();
  if (t == "integer") return x.is_int();
  if (t == "float") return x.is_real();
  if (t == "boolean") return x.is_bool();
  if (t == "true") return x.is_bool() && x.as_bool();
  if (t == "false") return x.is_bool() && !x.as_bool();
  if (t == "callable") return x.is_callable();
  if (t == "even" || t == "odd") {
    const int64_t i = need_int(x, "even/odd test value");
    return (i % 2 == 0) == (t == "even");
  }
  if (t == "divisibleby") {
    const int64_t n = need_int(arg(a, 0, "num"), "divisibleby argument");
    if (n == 0) fail("integer modulo by zero");
    return need_int(x, "divisibleby value") % n == 0;
  }
  if (t == "lower" || t == "upper") {
    if (!x.is_string()) return false;
    CallArgs none;
    return get_attr(x, t == "lower" ? "islower" : "isupper").call(none).truthy();
  }
  const Value other = arg(a, 0, "b");
  if (t == "equalto" || t == "eq" || t == "==") return equal(x, other);
  if (t == "ne" || t == "!=") return !equal(x, other);
  if (t == "lt" || t == "lessthan" || t == "<") return compare(x, other) < 0;
  if (t == "le" || t == "<=") return compare(x, other) <= 0;
  if (t == "gt" || t == "greaterthan" || t == ">") return compare(x, other) > 0;
  if (t == "ge" || t == ">=") return compare(x, other) >= 0;
  if (t == "in") return contains(other, x);
  if (t == "sameas") {
    // Python `is`: identity is only observable here for None, True and False.
    if (x.kind() != other.kind()) return false;
    return x.kind() == K::none || (x.kind() == K::boolean && x.as_bool() == other.as_bool());
  }
  if (t == "escaped") return false;
  fail("no test named '", t, "'");
}

namespace {

Value range_fn(CallArgs& a) {
  if (!a.kwargs.empty()) fail("range() takes no keyword arguments");
  int64_t start = 0, stop = 0, step = 1;
  if (a.args.size() == 1) {
    stop = need_int(a.args[0], "range() argument");
  } else if (a.args.size() == 2 || a.args.size() == 3) {
    start = need_int(a.args[0], "range() argument");
    stop = need_int(a.args[1], "range() argument");
    if (a.args.size() == 3) step = need_int(a.args[2], "range() argument");
  } else {
    fail("range expected 1 to 3 arguments, got ", a.args.size());
  }
  if (step == 0) fail("range() arg 3 must not be zero");
  const long double count = std::max<long double>(0, std::ceil((static_cast<long double>(stop) - start) / step));
  if (count > kMaxRange)
    fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (", kMaxRange, ").");
  will_build_items(static_cast<size_t>(count));  // range(100000) in a loop is not free
  std::vector<Value> out;
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) out.emplace_back(start + i * step);
  return Value::list(std::move(out));
}

DictItems kwargs_dict(CallArgs& a, const char* fn) {
  DictItems items;
  auto put = [&](const std::string& k, const Value& v) {
    charge_steps(1 + items.size() / 8);  // a linear search for the key, which is copied
    charge_string(k.size());
    charge_items(1);
    for (auto& [key, old] : items)
      if (key == k) {
        old = v;
        return;
      }
    items.emplace_back(k, v);
  };
  if (a.args.size() > 1) fail(fn, " expected at most 1 positional argument");
  if (!a.args.empty()) {
    if (!a.args[0].is_dict()) fail(fn, ": the positional argument must be a mapping");
    for (const auto& [k, v] : a.args[0].entries()) put(k, v);
  }
  for (const auto& [k, v] : a.kwargs) put(k, v);
  return items;
}

}  // namespace

DictItems make_globals(std::optional<int64_t> now) {
  DictItems g;
  g.emplace_back("range", Value::callable("range", range_fn));
  g.emplace_back("namespace", Value::callable("namespace", [](CallArgs& a) { return Value::ns(kwargs_dict(a, "namespace")); }));
  g.emplace_back("dict", Value::callable("dict", [](CallArgs& a) { return Value::dict(kwargs_dict(a, "dict")); }));
  g.emplace_back("raise_exception", Value::callable("raise_exception", [](CallArgs& a) -> Value {
                   fail(arg(a, 0, "message", Value("")).to_str());
                 }));
  g.emplace_back("strftime_now", Value::callable("strftime_now", [now](CallArgs& a) -> Value {
                   const std::string fmt = arg(a, 0, "format").to_str();
                   std::tm tm{};
                   if (now) {
                     const std::time_t t = static_cast<std::time_t>(*now);
                     gmtime_r(&t, &tm);
                   } else {
                     const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
                     localtime_r(&t, &tm);
                   }
                   if (fmt.empty()) return Value("");
                   will_build_string(fmt.size() * 8 + 64);
                   std::string buf(fmt.size() * 8 + 64, '\0');
                   const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
                   if (n == 0) fail("strftime_now: format gives no text or too much: '", fmt, "'");
                   buf.resize(n);
                   return Value(buf);
                 }));
  return g;
}

}  // namespace squeeze::chat
