// chat/value.cpp — Python semantics of template values: str/repr, ==, <, truthiness,
// json.dumps, and UTF-8 code points.
#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/budget.h"
#include "core/error.h"

namespace squeeze::chat {
namespace {

[[noreturn]] void too_deep() { fail("value nested too deeply (over ", kMaxValueDepth, " levels)"); }

// The depth of a container holding values of depth `inner`, refused past the limit.
int outer_depth(int inner) {
  if (inner + 1 > kMaxValueDepth) too_deep();
  return inner + 1;
}

}  // namespace

const std::string& Value::str() const {
  static const std::string empty;
  return s_ ? *s_ : empty;
}

Value Value::list(std::vector<Value> items, bool tuple) {
  int inner = 0;
  for (const Value& x : items) inner = std::max(inner, x.depth_);
  Value v = with(Kind::list);
  v.depth_ = outer_depth(inner);
  v.list_ = std::make_shared<const ListData>(ListData{std::move(items), tuple});
  return v;
}

Value Value::dict(DictItems items) {
  int inner = 0;
  for (const auto& [k, x] : items) inner = std::max(inner, x.depth_);
  Value v = with(Kind::dict);
  v.depth_ = outer_depth(inner);
  v.dict_ = std::make_shared<DictItems>(std::move(items));
  return v;
}

Value Value::ns(DictItems items) {
  Value v = with(Kind::ns);
  v.depth_ = 1;  // see depth()
  v.dict_ = std::make_shared<DictItems>(std::move(items));
  keep_namespace(v.dict_);  // emptied when the render ends (chat/budget.h)
  return v;
}

Value Value::callable(std::string name, Function fn, const Value* holds) {
  Value v = with(Kind::callable);
  v.depth_ = holds ? outer_depth(holds->depth_) : 0;
  v.s_ = std::make_shared<const std::string>(std::move(name));
  v.fn_ = std::make_shared<const Function>(std::move(fn));
  return v;
}

const Value* Value::find(std::string_view key) const {
  if (kind_ != Kind::dict && kind_ != Kind::ns) return nullptr;
  charge_steps(1 + dict_->size() / 8);  // a linear search: a look-up in a loop must not be free
  for (const auto& [k, v] : *dict_)
    if (k == key) return &v;
  return nullptr;
}

void Value::ns_set(const std::string& key, Value v) const {
  charge_steps(1 + dict_->size() / 8);  // a linear search, as find()
  for (auto& [k, old] : *dict_)
    if (k == key) {
      old = std::move(v);
      return;
    }
  dict_->emplace_back(key, std::move(v));
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::undefined:
    case Kind::none: return false;
    case Kind::boolean:
    case Kind::integer: return i_ != 0;
    case Kind::real: return d_ != 0;
    case Kind::string: return !str().empty();
    case Kind::list: return !list_->items.empty();
    case Kind::dict: return !dict_->empty();
    case Kind::ns:
    case Kind::callable: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::undefined: return "Undefined";
    case Kind::none: return "NoneType";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::real: return "float";
    case Kind::string: return "str";
    case Kind::list: return list_->tuple ? "tuple" : "list";
    case Kind::dict: return "dict";
    case Kind::ns: return "Namespace";
    case Kind::callable: return "function";
  }
  return "?";
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // "-1.2345e+02": the shortest digits that read back
  std::string sign;
  if (sci[0] == '-') sign = "-", sci.erase(0, 1);
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::stoi(sci.substr(e + 1));
  const int decpt = exp10 + 1;  // value = 0.<digits> * 10^decpt
  const int n = static_cast<int>(digits.size());
  std::string out;
  // Python's repr switches to exponent form outside 1e-4 <= |x| < 1e16.
  if (decpt <= -4 || decpt > 16) {
    out = digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += eb;
  } else if (decpt <= 0) {
    out = "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
  } else if (decpt >= n) {
    out = digits + std::string(static_cast<size_t>(decpt - n), '0') + ".0";
  } else {
    out = digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
  }
  return sign + out;
}

