// chat/builtins.h — what the evaluator does to values: attribute and item access
// (with Python's str / dict / list methods), slices, operators, `in`, iteration, the
// filters, the tests and the global functions. Each follows jinja2 3.1 under
// transformers' ImmutableSandboxedEnvironment; errors are squeeze::Errors without a
// position (the evaluator adds it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat/value.h"

namespace squeeze::chat {

// The sandbox's range() limit (jinja2 MAX_RANGE), and a cap on any one string or
// list a template builds ('x' * 10**9 is an error, not an allocation).
inline constexpr int64_t kMaxRange = 100000;
inline constexpr size_t kMaxBuiltBytes = size_t{1} << 26;  // 64 MiB

// Throws unless `n` bytes or items fit under kMaxBuiltBytes.
void check_size(size_t n);
// Before building a string of `bytes` bytes / `n` list elements: the cap on one value,
// then the render's budget (chat/budget.h).
void will_build_string(size_t bytes);
void will_build_items(size_t n);

// Throws the error that using an undefined value is ("'x' is undefined").
[[noreturn]] void fail_undefined(const Value& u);
// jinja2's names for an object in messages: "'dict object'", "None".
std::string object_name(const Value& v);

// x.name: methods first (bound to x), then items; missing gives undefined.
Value get_attr(const Value& obj, const std::string& name);
// x[key]: items first, then attributes for string keys; missing gives undefined.
Value get_item(const Value& obj, const Value& key);
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// + - * / // % ** ~ on two values, with Python's rules.
Value binary_op(const std::string& op, const Value& a, const Value& b);
Value negate(const Value& a);
bool contains(const Value& container, const Value& item);
// What `for` walks: list items, dict keys, string characters; undefined is empty.
std::vector<Value> iterate(const Value& v);

Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
bool apply_test(const std::string& name, const Value& input, CallArgs& args);

// range, namespace, dict, raise_exception, strftime_now. `now` fixes the clock that
// strftime_now reads (Unix seconds, formatted as UTC); without it, local time now.
DictItems make_globals(std::optional<int64_t> now);

// Python's str.strip() whitespace, and strip/lstrip/rstrip with an optional set of
// characters (code points).
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right);

// Argument `i` (or keyword `name`) of a builtin call, or `def` when absent.
Value arg(const CallArgs& a, size_t i, const char* name, Value def = Value());

}  // namespace squeeze::chat
