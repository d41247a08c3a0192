// tests/safetensors/test_reader.cpp — the safetensors reader: well-formed files give
// their tensors' names, dtypes, shapes and bytes (in header order, metadata kept);
// every kind of malformed file is refused with one line naming the file and what is
// wrong; random corruption of a valid file never crashes it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include "common/thrown_message.h"
#include "core/error.h"
#include "safetensors/reader.h"
#include "st_test_util.h"

namespace squeeze::safetensors {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("squeeze_st_" + std::to_string(::getpid()) + "_" + name)).string();
}

// Writes `bytes` and returns the reader's error ("(no error)" when it loads).
std::string error_for(const std::string& bytes) {
  const std::string path = temp_path("x.safetensors");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  const std::string m = thrown_message([&] { File f(path); });
  std::remove(path.c_str());
  return m;
}

const std::string kGoodHeader =
    R"({"__metadata__":{"format":"pt"},"b.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
    R"("a.bias":{"dtype":"BF16","shape":[3],"data_offsets":[24,30]},"s":{"dtype":"I64","shape":[],"data_offsets":[30,38]}}  )";

std::string good_data() {
  std::string d(38, '\0');
  for (size_t i = 0; i < d.size(); ++i) d[i] = char(i * 7 + 1);
  return d;
}

TEST(Safetensors, ReadsTensorsInHeaderOrderWithTheirBytes) {
  const std::string path = temp_path("good.safetensors");
  const std::string data = good_data();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << file_bytes(kGoodHeader, data);
  File f(path);
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.tensors()[0].name, "b.weight");
  EXPECT_EQ(f.tensors()[1].name, "a.bias");
  EXPECT_EQ(f.tensors()[2].name, "s");
  const Tensor* w = f.find("b.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, Dtype::F32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w->elements(), 6);
  EXPECT_EQ(std::memcmp(w->data.data(), data.data(), 24), 0);
  const Tensor* b = f.find("a.bias");
  EXPECT_EQ(b->dtype, Dtype::BF16);
  EXPECT_EQ(b->data.size(), 6u);
  EXPECT_EQ(std::memcmp(b->data.data(), data.data() + 24, 6), 0);
  EXPECT_EQ(f.find("s")->elements(), 1);  // a scalar
  EXPECT_EQ(f.find("missing"), nullptr);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  std::remove(path.c_str());
}

TEST(Safetensors, DtypeTable) {
  for (const char* n : {"BOOL", "U8", "I8", "U16", "I16", "F16", "BF16", "U32", "I32", "F32", "U64", "I64", "F64",
                        "F8_E4M3", "F8_E5M2"}) {
    const auto d = dtype_from_name(n);
    ASSERT_TRUE(d) << n;
    EXPECT_STREQ(dtype_name(*d), n);
  }
  EXPECT_EQ(dtype_size(Dtype::BF16), 2u);
  EXPECT_EQ(dtype_size(Dtype::F64), 8u);
  EXPECT_FALSE(dtype_from_name("f32"));
  EXPECT_FALSE(dtype_from_name("Q4_K"));
}

TEST(Safetensors, EmptyTensorsAndAnEmptyBuffer) {
  EXPECT_EQ(error_for(file_bytes("{}", "")), "(no error)");
  EXPECT_EQ(error_for(file_bytes(R"({"z":{"dtype":"F16","shape":[0,4],"data_offsets":[0,0]}})", "")), "(no error)");
}

struct Case {
  const char* what;
  std::string bytes;
  const char* message;  // a substring of the one-line error
};

