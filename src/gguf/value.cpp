// gguf/value.cpp — metadata value types: names, conversions, display.
#include "gguf/value.h"

#include <array>
#include <charconv>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"

namespace squeeze::gguf {
namespace {

constexpr std::array<std::string_view, 13> kNames = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
constexpr std::array<size_t, 13> kSizes = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

std::string display_string(const std::string& s, size_t max_chars) {
  std::string out = "'";
  size_t shown = 0;
  for (unsigned char c : s) {
    if (shown == max_chars) {
      out += "...";
      break;
    }
    ++shown;
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);  // UTF-8 bytes pass through for the terminal
    }
  }
  return out + "'";
}

// Shortest text that reads back to the same float / double.
template <typename F>
std::string display_float(F x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string_view value_type_name(ValueType t) {
  const auto i = static_cast<uint32_t>(t);
  return i < kNames.size() ? kNames[i] : "invalid";
}

std::optional<ValueType> value_type_from_id(uint32_t id) {
  if (id < kNames.size()) return static_cast<ValueType>(id);
  return std::nullopt;
}

std::optional<ValueType> value_type_from_name(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<ValueType>(i);
  return std::nullopt;
}

size_t value_type_size(ValueType t) { return kSizes.at(static_cast<uint32_t>(t)); }

bool is_integer_type(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::U16: case ValueType::I16:
    case ValueType::U32: case ValueType::I32: case ValueType::U64: case ValueType::I64:
      return true;
    default:
      return false;
  }
}

Value Value::array(ValueType element_type, std::vector<Value> items) {
  for (size_t i = 0; i < items.size(); ++i)
    SQZ_CHECK(items[i].type() == element_type, "array item ", i, " has type ",
              value_type_name(items[i].type()), ", expected ", value_type_name(element_type));
  return Value(Array{element_type, std::move(items)});
}

template <typename T>
static Value typed_array(ValueType t, const std::vector<T>& xs) {
  Array a{t, {}};
  a.items.reserve(xs.size());
  for (const T& x : xs) a.items.emplace_back(x);
  return Value(std::move(a));
}

Value Value::string_array(const std::vector<std::string>& items) { return typed_array(ValueType::String, items); }
Value Value::f32_array(const std::vector<float>& items) { return typed_array(ValueType::F32, items); }
Value Value::i32_array(const std::vector<int32_t>& items) { return typed_array(ValueType::I32, items); }
Value Value::u32_array(const std::vector<uint32_t>& items) { return typed_array(ValueType::U32, items); }

std::optional<int64_t> Value::as_i64() const {
  return std::visit(
      [](const auto& x) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool> || !std::is_integral_v<T>) {
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
          return static_cast<int64_t>(x);
        } else {
          return static_cast<int64_t>(x);
        }
      },
      v_);
}

std::optional<uint64_t> Value::as_u64() const {
  return std::visit(
      [](const auto& x) -> std::optional<uint64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool> || !std::is_integral_v<T>) {
          return std::nullopt;
        } else if constexpr (std::is_signed_v<T>) {
          if (x < 0) return std::nullopt;
          return static_cast<uint64_t>(x);
        } else {
          return static_cast<uint64_t>(x);
        }
      },
      v_);
}

std::optional<double> Value::as_f64() const {
  if (const auto* f = get_if<float>()) return *f;
  if (const auto* d = get_if<double>()) return *d;
  return std::nullopt;
}

std::string Value::to_display(size_t max_items, size_t max_chars) const {
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return display_string(x, max_chars);
        } else if constexpr (std::is_same_v<T, Array>) {
          std::string out = "[";
          const size_t shown = std::min(max_items, x.items.size());
          for (size_t i = 0; i < shown; ++i) {
            if (i) out += ", ";
            out += x.items[i].to_display(max_items, max_chars);
          }
          if (shown < x.items.size()) out += shown ? ", ...]" : "...]";
          else out += "]";
          if (shown < x.items.size()) out += " (" + std::to_string(x.items.size()) + " items)";
          return out;
        } else if constexpr (std::is_floating_point_v<T>) {
          return display_float(x);
        } else {
          return std::to_string(+x);  // + promotes u8/i8 so they print as numbers
        }
      },
      v_);
}

bool Value::operator==(const Value& other) const {
  // Floats compare by bit pattern so that NaN payloads round-trip and equal themselves.
  if (type() != other.type()) return false;
  if (const auto* f = get_if<float>()) return std::bit_cast<uint32_t>(*f) == std::bit_cast<uint32_t>(*other.get_if<float>());
  if (const auto* d = get_if<double>()) return std::bit_cast<uint64_t>(*d) == std::bit_cast<uint64_t>(*other.get_if<double>());
  return v_ == other.v_;
}

}  // namespace squeeze::gguf
