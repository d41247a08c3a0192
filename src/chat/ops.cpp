// chat/ops.cpp — attribute / item access, Python's str / dict / list methods, slices,
// operators, `in` and iteration, as jinja2 evaluates them in transformers' sandbox.
// Each charges the render's budget (chat/budget.h) for the work it does and, before
// building, for what it builds.
#include <algorithm>
#include <cmath>

#include "chat/budget.h"
#include "chat/builtins.h"
#include "core/error.h"

namespace squeeze::chat {

void fail_undefined(const Value& u) { fail(u.str().empty() ? std::string("value is undefined") : u.str()); }

std::string object_name(const Value& v) {
  if (v.is_none()) return "None";
  return std::string("'") + v.type_name() + " object'";
}

Value arg(const CallArgs& a, size_t i, const char* name, Value def) {
  for (const auto& [k, v] : a.kwargs)
    if (k == name) return v;
  return i < a.args.size() ? a.args[i] : def;
}

void check_size(size_t n) {
  if (n > kMaxBuiltBytes) fail("result too large (over ", kMaxBuiltBytes, " bytes or items)");
}

void will_build_string(size_t bytes) {
  check_size(bytes);
  charge_string(bytes);
}

void will_build_items(size_t n) {
  check_size(n);
  charge_items(n);
}

void charge_search(size_t haystack, size_t needle) {
  // std::string::find compares up to `needle` bytes at each position: charged for the
  // worst case, so ('a' * 10**6) in ('a' * 6 * 10**7) is refused rather than run.
  charge_scan(saturating_mul(haystack >= needle ? haystack - needle + 1 : 0, std::max<size_t>(needle, 1)));
}

namespace {

bool is_py_space(char32_t c) {
  return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

const std::string& need_str(const Value& v, const char* what) {
  if (!v.is_string()) fail(what, " argument must be str, not ", v.type_name());
  return v.str();
}

// Python str.split / rsplit.
// The pieces are no longer than `s` in all, so their bytes are charged up front; each
// piece's element is charged as it is made (',' * 10**7 splits into 10**7 elements).
Value split(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right) {
  std::vector<Value> out;
  will_build_string(s.size());
  if (sep.is_none() || sep.is_undefined()) {
    auto cps = utf8_decode(s);
    std::vector<std::pair<size_t, size_t>> words;  // [begin, end) in code points
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && is_py_space(cps[i])) ++i;
      if (i == cps.size()) break;
      size_t j = i;
      while (j < cps.size() && !is_py_space(cps[j])) ++j;
      charge_items(1);
      words.emplace_back(i, j);
      i = j;
    }
    auto text = [&](size_t b, size_t e) { return utf8_encode(std::vector<char32_t>(cps.begin() + b, cps.begin() + e)); };
    if (maxsplit < 0 || static_cast<size_t>(maxsplit) + 1 >= words.size()) {
      for (auto [b, e] : words) out.emplace_back(text(b, e));
    } else if (!from_right) {
      for (size_t k = 0; k < static_cast<size_t>(maxsplit); ++k) out.emplace_back(text(words[k].first, words[k].second));
      size_t rest = words[static_cast<size_t>(maxsplit)].first, end = cps.size();
      while (end > rest && is_py_space(cps[end - 1])) --end;
      out.emplace_back(text(rest, end));
    } else {
      const size_t keep = words.size() - static_cast<size_t>(maxsplit);
      size_t begin = 0;
      while (begin < cps.size() && is_py_space(cps[begin])) ++begin;
      out.emplace_back(text(begin, words[keep - 1].second));
      for (size_t k = keep; k < words.size(); ++k) out.emplace_back(text(words[k].first, words[k].second));
    }
    return Value::list(std::move(out));
  }
  const std::string& d = need_str(sep, "split()");
  if (d.empty()) fail("empty separator");
  charge_search(s.size(), d.size());
  std::vector<std::string> parts;
  if (!from_right) {
    size_t pos = 0;
    for (int64_t n = 0; maxsplit < 0 || n < maxsplit; ++n) {
      const size_t f = s.find(d, pos);
      if (f == std::string::npos) break;
      charge_items(1);
      parts.push_back(s.substr(pos, f - pos));
      pos = f + d.size();
    }
    parts.push_back(s.substr(pos));
  } else {
    size_t end = s.size();
    for (int64_t n = 0; maxsplit < 0 || n < maxsplit; ++n) {
      if (end < d.size()) break;
      const size_t f = s.rfind(d, end - d.size());
      if (f == std::string::npos) break;
      charge_items(1);
      parts.push_back(s.substr(f + d.size(), end - f - d.size()));
      end = f;
    }
    parts.push_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
  }
  for (auto& p : parts) out.emplace_back(std::move(p));
  return Value::list(std::move(out));
}

// The result's size is known from the number of replacements (counted first), and
// checked before building: a long `to` must not multiply a long `s`.
std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  charge_search(s.size(), from.size());
  if (from.empty()) {  // Python inserts `to` around every code point
    auto cps = utf8_decode(s);
    const size_t n = count < 0 ? cps.size() + 1 : std::min(cps.size() + 1, static_cast<size_t>(count));
    will_build_string(s.size() + saturating_mul(n, to.size()));
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (i < n) out += to;
      if (i < cps.size()) utf8_append(out, cps[i]);
    }
    return out;
  }
  size_t n = 0;
  for (size_t f = s.find(from); f != std::string::npos && (count < 0 || n < static_cast<size_t>(count));
       f = s.find(from, f + from.size()))
    ++n;
  charge_steps(n);  // an append per replacement
  will_build_string(s.size() - n * from.size() + saturating_mul(n, to.size()));
  size_t pos = 0;
  for (size_t k = 0; k < n; ++k) {
    const size_t f = s.find(from, pos);
    out.append(s, pos, f - pos);
    out += to;
    pos = f + from.size();
  }
  out.append(s, pos);
  return out;
}

