// gguf/value.h — one GGUF metadata value: a scalar, a string, or a (possibly nested)
// array, tagged with its on-disk value type so that a read→write round trip keeps
// every type exactly (a u16 stays a u16, an empty array keeps its element type).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace squeeze::gguf {

// The GGUF value type ids (gguf.md): the numbers are the on-disk encoding.
enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
  String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};

// "u8", "i32", "f32", "bool", "string", "array", ... (the names inspect and JSON use).
std::string_view value_type_name(ValueType t);
std::optional<ValueType> value_type_from_id(uint32_t id);
std::optional<ValueType> value_type_from_name(std::string_view name);
// Bytes of a fixed-size scalar type; 0 for String and Array.
size_t value_type_size(ValueType t);
bool is_integer_type(ValueType t);

class Value;

// An array: element type plus items. Every item has the element type; for an array of
// arrays each item is itself an Array value with its own element type (as on disk).
struct Array {
  ValueType element_type = ValueType::U8;
  std::vector<Value> items;
};

class Value {
 public:
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, Array, uint64_t, int64_t, double>;

  Value() : v_(uint8_t{0}) {}
  // Implicit from each storage type: Value(uint32_t{5}) is a u32, Value("x") a string.
  template <typename T>
    requires std::is_constructible_v<Storage, T&&> && (!std::is_same_v<std::decay_t<T>, Value>)
  Value(T&& x) : v_(std::forward<T>(x)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}

  // Typed builders, clearer at call sites than casts.
  static Value u8(uint8_t x) { return Value(x); }
  static Value i8(int8_t x) { return Value(x); }
  static Value u16(uint16_t x) { return Value(x); }
  static Value i16(int16_t x) { return Value(x); }
  static Value u32(uint32_t x) { return Value(x); }
  static Value i32(int32_t x) { return Value(x); }
  static Value u64(uint64_t x) { return Value(x); }
  static Value i64(int64_t x) { return Value(x); }
  static Value f32(float x) { return Value(x); }
  static Value f64(double x) { return Value(x); }
  static Value boolean(bool x) { return Value(x); }
  static Value string(std::string s) { return Value(std::move(s)); }
  // An array of `element_type`; throws squeeze::Error if an item has another type.
  static Value array(ValueType element_type, std::vector<Value> items);
  static Value string_array(const std::vector<std::string>& items);
  static Value f32_array(const std::vector<float>& items);
  static Value i32_array(const std::vector<int32_t>& items);
  static Value u32_array(const std::vector<uint32_t>& items);

  // The variant lists its alternatives in GGUF type-id order, so the index is the id.
  ValueType type() const { return static_cast<ValueType>(v_.index()); }
  const Storage& storage() const { return v_; }

  template <typename T>
  const T* get_if() const { return std::get_if<T>(&v_); }
  const Array* array_if() const { return std::get_if<Array>(&v_); }
  const std::string* string_if() const { return std::get_if<std::string>(&v_); }

  // The value of any integer type as a signed / unsigned 64-bit number; nullopt if this
  // is not an integer or does not fit (a negative value as unsigned, a u64 ≥ 2^63 as signed).
  std::optional<int64_t> as_i64() const;
  std::optional<uint64_t> as_u64() const;
  // f32 or f64 widened to double; nullopt otherwise.
  std::optional<double> as_f64() const;

  // A short human description: `42`, `'text'`, `[1, 2, 3, ...] (1000 items)`.
  // Arrays show at most `max_items` items; strings are cut at `max_chars`.
  std::string to_display(size_t max_items = 8, size_t max_chars = 60) const;

  bool operator==(const Value& other) const;

 private:
  Storage v_;
};

inline bool operator==(const Array& a, const Array& b) {
  return a.element_type == b.element_type && a.items == b.items;
}

}  // namespace squeeze::gguf