namespace {

// Python's repr(str): single quotes unless the text has ' and no ".
void string_repr(std::string& out, const std::string& s) {
  const size_t before = out.size();
  charge_string(s.size() + 2);  // the text itself, before writing it; escapes after
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  out += q;
  for (char32_t cp : utf8_decode(s)) {
    char buf[16];
    if (cp == static_cast<char32_t>(q) || cp == '\\') out += '\\', out += static_cast<char>(cp);
    else if (cp == '\n') out += "\\n";
    else if (cp == '\r') out += "\\r";
    else if (cp == '\t') out += "\\t";
    else if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      utf8_append(out, cp);
    }
  }
  out += q;
  charge_string(out.size() - before - std::min(out.size() - before, s.size() + 2));
}

// repr() written into `out`, `depth` containers down: each element a step, the text
// charged as built (a list holding one 50 MB string 1000 times is not printed).
void repr_into(std::string& out, const Value& v, int depth) {
  if (depth > kMaxValueDepth) too_deep();
  charge_steps(1);
  switch (v.kind()) {
    case Value::Kind::string: string_repr(out, v.str()); return;
    case Value::Kind::list: {
      const auto& items = v.items();
      out += v.is_tuple() ? "(" : "[";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        repr_into(out, items[i], depth + 1);
      }
      if (v.is_tuple() && items.size() == 1) out += ",";
      out += v.is_tuple() ? ")" : "]";
      return;
    }
    case Value::Kind::dict:
    case Value::Kind::ns: {
      out += "{";
      for (size_t i = 0; i < v.entries().size(); ++i) {
        if (i) out += ", ";
        string_repr(out, v.entries()[i].first);
        out += ": ";
        repr_into(out, v.entries()[i].second, depth + 1);
      }
      out += "}";
      return;
    }
    default: out += v.to_str();
  }
}

}  // namespace

std::string Value::repr() const {
  std::string out;
  repr_into(out, *this, 0);
  return out;
}

std::string Value::to_str() const {
  switch (kind_) {
    case Kind::undefined: return "";
    case Kind::none: return "None";
    case Kind::boolean: return i_ ? "True" : "False";
    case Kind::integer: return std::to_string(i_);
    case Kind::real: return float_repr(d_);
    case Kind::string: return str();
    case Kind::list:
    case Kind::dict: return repr();
    case Kind::ns: return "<Namespace " + repr() + ">";
    case Kind::callable: return "<function " + str() + ">";
  }
  return "";
}

namespace {

bool equal_at(const Value& a, const Value& b, int depth) {
  using K = Value::Kind;
  if (depth > kMaxValueDepth) too_deep();
  charge_steps(1);
  if (a.is_number() && b.is_number()) {
    if (a.is_real() || b.is_real()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) {
    // A list never equals a tuple in Python; every other mixed pair differs too.
    return false;
  }
  switch (a.kind()) {
    case K::undefined:
    case K::none: return true;
    case K::string:
      charge_scan(std::min(a.str().size(), b.str().size()));
      return a.str() == b.str();
    case K::list: {
      if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i)
        if (!equal_at(a.items()[i], b.items()[i], depth + 1)) return false;
      return true;
    }
    case K::dict:
    case K::ns: {
      if (a.entries().size() != b.entries().size()) return false;
      for (const auto& [k, v] : a.entries()) {
        const Value* o = b.find(k);
        if (!o || !equal_at(v, *o, depth + 1)) return false;
      }
      return true;
    }
    case K::callable: return &a == &b;
    default: return false;
  }
}

int compare_at(const Value& a, const Value& b, int depth) {
  if (depth > kMaxValueDepth) too_deep();
  charge_steps(1);
  if (a.is_number() && b.is_number()) {
    if (a.is_real() || b.is_real()) {
      const double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    charge_scan(std::min(a.str().size(), b.str().size()));
    const int c = a.str().compare(b.str());  // UTF-8 byte order is code point order
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equal_at(x[i], y[i], depth + 1)) continue;
      return compare_at(x[i], y[i], depth + 1);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  fail("'<' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'");
}

}  // namespace

bool equal(const Value& a, const Value& b) { return equal_at(a, b, 0); }

int compare(const Value& a, const Value& b) { return compare_at(a, b, 0); }

namespace {

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  const size_t before = out.size();
  charge_string(s.size() + 2);  // the text itself, before writing it; escapes after
  out += '"';
  char buf[16];
  for (char32_t cp : utf8_decode(s)) {
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp < 0x20 || (ensure_ascii && cp > 0x7e)) {
      if (cp > 0xffff) {  // ensure_ascii writes astral code points as a surrogate pair
        const char32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xd800 + (v >> 10)),
                      static_cast<unsigned>(0xdc00 + (v & 0x3ff)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      }
      out += buf;
    } else {
      utf8_append(out, cp);
    }
  }
  out += '"';
  charge_string(out.size() - before - std::min(out.size() - before, s.size() + 2));
}