char32_t lower(char32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
char32_t upper(char32_t c) { return c >= 'a' && c <= 'z' ? c - 32 : c; }
bool is_alpha(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0xc0; }

std::string map_case(const std::string& s, char32_t (*f)(char32_t)) {
  will_build_string(s.size());
  std::string out;
  for (char32_t c : utf8_decode(s)) utf8_append(out, f(c));
  return out;
}

// Python str.title(): a letter after a non-letter is upper-cased, other letters lowered.
std::string py_title(const std::string& s) {
  will_build_string(s.size());
  std::string out;
  bool prev_alpha = false;
  for (char32_t c : utf8_decode(s)) {
    utf8_append(out, prev_alpha ? lower(c) : upper(c));
    prev_alpha = is_alpha(c);
  }
  return out;
}

bool starts_or_ends(const std::string& s, const Value& what, bool starts) {
  auto one = [&](const Value& p) {
    const std::string& x = need_str(p, starts ? "startswith()" : "endswith()");
    if (x.size() > s.size()) return false;
    return starts ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (what.is_list()) {
    charge_steps(what.items().size());
    return std::any_of(what.items().begin(), what.items().end(), one);
  }
  return one(what);
}

Value string_method(const std::string& s, const std::string& m, CallArgs& a) {
  if (m == "upper") return map_case(s, upper);
  if (m == "lower") return map_case(s, lower);
  if (m == "strip") return py_strip(s, arg(a, 0, "chars", Value::none()), true, true);
  if (m == "lstrip") return py_strip(s, arg(a, 0, "chars", Value::none()), true, false);
  if (m == "rstrip") return py_strip(s, arg(a, 0, "chars", Value::none()), false, true);
  if (m == "split" || m == "rsplit") {
    const Value n = arg(a, 1, "maxsplit", Value(-1));
    return split(s, arg(a, 0, "sep", Value::none()), n.is_number() ? n.as_int() : -1, m == "rsplit");
  }
  if (m == "splitlines") {
    std::vector<Value> out;
    will_build_string(s.size());
    size_t pos = 0;
    while (pos < s.size()) {
      charge_items(1);
      const size_t f = s.find('\n', pos);
      if (f == std::string::npos) {
        out.emplace_back(s.substr(pos));
        break;
      }
      out.emplace_back(s.substr(pos, f - pos));
      pos = f + 1;
    }
    return Value::list(std::move(out));
  }
  if (m == "startswith") return starts_or_ends(s, arg(a, 0, "prefix"), true);
  if (m == "endswith") return starts_or_ends(s, arg(a, 0, "suffix"), false);
  if (m == "replace") {
    const Value n = arg(a, 2, "count", Value(-1));
    return replace(s, need_str(arg(a, 0, "old"), "replace()"), need_str(arg(a, 1, "new"), "replace()"),
                   n.is_number() ? n.as_int() : -1);
  }
  if (m == "title") return py_title(s);
  if (m == "capitalize") {
    will_build_string(s.size());
    auto cps = utf8_decode(s);
    for (size_t i = 0; i < cps.size(); ++i) cps[i] = i == 0 ? upper(cps[i]) : lower(cps[i]);
    return utf8_encode(cps);
  }
  if (m == "find" || m == "rfind" || m == "index" || m == "count") {
    const std::string x = need_str(arg(a, 0, "sub"), m.c_str());
    charge_search(s.size(), x.size());
    if (m == "count") {
      if (x.empty()) return Value(static_cast<int64_t>(utf8_length(s) + 1));
      int64_t n = 0;
      for (size_t p = s.find(x); p != std::string::npos; p = s.find(x, p + x.size())) {
        charge_steps(1);
        ++n;
      }
      return Value(n);
    }
    const size_t f = m == "rfind" ? s.rfind(x) : s.find(x);
    if (f == std::string::npos) {
      if (m == "index") fail("substring not found");
      return Value(-1);
    }
    return Value(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, f))));
  }
  if (m == "join") {
    std::string out;
    bool first = true;
    for (const Value& v : iterate(arg(a, 0, "iterable"))) {
      const std::string& piece = need_str(v, "join()");
      const size_t add = (first ? 0 : s.size()) + piece.size();
      check_size(out.size() + add);
      charge_string(add);
      if (!first) out += s;
      first = false;
      out += piece;
    }
    return out;
  }
  auto all = [&](bool (*pred)(char32_t)) {
    charge_scan(s.size());
    auto cps = utf8_decode(s);
    return Value(!cps.empty() && std::all_of(cps.begin(), cps.end(), pred));
  };
  if (m == "isdigit") return all([](char32_t c) { return c >= '0' && c <= '9'; });
  if (m == "isalpha") return all([](char32_t c) { return is_alpha(c); });
  if (m == "isalnum") return all([](char32_t c) { return is_alpha(c) || (c >= '0' && c <= '9'); });
  if (m == "isspace") return all(is_py_space);
  if (m == "islower") return Value(map_case(s, lower) == s && map_case(s, upper) != s);
  if (m == "isupper") return Value(map_case(s, upper) == s && map_case(s, lower) != s);
  fail("'str object' has no attribute '", m, "'");
}

