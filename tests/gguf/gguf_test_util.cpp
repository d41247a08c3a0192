// tests/gguf/gguf_test_util.cpp — scratch directories and the every-type sample file.
#include "gguf_test_util.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>

#include "core/error.h"
#include "gguf/ggml_type.h"

namespace squeeze::gguf::testing {

ScratchDir::ScratchDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/sqz-gguf-XXXXXX";
  SQZ_CHECK(::mkdtemp(tmpl.data()) != nullptr, "mkdtemp failed");
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  for (const std::string& name : list()) ::unlink(file(name).c_str());
  ::rmdir(path_.c_str());
}

std::vector<std::string> ScratchDir::list() const {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(path_.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SQZ_CHECK(in.good(), "cannot read ", path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  SQZ_CHECK(out.good(), "cannot write ", path);
}

Metadata sample_metadata() {
  Metadata md;
  md.set("general.architecture", "llama");
  md.set("t.u8", Value::u8(255));
  md.set("t.i8", Value::i8(-128));
  md.set("t.u16", Value::u16(65535));
  md.set("t.i16", Value::i16(-32768));
  md.set("t.u32", Value::u32(4294967295u));
  md.set("t.i32", Value::i32(std::numeric_limits<int32_t>::min()));
  md.set("t.u64", Value::u64(std::numeric_limits<uint64_t>::max()));
  md.set("t.i64", Value::i64(std::numeric_limits<int64_t>::min()));
  md.set("t.f32", Value::f32(-1.5e-38f));
  md.set("t.f32_nan", Value::f32(std::numeric_limits<float>::quiet_NaN()));
  md.set("t.f64", Value::f64(3.141592653589793));
  md.set("t.f64_inf", Value::f64(-std::numeric_limits<double>::infinity()));
  md.set("t.bool_true", Value::boolean(true));
  md.set("t.bool_false", Value::boolean(false));
  md.set("t.string", Value::string("héllo wörld ✓"));
  md.set("t.string_empty", Value::string(""));
  md.set("t.string_nul", Value::string(std::string("a\0b", 3)));
  md.set("t.arr_u8", Value::array(ValueType::U8, {Value::u8(0), Value::u8(7), Value::u8(255)}));
  md.set("t.arr_i8", Value::array(ValueType::I8, {Value::i8(-1), Value::i8(1)}));
  md.set("t.arr_u16", Value::array(ValueType::U16, {Value::u16(1), Value::u16(65535)}));
  md.set("t.arr_i16", Value::array(ValueType::I16, {Value::i16(-300)}));
  md.set("t.arr_u32", Value::u32_array({1, 2, 3, 4294967295u}));
  md.set("t.arr_i32", Value::i32_array({-5, 0, 5}));
  md.set("t.arr_u64", Value::array(ValueType::U64, {Value::u64(uint64_t{1} << 63)}));
  md.set("t.arr_i64", Value::array(ValueType::I64, {Value::i64(-(int64_t{1} << 40)), Value::i64(9)}));
  md.set("t.arr_f32", Value::f32_array({0.25f, -2.0f, 1e30f}));
  md.set("t.arr_f64", Value::array(ValueType::F64, {Value::f64(1e-300), Value::f64(-0.0)}));
  md.set("t.arr_bool", Value::array(ValueType::Bool, {Value::boolean(true), Value::boolean(false)}));
  md.set("t.arr_string", Value::string_array({"a", "", "ccc", "<0x0A>"}));
  md.set("t.arr_empty_string", Value::array(ValueType::String, {}));
  md.set("t.arr_empty_f64", Value::array(ValueType::F64, {}));
  md.set("t.arr_nested", Value::array(ValueType::Array, {Value::i32_array({1, 2}), Value::string_array({"x"}),
                                                         Value::array(ValueType::U8, {})}));
  md.set("t.arr_nested3",
         Value::array(ValueType::Array, {Value::array(ValueType::Array, {Value::f32_array({1.0f}),
                                                                         Value::f32_array({2.0f, 3.0f})})}));
  return md;
}

std::vector<SampleTensor> sample_tensors(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<SampleTensor> out;
  for (uint32_t id = 0; id < 64; ++id) {
    const auto info = ggml_type_info(id);
    if (!info) continue;
    const size_t k = out.size();
    std::vector<int64_t> dims = {info->block_size * static_cast<int64_t>(1 + k % 3), static_cast<int64_t>(2 + k % 2)};
    if (k % 4 == 1) dims.push_back(3);
    if (k % 4 == 3) dims.insert(dims.end(), {2, 2});
    const TensorGeometry g = tensor_geometry(info->type, dims);
    SampleTensor t{{"t" + std::to_string(k) + "." + std::string(info->name), info->type, dims}, {}};
    t.bytes.resize(g.n_bytes);
    for (auto& b : t.bytes) b = static_cast<uint8_t>(rng());
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace squeeze::gguf::testing