TEST(Safetensors, MalformedFilesAreRefusedWithOneLine) {
  const std::string d = good_data();
  auto hdr = [](const std::string& tensors) { return "{" + tensors + "}"; };
  const std::string t8 = R"("t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::vector<Case> cases = {
      {"too short", std::string("\x05\x00\x00", 3), "too short"},
      {"zero header", file_bytes("", ""), "out of range"},
      {"huge header", file_bytes("{}", "", uint64_t{1} << 40), "out of range"},
      {"header past end", file_bytes("{}", "", 500), "runs past the end"},
      {"not json", file_bytes("{nope", ""), "not valid JSON"},
      {"array", file_bytes("[1,2]", ""), "not a JSON object"},
      {"deep", file_bytes(R"({"t":{"shape":[[[1]]]}})", ""), "nested deeper"},
      {"very deep", file_bytes("{" + std::string(100000, '[') + std::string(100000, ']') + "}", ""), "nested deeper"},
      {"duplicate", file_bytes(hdr(t8 + "," + t8), std::string(8, 'x')), "'t' appears twice"},
      {"metadata not strings", file_bytes(R"({"__metadata__":{"a":1}})", ""), "__metadata__ value 'a'"},
      {"metadata not object", file_bytes(R"({"__metadata__":[]})", ""), "__metadata__ must be an object"},
      {"empty name", file_bytes(R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::string(8, 'x')), "empty name"},
      {"entry not object", file_bytes(R"({"t":5})", ""), "'t': not an object"},
      {"unknown key", file_bytes(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", std::string(8, 'x')), "unknown key 'x'"},
      {"no dtype", file_bytes(R"({"t":{"shape":[2],"data_offsets":[0,8]}})", std::string(8, 'x')), "dtype missing"},
      {"bad dtype", file_bytes(R"({"t":{"dtype":"Q4_K","shape":[2],"data_offsets":[0,8]}})", std::string(8, 'x')), "unknown dtype 'Q4_K'"},
      {"no shape", file_bytes(R"({"t":{"dtype":"F32","data_offsets":[0,8]}})", std::string(8, 'x')), "shape missing"},
      {"negative dim", file_bytes(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", std::string(8, 'x')), "non-negative integers"},
      {"float dim", file_bytes(R"({"t":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", std::string(8, 'x')), "non-negative integers"},
      {"offsets size", file_bytes(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", std::string(8, 'x')), "[begin, end]"},
      {"negative offset", file_bytes(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", std::string(8, 'x')), "non-negative"},
      {"backwards", file_bytes(R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", std::string(8, 'x')), "run backwards"},
      {"past buffer", file_bytes(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::string(8, 'x')), "past the 8-byte data buffer"},
      {"size mismatch", file_bytes(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, 'x')), "needs 12 bytes, data_offsets span 8"},
      {"overflowing shape", file_bytes(R"({"t":{"dtype":"F64","shape":[4611686018427387904,4611686018427387904],"data_offsets":[0,8]}})", std::string(8, 'x')), "needs 2^64 or more bytes"},
      {"gap", file_bytes(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, 'x')), "4 unused bytes before tensor 't'"},
      {"overlap", file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, 'x')), "overlaps"},
      {"trailing bytes", file_bytes(hdr(t8), std::string(12, 'x')), "4 bytes after the last tensor"},
      {"good", file_bytes(kGoodHeader, d), nullptr},
  };
  for (const Case& c : cases) {
    const std::string m = error_for(c.bytes);
    if (!c.message) {
      EXPECT_EQ(m, "(no error)") << c.what;
      continue;
    }
    EXPECT_NE(m.find(c.message), std::string::npos) << c.what << ": " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << c.what;
    EXPECT_NE(m.find("squeeze_st_"), std::string::npos) << c.what << ": names the file: " << m;
  }
}

// Random byte flips and truncations of a valid file: each either loads (then every
// tensor's bytes lie inside the file) or fails with one line; none crashes.
TEST(Safetensors, CorruptedFilesNeverCrash) {
  const std::string good = file_bytes(kGoodHeader, good_data());
  std::mt19937 rng(17);
  int loaded = 0, refused = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string bytes = good;
    if (trial % 4 == 0) {
      bytes.resize(rng() % bytes.size());
    } else {
      for (int k = 1 + int(rng() % 3); k > 0; --k) bytes[rng() % bytes.size()] = char(rng());
    }
    const std::string path = temp_path("fuzz.safetensors");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    try {
      File f(path);
      for (const auto& t : f.tensors()) EXPECT_EQ(t.data.size(), t.end - t.begin);
      ++loaded;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      ++refused;
    }
    std::remove(path.c_str());
  }
  EXPECT_GT(refused, 100);
  EXPECT_GT(loaded, 10);  // flips inside the data buffer leave a valid file
}

}  // namespace
}  // namespace squeeze::safetensors