bool is_string_method(const std::string& m) {
  static const char* const names[] = {"upper",      "lower",   "strip",   "lstrip",     "rstrip", "split",
                                      "rsplit",     "splitlines", "startswith", "endswith", "replace", "title",
                                      "capitalize", "find",    "rfind",   "index",      "count",  "join",
                                      "isdigit",    "isalpha", "isalnum", "isspace",    "islower", "isupper"};
  return std::find(std::begin(names), std::end(names), m) != std::end(names);
}

Value dict_items(const Value& d) {
  will_build_items(3 * d.entries().size());  // a pair per entry
  std::vector<Value> out;
  for (const auto& [k, v] : d.entries()) {
    charge_string(k.size());
    out.push_back(Value::list({Value(k), v}, true));
  }
  return Value::list(std::move(out));
}

Value bound(const Value& self, const std::string& name, Value (*fn)(const Value&, const std::string&, CallArgs&)) {
  return Value::callable(name, [self, name, fn](CallArgs& a) { return fn(self, name, a); }, &self);
}

Value dict_method(const Value& d, const std::string& m, CallArgs& a) {
  if (m == "items") return dict_items(d);
  if (m == "keys" || m == "values") {
    will_build_items(d.entries().size());
    std::vector<Value> out;
    for (const auto& [k, v] : d.entries()) {
      if (m == "keys") charge_string(k.size());
      out.push_back(m == "keys" ? Value(k) : v);
    }
    return Value::list(std::move(out));
  }
  // get
  const Value key = arg(a, 0, "key");
  const Value* v = key.is_string() ? d.find(key.str()) : nullptr;
  return v ? *v : arg(a, 1, "default", Value::none());
}

