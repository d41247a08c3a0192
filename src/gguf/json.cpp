// gguf/json.cpp — JSON encoding of metadata values and of a file's layout.
#include "gguf/json.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace squeeze::gguf {
namespace {

Json float_to_json(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

double float_from_json(const Json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  fail("expected a number, got ", j.dump());
}

template <typename T>
T int_from_json(const Json& j, ValueType t) {
  if (j.is_number_unsigned()) {
    const auto x = j.get<uint64_t>();
    if (x <= static_cast<uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(x);
  } else if (j.is_number_integer()) {
    const auto x = j.get<int64_t>();
    if (x >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
        (x < 0 || static_cast<uint64_t>(x) <= static_cast<uint64_t>(std::numeric_limits<T>::max())))
      return static_cast<T>(x);
  } else {
    fail("expected an integer for ", value_type_name(t), ", got ", j.dump());
  }
  fail("value ", j.dump(), " is out of range for ", value_type_name(t));
}

// Array items: scalars bare, nested arrays as full array objects.
Json item_to_json(const Value& v) {
  if (v.type() == ValueType::Array) return value_to_json(v);
  return value_to_json(v)["value"];
}

Value scalar_from_json(ValueType t, const Json& j) {
  switch (t) {
    case ValueType::U8: return Value(int_from_json<uint8_t>(j, t));
    case ValueType::I8: return Value(int_from_json<int8_t>(j, t));
    case ValueType::U16: return Value(int_from_json<uint16_t>(j, t));
    case ValueType::I16: return Value(int_from_json<int16_t>(j, t));
    case ValueType::U32: return Value(int_from_json<uint32_t>(j, t));
    case ValueType::I32: return Value(int_from_json<int32_t>(j, t));
    case ValueType::U64: return Value(int_from_json<uint64_t>(j, t));
    case ValueType::I64: return Value(int_from_json<int64_t>(j, t));
    case ValueType::F32: return Value(static_cast<float>(float_from_json(j)));
    case ValueType::F64: return Value(float_from_json(j));
    case ValueType::Bool:
      SQZ_CHECK(j.is_boolean(), "expected true/false, got ", j.dump());
      return Value(j.get<bool>());
    case ValueType::String:
      SQZ_CHECK(j.is_string(), "expected a string, got ", j.dump());
      return Value(j.get<std::string>());
    case ValueType::Array: return value_from_json(j);
  }
  fail("unreachable");
}

}  // namespace

Json value_to_json(const Value& v) {
  Json out = Json::object();
  out["type"] = std::string(value_type_name(v.type()));
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Array>) {
          out["element_type"] = std::string(value_type_name(x.element_type));
          Json items = Json::array();
          for (const Value& item : x.items) items.push_back(item_to_json(item));
          out["value"] = std::move(items);
        } else if constexpr (std::is_floating_point_v<T>) {
          out["value"] = float_to_json(static_cast<double>(x));
        } else {
          out["value"] = x;
        }
      },
      v.storage());
  return out;
}

Value value_from_json(const Json& j) {
  SQZ_CHECK(j.is_object() && j.contains("type") && j["type"].is_string() && j.contains("value"),
            "a value must be an object with \"type\" and \"value\", got ", j.dump());
  const std::string& tname = j["type"].get_ref<const std::string&>();
  const auto t = value_type_from_name(tname);
  SQZ_CHECK(t.has_value(), "unknown value type '", tname, "'");
  if (*t != ValueType::Array) return scalar_from_json(*t, j["value"]);

  SQZ_CHECK(j.contains("element_type") && j["element_type"].is_string(), "an array needs \"element_type\"");
  const std::string& ename = j["element_type"].get_ref<const std::string&>();
  const auto et = value_type_from_name(ename);
  SQZ_CHECK(et.has_value(), "unknown array element type '", ename, "'");
  SQZ_CHECK(j["value"].is_array(), "an array's \"value\" must be a JSON array");
  Array a{*et, {}};
  a.items.reserve(j["value"].size());
  for (const Json& item : j["value"]) {
    a.items.push_back(scalar_from_json(*et, item));
    SQZ_CHECK(a.items.back().type() == *et, "nested array item has type ", value_type_name(a.items.back().type()));
  }
  return Value(std::move(a));
}

Json file_to_json(const File& file) {
  Json out = Json::object();
  out["path"] = file.path();
  out["version"] = file.version();
  out["alignment"] = file.alignment();
  out["file_size"] = file.file_size();
  out["data_offset"] = file.data_offset();
  Json md = Json::object();
  for (const KeyValue& kv : file.metadata().entries()) md[kv.key] = value_to_json(kv.value);
  out["metadata"] = std::move(md);
  Json tensors = Json::array();
  uint64_t params = 0, bytes = 0;
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const TensorInfo& t = file.tensors()[i];
    tensors.push_back({{"index", i},
                       {"name", t.name},
                       {"type", std::string(t.type_info().name)},
                       {"type_id", static_cast<uint32_t>(t.type)},
                       {"shape", t.dims()},
                       {"n_elements", t.n_elements},
                       {"n_bytes", t.n_bytes},
                       {"offset", t.offset}});
    params += static_cast<uint64_t>(t.n_elements);
    bytes += t.n_bytes;
  }
  out["tensors"] = std::move(tensors);
  out["totals"] = {{"n_tensors", file.tensors().size()},
                   {"n_params", params},
                   {"n_bytes", bytes},
                   {"bpw", params ? 8.0 * static_cast<double>(bytes) / static_cast<double>(params) : 0.0}};
  return out;
}

}  // namespace squeeze::gguf
