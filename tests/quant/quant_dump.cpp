// tests/quant/quant_dump.cpp — test-only tool: moves our blocks to and from raw files so
// tests/python/test_quant_crosscheck.py can compare them with the gguf package.
//
//   quant_dump quantize TYPE ROWS COLS IN.f32 OUT.bin OUT.f32 [IMPORTANCE.f32]
//     quantizes raw little-endian f32 [ROWS, COLS]; writes the blocks and our dequantization
//   quant_dump dequantize TYPE ROWS COLS IN.bin OUT.f32
//     dequantizes raw blocks with our kernels
//   quant_dump quantize-ggml TYPE ROWS COLS IN.f32 OUT.bin
//     quantizes with ggml's round-to-nearest reference quantizer (Q4_1, Q5_0, Q5_1, MXFP4),
//     the bytes ggml and the gguf package write
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/ggml_type.h"
#include "quant/kernels_impl.h"
#include "quant/quantize.h"

namespace {

using namespace squeeze;

std::vector<char> read_all(const std::string& path, size_t want) {
  std::ifstream f(path, std::ios::binary);
  SQZ_CHECK(f.good(), path, ": cannot open");
  std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  SQZ_CHECK(data.size() == want, path, ": expected ", want, " bytes, found ", data.size());
  return data;
}

void write_all(const std::string& path, const void* p, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
  SQZ_CHECK(f.good(), path, ": write failed");
}

int run(int argc, char** argv) {
  SQZ_CHECK(argc >= 7, "usage: quant_dump quantize|quantize-ggml|dequantize TYPE ROWS COLS IN OUT [OUT.f32 [IMPORTANCE]]");
  const std::string mode = argv[1];
  const auto type = gguf::ggml_type_from_name(argv[2]);
  SQZ_CHECK(type.has_value(), "unknown type ", argv[2]);
  const int64_t rows = std::stoll(argv[3]), cols = std::stoll(argv[4]);
  SQZ_CHECK(rows > 0 && cols > 0, "bad shape");
  const int64_t rb = quant::row_bytes(*type, cols);
  if (mode == "quantize") {
    SQZ_CHECK(argc >= 8, "quantize needs IN.f32 OUT.bin OUT.f32");
    const auto in = read_all(argv[5], static_cast<size_t>(rows * cols * 4));
    std::vector<char> imp;
    if (argc >= 9) imp = read_all(argv[8], static_cast<size_t>(cols * 4));
    const auto q = quant::quantize_tensor({.type = *type, .src = reinterpret_cast<const float*>(in.data()),
                                           .rows = rows, .cols = cols,
                                           .importance = imp.empty() ? nullptr : reinterpret_cast<const float*>(imp.data())});
    write_all(argv[6], q.data(), q.size());
    const auto back = quant::dequantize_tensor(*type, q.data(), rows, cols);
    write_all(argv[7], back.data(), back.size() * 4);
  } else if (mode == "quantize-ggml") {
    void (*rtn)(const float*, void*, int64_t) = nullptr;
    if (*type == gguf::GgmlType::Q4_1) rtn = quant::impl::rtn_quantize_q4_1;
    if (*type == gguf::GgmlType::Q5_0) rtn = quant::impl::rtn_quantize_q5_0;
    if (*type == gguf::GgmlType::Q5_1) rtn = quant::impl::rtn_quantize_q5_1;
    if (*type == gguf::GgmlType::MXFP4) rtn = quant::impl::rtn_quantize_mxfp4;
    SQZ_CHECK(rtn != nullptr, "quantize-ggml: no round-to-nearest reference for ", argv[2]);
    const auto in = read_all(argv[5], static_cast<size_t>(rows * cols * 4));
    std::vector<uint8_t> q(static_cast<size_t>(rows * rb));
    for (int64_t r = 0; r < rows; ++r) rtn(reinterpret_cast<const float*>(in.data()) + r * cols, q.data() + r * rb, cols);
    write_all(argv[6], q.data(), q.size());
  } else if (mode == "dequantize") {
    const auto in = read_all(argv[5], static_cast<size_t>(rows * rb));
    const auto back = quant::dequantize_tensor(*type, in.data(), rows, cols);
    write_all(argv[6], back.data(), back.size() * 4);
  } else {
    fail("unknown mode ", mode);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "quant_dump: %s\n", e.what());
    return 1;
  }
}