Value list_method(const Value& l, const std::string& m, CallArgs& a) {
  const Value x = arg(a, 0, "value");
  int64_t n = 0, first = -1;
  for (size_t i = 0; i < l.items().size(); ++i)
    if (equal(l.items()[i], x)) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++n;
    }
  if (m == "count") return Value(n);
  if (first < 0) fail(x.repr(), " is not in list");
  return Value(first);
}

// Python's index normalisation for x[i]: negative counts from the end.
std::optional<size_t> index_of(const Value& key, size_t size) {
  if (!key.is_int() && !key.is_bool()) return std::nullopt;
  int64_t i = key.as_int();
  if (i < 0) i += static_cast<int64_t>(size);
  if (i < 0 || i >= static_cast<int64_t>(size)) return std::nullopt;
  return static_cast<size_t>(i);
}

}  // namespace

std::string py_strip(const std::string& s, const Value& chars, bool left, bool right) {
  will_build_string(s.size());
  auto cps = utf8_decode(s);
  std::vector<char32_t> set;
  const bool custom = !(chars.is_none() || chars.is_undefined());
  if (custom) {
    set = utf8_decode(need_str(chars, "strip"));
    charge_scan(chars.str().size());
    std::sort(set.begin(), set.end());  // searched per character stripped: a long set must not cost len * len
  }
  auto strip = [&](char32_t c) { return custom ? std::binary_search(set.begin(), set.end(), c) : is_py_space(c); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip(cps[b])) ++b;
  if (right)
    while (e > b && strip(cps[e - 1])) --e;
  return utf8_encode(std::vector<char32_t>(cps.begin() + b, cps.begin() + e));
}