void json_value(std::string& out, const Value& v, const JsonOptions& o, int depth) {
  if (depth > kMaxValueDepth) too_deep();
  charge_steps(1);
  const std::string item_sep = o.item_separator ? *o.item_separator : (o.indent >= 0 ? "," : ", ");
  // What may precede this value in its container (separators and indentation), charged
  // here once per element: small, but not for separators=(big, big) or a deep indent.
  charge_string(item_sep.size() + o.key_separator.size() + 2 +
                (o.indent > 0 ? static_cast<size_t>(o.indent) * static_cast<size_t>(depth + 1) : 0));
  auto newline = [&](int level) {
    if (o.indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(o.indent) * static_cast<size_t>(level), ' ');
  };
  switch (v.kind()) {
    case Value::Kind::none: out += "null"; return;
    case Value::Kind::boolean: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::integer: out += std::to_string(v.as_int()); return;
    case Value::Kind::real: {
      const double d = v.as_double();
      if (std::isnan(d)) out += "NaN";
      else if (std::isinf(d)) out += d > 0 ? "Infinity" : "-Infinity";
      else out += float_repr(d);
      return;
    }
    case Value::Kind::string: json_string(out, v.str(), o.ensure_ascii); return;
    case Value::Kind::list: {
      if (v.items().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        json_value(out, v.items()[i], o, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::dict: {
      if (v.entries().empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.entries()) entries.push_back(&e);
      if (o.sort_keys)
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        json_string(out, entries[i]->first, o.ensure_ascii);
        out += o.key_separator;
        json_value(out, entries[i]->second, o, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    default: fail("Object of type ", v.type_name(), " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonOptions& options) {
  std::string out;
  json_value(out, v, options, 0);
  return out;
}

namespace {

Value from_json_at(const Json& j, int depth) {
  if (depth > kMaxValueDepth) fail("the context is nested deeper than ", kMaxValueDepth, " levels");
  switch (j.type()) {
    case Json::value_t::null: return Value::none();
    case Json::value_t::boolean: return Value(j.get<bool>());
    case Json::value_t::number_integer: return Value(j.get<int64_t>());
    case Json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) fail("JSON integer ", u, " does not fit in 64 bits");
      return Value(static_cast<int64_t>(u));
    }
    case Json::value_t::number_float: return Value(j.get<double>());
    case Json::value_t::string: return Value(j.get<std::string>());
    case Json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
      return Value::list(std::move(items));
    }
    case Json::value_t::object: {
      DictItems items;
      for (auto it = j.begin(); it != j.end(); ++it) items.emplace_back(it.key(), from_json_at(it.value(), depth + 1));
      return Value::dict(std::move(items));
    }
    default: fail("unsupported JSON value");
  }
}

}  // namespace

Value from_json(const Json& j) { return from_json_at(j, 0); }

// Not text::append_utf8: that one refuses lone surrogates, while a Python string (and so
// a template literal such as "\ud800") may hold one; they are encoded as-is, as WTF-8.
void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

std::vector<char32_t> utf8_decode(std::string_view s) {
  // Every use of a string by code points ([i], slices, strip, upper, repr, ...) decodes
  // all of it into 4 bytes per byte, and its caller then works code point by code
  // point: ~16 times the cost of a plain scan, as measured.
  charge_steps(s.size() / kDecodeBytesPerStep);
  std::vector<char32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1f) : len == 3 ? (b & 0x0f) : (b & 0x07);
    bool ok = len > 0 && i + static_cast<size_t>(len) <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((c & 0xc0) != 0x80) ok = false;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (!ok) {
      out.push_back(0xfffd);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += static_cast<size_t>(len);
  }
  return out;
}

std::string utf8_encode(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) utf8_append(out, cp);
  return out;
}

// Counted without decoding into a vector: what utf8_decode would give, U+FFFD per bad byte.
size_t utf8_length(std::string_view s) {
  charge_scan(s.size());
  size_t n = 0, i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    i += ok ? len : 1;
    ++n;
  }
  return n;
}

}  // namespace squeeze::chat
