// chat/value.h — the values a chat template computes with: Python's types as Jinja
// sees them (undefined, None, bool, int, float, str, list/tuple, dict, namespace,
// callable), with Python's semantics for printing (str / repr), equality, ordering
// and truthiness, and json.dumps for `tojson`.
//
// Lists and dicts are shared and immutable, as in transformers'
// ImmutableSandboxedEnvironment (`.append()` is refused there too); only a
// namespace() can be changed, by `{% set ns.attr = ... %}`. Dict keys are strings
// (every dict a chat template sees comes from JSON or a literal with string keys);
// insertion order is kept, as json.dumps and Python's dict keep it. Strings are
// shared too: copying a Value (every variable look-up does) never copies its text.
//
// A value nests at most kMaxValueDepth deep (lists, dicts, and the object a bound
// method holds), checked as each is built; everything that walks a value (printing,
// ==, <, tojson) is depth-checked as well, for the namespaces that can be changed
// into cycles after being built. So neither walking nor destroying a value can
// overflow the stack.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace squeeze::chat {

class Value;
using Json = nlohmann::ordered_json;

// Far above what chat templates and their JSON contexts use (tool schemas nest ~10
// deep), far below what would strain the stack when walked.
inline constexpr int kMaxValueDepth = 256;

struct ListData {
  std::vector<Value> items;
  bool tuple = false;  // prints as (a, b): what .items() and tuple literals give
};
using DictItems = std::vector<std::pair<std::string, Value>>;

// A call's arguments: positional, then keyword in call order.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};
using Function = std::function<Value(CallArgs&)>;

class Value {
 public:
  enum class Kind { undefined, none, boolean, integer, real, string, list, dict, ns, callable };

  Value() = default;  // undefined
  static Value undefined(std::string name = "") {
    Value v;
    v.s_ = std::make_shared<const std::string>(std::move(name));
    return v;
  }
  static Value none() { return with(Kind::none); }
  Value(bool b) : kind_(Kind::boolean), i_(b) {}
  Value(int v) : kind_(Kind::integer), i_(v) {}
  Value(int64_t v) : kind_(Kind::integer), i_(v) {}
  Value(double v) : kind_(Kind::real), d_(v) {}
  Value(std::string s) : kind_(Kind::string), s_(std::make_shared<const std::string>(std::move(s))) {}
  Value(const char* s) : kind_(Kind::string), s_(std::make_shared<const std::string>(s)) {}
  // These throw squeeze::Error when the result would nest deeper than kMaxValueDepth.
  static Value list(std::vector<Value> items, bool tuple = false);
  static Value dict(DictItems items);
  static Value ns(DictItems items);  // namespace(...): a dict whose entries can be set
  // `holds`: a value the function keeps (a bound method's object), for the depth.
  static Value callable(std::string name, Function fn, const Value* holds = nullptr);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::undefined; }
  bool is_none() const { return kind_ == Kind::none; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  bool is_int() const { return kind_ == Kind::integer; }
  bool is_real() const { return kind_ == Kind::real; }
  bool is_number() const { return kind_ == Kind::integer || kind_ == Kind::real || kind_ == Kind::boolean; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_list() const { return kind_ == Kind::list; }
  bool is_dict() const { return kind_ == Kind::dict; }
  bool is_ns() const { return kind_ == Kind::ns; }
  bool is_callable() const { return kind_ == Kind::callable; }
  bool is_tuple() const { return kind_ == Kind::list && list_->tuple; }

  bool as_bool() const { return i_ != 0; }
  int64_t as_int() const { return i_; }  // integer or boolean
  double as_double() const { return kind_ == Kind::real ? d_ : static_cast<double>(i_); }
  const std::string& str() const;  // string value; undefined: its name
  const std::vector<Value>& items() const { return list_->items; }
  const DictItems& entries() const { return *dict_; }
  // Dict or namespace lookup: null when absent.
  const Value* find(std::string_view key) const;
  // Namespace only: sets or adds an entry (shared by every copy of this value).
  void ns_set(const std::string& key, Value v) const;
  const std::string& callable_name() const { return str(); }
  // How deep lists, dicts and bound methods nest in it: 0 for a scalar. A namespace
  // counts 1 whatever it holds, since what it holds can change after this is read.
  int depth() const { return depth_; }
  Value call(CallArgs& args) const { return (*fn_)(args); }

  // Python's truth value (undefined is false).
  bool truthy() const;
  // Python's str(): what {{ x }} prints (undefined prints as nothing).
  std::string to_str() const;
  // Python's repr(): strings quoted, as inside a printed list.
  std::string repr() const;
  // "str", "int", "dict", ... as Python names the type (for error messages).
  const char* type_name() const;

 private:
  static Value with(Kind k) {
    Value v;
    v.kind_ = k;
    return v;
  }
  Kind kind_ = Kind::undefined;
  int depth_ = 0;
  int64_t i_ = 0;
  double d_ = 0;
  std::shared_ptr<const std::string> s_;  // null: empty
  std::shared_ptr<const ListData> list_;
  std::shared_ptr<DictItems> dict_;  // const for dicts by convention; namespaces change
  std::shared_ptr<const Function> fn_;
};

// Python == (1 == 1.0 == True; dicts compare as maps; undefined equals only undefined).
bool equal(const Value& a, const Value& b);
// Python <: numbers, strings (by code point), lists; -1/0/1. Anything else throws
// squeeze::Error "'<' not supported between instances of 'str' and 'int'".
int compare(const Value& a, const Value& b);

// Python's repr(float): the shortest text that reads back to the same double.
std::string float_repr(double d);

struct JsonOptions {
  int indent = -1;             // < 0: one line
  bool sort_keys = false;
  bool ensure_ascii = false;   // transformers' tojson: json.dumps(..., ensure_ascii=False)
  std::optional<std::string> item_separator;  // unset: json.dumps's default ", " (or "," with indent)
  std::string key_separator = ": ";
};
// Exactly Python's json.dumps(value, ...) for the JSON-able values; undefined, namespaces
// and callables are errors, as in Python.
std::string to_json(const Value& v, const JsonOptions& options = {});

// Throws squeeze::Error when `j` nests deeper than kMaxValueDepth (a hostile context
// must not recurse the converter off the stack).
Value from_json(const Json& j);

// UTF-8 text as code points and back: Python indexes, slices and measures str by
// code points. Invalid bytes become U+FFFD.
std::vector<char32_t> utf8_decode(std::string_view s);
std::string utf8_encode(const std::vector<char32_t>& cps);
void utf8_append(std::string& out, char32_t cp);
size_t utf8_length(std::string_view s);

}  // namespace squeeze::chat