Value get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::undefined: fail_undefined(obj);
    case Value::Kind::dict:
      if (name == "items" || name == "keys" || name == "values" || name == "get") return bound(obj, name, dict_method);
      if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" || name == "clear")
        fail("access to attribute '", name, "' of 'dict' object is unsafe.");
      if (const Value* v = obj.find(name)) return *v;
      break;
    case Value::Kind::ns:
      if (const Value* v = obj.find(name)) return *v;
      break;
    case Value::Kind::string:
      if (is_string_method(name))
        return bound(obj, name, [](const Value& s, const std::string& m, CallArgs& a) { return string_method(s.str(), m, a); });
      break;
    case Value::Kind::list:
      if (name == "index" || name == "count") return bound(obj, name, list_method);
      if (name == "append" || name == "extend" || name == "insert" || name == "pop" || name == "remove" ||
          name == "reverse" || name == "sort" || name == "clear")
        fail("access to attribute '", name, "' of '", obj.type_name(), "' object is unsafe.");
      break;
    default: break;
  }
  return Value::undefined(object_name(obj) + " has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::undefined: fail_undefined(obj);
    case Value::Kind::dict:
      if (key.is_string()) {
        if (const Value* v = obj.find(key.str())) return *v;
        return get_attr(obj, key.str());
      }
      break;
    case Value::Kind::list:
      if (auto i = index_of(key, obj.items().size())) return obj.items()[*i];
      break;
    case Value::Kind::string: {
      if (!key.is_int() && !key.is_bool()) break;
      charge_scan(obj.str().size());
      auto cps = utf8_decode(obj.str());
      if (auto i = index_of(key, cps.size())) return utf8_encode({cps[*i]});
      break;
    }
    default: break;
  }
  if (key.is_string()) return get_attr(obj, key.str());
  return Value::undefined(object_name(obj) + " has no element " + key.repr());
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step_v) {
  if (obj.is_undefined()) fail_undefined(obj);
  auto opt = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) fail("slice ", what, " must be an integer or None");
    return v.as_int();
  };
  const int64_t step = opt(step_v, "step").value_or(1);
  if (step == 0) fail("slice step cannot be zero");
  std::vector<char32_t> cps;
  const bool str = obj.is_string();
  if (str) {
    charge_scan(obj.str().size());
    cps = utf8_decode(obj.str());
  } else if (!obj.is_list()) {
    fail("'", obj.type_name(), "' object is not subscriptable");
  }
  const int64_t n = static_cast<int64_t>(str ? cps.size() : obj.items().size());
  // Python's slice.indices().
  auto clamp = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v;
    if (x < 0) x += n;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t b = clamp(opt(start, "start"), step > 0 ? 0 : n - 1);
  const int64_t e = clamp(opt(stop, "stop"), step > 0 ? n : -1);
  // Counted first (without b + k * step ever overflowing), charged, then taken.
  const auto span = static_cast<uint64_t>(step > 0 ? std::max<int64_t>(0, e - b) : std::max<int64_t>(0, b - e));
  const uint64_t stride = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  const auto count = static_cast<size_t>(span / stride + (span % stride != 0));
  if (str) will_build_string(count);
  else will_build_items(count);
  std::vector<char32_t> out_cps;
  std::vector<Value> out;
  for (size_t k = 0; k < count; ++k) {
    const auto i = static_cast<size_t>(b + static_cast<int64_t>(k) * step);
    if (str) out_cps.push_back(cps[i]);
    else out.push_back(obj.items()[i]);
  }
  if (str) return utf8_encode(out_cps);
  return Value::list(std::move(out), obj.is_tuple());
}

namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  fail("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '", b.type_name(), "'");
}

// The size is checked before building, without overflowing (len * n wrapped round
// and passed), and nothing is repeated n times when there is nothing to repeat.
Value repeat(const Value& seq, int64_t n) {
  if (n <= 0 || (seq.is_string() ? seq.str().empty() : seq.items().empty()))
    return seq.is_string() ? Value("") : Value::list({}, seq.is_tuple());
  if (seq.is_string()) {
    will_build_string(saturating_mul(seq.str().size(), static_cast<size_t>(n)));
    const size_t total = seq.str().size() * static_cast<size_t>(n);
    std::string out;
    out.reserve(total);
    out = seq.str();
    while (out.size() < total) out.append(out, 0, std::min(out.size(), total - out.size()));  // doubling
    return out;
  }
  will_build_items(saturating_mul(seq.items().size(), static_cast<size_t>(n)));
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return Value::list(std::move(out), seq.is_tuple());
}

// `r` is read after the overflow builtin has written it (a separate statement:
// argument evaluation order would not guarantee that).
#define SQZ_CHECKED(op, x, y)                             \
  [&] {                                                   \
    int64_t r_ = 0;                                       \
    if (op(x, y, &r_)) fail("integer overflow");          \
    return r_;                                            \
  }()

}  // namespace

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string x, y;  // the text of non-strings; strings are read in place
    if (!a.is_string()) x = a.to_str();
    if (!b.is_string()) y = b.to_str();
    const std::string& sa = a.is_string() ? a.str() : x;
    const std::string& sb = b.is_string() ? b.str() : y;
    will_build_string(sa.size() + sb.size());
    std::string s;
    s.reserve(sa.size() + sb.size());
    return Value(std::move(s.append(sa).append(sb)));
  }
  const bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
  const bool nums = a.is_number() && b.is_number();
  if (op == "+") {
    if (ints) return SQZ_CHECKED(__builtin_add_overflow, a.as_int(), b.as_int());
    if (nums) return a.as_double() + b.as_double();
    if (a.is_string() && b.is_string()) {
      will_build_string(a.str().size() + b.str().size());
      return a.str() + b.str();
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      will_build_items(a.items().size() + b.items().size());
      std::vector<Value> out;
      out.reserve(a.items().size() + b.items().size());
      out.insert(out.end(), a.items().begin(), a.items().end());
      out.insert(out.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(out), a.is_tuple());
    }
  } else if (op == "-") {
    if (ints) return SQZ_CHECKED(__builtin_sub_overflow, a.as_int(), b.as_int());
    if (nums) return a.as_double() - b.as_double();
  } else if (op == "*") {
    if (ints) return SQZ_CHECKED(__builtin_mul_overflow, a.as_int(), b.as_int());
    if (nums) return a.as_double() * b.as_double();
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
  } else if (op == "/") {
    if (nums) {
      if (b.as_double() == 0) fail("division by zero");
      return a.as_double() / b.as_double();
    }
  } else if (op == "//" || op == "%") {
    if (ints) {
      const int64_t x = a.as_int(), y = b.as_int();
      if (y == 0) fail(op == "//" ? "integer division or modulo by zero" : "integer modulo by zero");
      if (x == INT64_MIN && y == -1) fail("integer overflow");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;  // Python floors
      return op == "//" ? Value(q) : Value(m);
    }
    if (nums) {
      const double x = a.as_double(), y = b.as_double();
      if (y == 0) fail("float division by zero");
      if (op == "//") return std::floor(x / y);
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return m;
    }
  } else if (op == "**") {
    if (ints && b.as_int() >= 0) {
      int64_t base = a.as_int(), e = b.as_int(), out = 1;
      while (e > 0) {
        if (e & 1) out = SQZ_CHECKED(__builtin_mul_overflow, out, base);
        e >>= 1;
        if (e > 0) base = SQZ_CHECKED(__builtin_mul_overflow, base, base);
      }
      return out;
    }
    if (nums) {
      if (a.as_double() == 0 && b.as_double() < 0) fail("0.0 cannot be raised to a negative power");
      return std::pow(a.as_double(), b.as_double());
    }
  }
  unsupported(op, a, b);
}

Value negate(const Value& a) {
  if (a.is_int() || a.is_bool()) {
    if (a.as_int() == INT64_MIN) fail("integer overflow");
    return Value(-a.as_int());
  }
  if (a.is_real()) return Value(-a.as_double());
  if (a.is_undefined()) fail_undefined(a);
  fail("bad operand type for unary -: '", a.type_name(), "'");
}

bool contains(const Value& c, const Value& item) {
  switch (c.kind()) {
    case Value::Kind::undefined: return false;  // iterates as empty
    case Value::Kind::string:
      if (!item.is_string()) fail("'in <string>' requires string as left operand, not ", item.type_name());
      charge_search(c.str().size(), item.str().size());
      return c.str().find(item.str()) != std::string::npos;
    case Value::Kind::list:
      return std::any_of(c.items().begin(), c.items().end(), [&](const Value& v) { return equal(v, item); });
    case Value::Kind::dict: return item.is_string() && c.find(item.str()) != nullptr;
    default: fail("argument of type '", c.type_name(), "' is not iterable");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined: return {};
    case Value::Kind::list:
      charge_steps(v.items().size());  // a copy of the elements (each cheap: strings are shared)
      return v.items();
    case Value::Kind::dict: {
      will_build_items(v.entries().size());
      std::vector<Value> keys;
      for (const auto& [k, x] : v.entries()) {
        charge_string(k.size());
        keys.emplace_back(k);
      }
      return keys;
    }
    case Value::Kind::string: {
      charge_scan(v.str().size());
      const auto cps = utf8_decode(v.str());
      will_build_items(cps.size());  // one string per character
      std::vector<Value> out;
      out.reserve(cps.size());
      for (char32_t c : cps) out.emplace_back(utf8_encode({c}));
      return out;
    }
    default: fail("'", v.type_name(), "' object is not iterable");
  }
}

}  // namespace squeeze::chat
