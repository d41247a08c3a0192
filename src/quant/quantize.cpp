// quant/quantize.cpp — whole-tensor quantize/dequantize and error measures.
#include "quant/quantize.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace squeeze::quant {
namespace {

void check_shape(const QuantTraits& t, int64_t rows, int64_t cols) {
  SQZ_CHECK(rows >= 0 && cols > 0, "bad tensor shape ", rows, " x ", cols);
  SQZ_CHECK(cols % t.block_size == 0, "row length ", cols, " is not a multiple of ", t.name, "'s block size ",
            t.block_size);
}

// Largest |value| a type can hold: its f16 scales top out at 65504 (times the largest
// code · 6-bit sub-scale); beyond it the block would store Inf.
double representable_max(GgmlType type) {
  constexpr double kF16Max = 65504.0;
  switch (type) {
    case GgmlType::F16: return kF16Max;
    case GgmlType::Q8_0: return kF16Max * 127;
    case GgmlType::Q4_0: return kF16Max * 8;
    case GgmlType::Q5_0: return kF16Max * 16;
    case GgmlType::Q4_1:
    case GgmlType::Q5_1: return kF16Max;  // the f16 offset m holds the block's min
    case GgmlType::Q4_K: return kF16Max * 63 * 15;
    case GgmlType::Q5_K: return kF16Max * 63 * 31;
    case GgmlType::Q6_K: return kF16Max * 128 * 32;
    default: return INFINITY;  // F32, BF16 (f32 range), Q8_K (f32 scale), MXFP4 (E8M0 scales to 2^127)
  }
}

}  // namespace

void quantize_rows(ThreadPool& pool, const QuantizeParams& p, void* dst) {
  const QuantTraits& t = traits(p.type);
  check_shape(t, p.rows, p.cols);
  SQZ_CHECK(p.src != nullptr && dst != nullptr, "quantize: null buffer");
  if (p.importance)
    for (int64_t c = 0; c < p.cols; ++c)
      SQZ_CHECK(std::isfinite(p.importance[c]) && p.importance[c] >= 0, "importance of column ", c,
                " is not a finite non-negative value: ", p.importance[c]);
  const int64_t rb = row_bytes(p.type, p.cols);
  const double vmax = representable_max(p.type);
  pool.parallel_for(0, p.rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = p.src + r * p.cols;
      for (int64_t c = 0; c < p.cols; ++c) {
        SQZ_CHECK(std::isfinite(row[c]), "cannot quantize non-finite value ", row[c], " at row ", r, ", column ", c);
        SQZ_CHECK(std::fabs(row[c]) < vmax * 0.99, "value ", row[c], " at row ", r, ", column ", c,
                  " is too large for ", t.name);
      }
      t.quantize_row(row, static_cast<uint8_t*>(dst) + r * rb, p.cols, p.importance);
    }
  }, {ThreadPool::Schedule::Dynamic, std::max<int64_t>(1, 65536 / p.cols)});
}

std::vector<uint8_t> quantize_tensor(const QuantizeParams& p) {
  const QuantTraits& t = traits(p.type);
  check_shape(t, p.rows, p.cols);
  std::vector<uint8_t> out(static_cast<size_t>(p.rows * row_bytes(p.type, p.cols)));
  quantize_rows(default_thread_pool(), p, out.data());
  return out;
}

void dequantize_rows(ThreadPool& pool, GgmlType type, const void* src, int64_t rows, int64_t cols, float* dst) {
  const QuantTraits& t = traits(type);
  check_shape(t, rows, cols);
  const int64_t rb = row_bytes(type, cols);
  pool.parallel_for(0, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) t.dequantize_row(static_cast<const uint8_t*>(src) + r * rb, dst + r * cols, cols);
  }, {ThreadPool::Schedule::Static, std::max<int64_t>(1, 16384 / cols)});
}

std::vector<float> dequantize_tensor(GgmlType type, const void* src, int64_t rows, int64_t cols) {
  check_shape(traits(type), rows, cols);
  std::vector<float> out(static_cast<size_t>(rows * cols));
  dequantize_rows(default_thread_pool(), type, src, rows, cols, out.data());
  return out;
}

ErrorStats compare(const float* ref, const float* approx, int64_t rows, int64_t cols, const float* importance) {
  double ss = 0, se = 0, wss = 0, wse = 0, mx = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const double x = ref[r * cols + c], e = x - approx[r * cols + c];
      const double w = importance ? importance[c] : 1.0;
      ss += x * x, se += e * e, wss += w * x * x, wse += w * e * e;
      mx = std::max(mx, std::fabs(e));
    }
  const double n = std::max<double>(1.0, static_cast<double>(rows) * static_cast<double>(cols));
  ErrorStats s;
  s.rms = std::sqrt(ss / n);
  s.rmse = std::sqrt(se / n);
  s.rel_rmse = ss > 0 ? std::sqrt(se / ss) : (se > 0 ? INFINITY : 0.0);
  s.weighted_rel = wss > 0 ? std::sqrt(wse / wss) : (wse > 0 ? INFINITY : 0.0);
  s.max_abs = mx;
  return s;
}

ErrorStats round_trip_error(ThreadPool& pool, const QuantizeParams& p) {
  const QuantTraits& t = traits(p.type);
  check_shape(t, p.rows, p.cols);
  std::vector<uint8_t> q(static_cast<size_t>(p.rows * row_bytes(p.type, p.cols)));
  quantize_rows(pool, p, q.data());
  std::vector<float> back(static_cast<size_t>(p.rows * p.cols));
  dequantize_rows(pool, p.type, q.data(), p.rows, p.cols, back.data());
  return compare(p.src, back.data(), p.rows, p.cols, p.importance);
}

double bits_per_weight(GgmlType type) {
  const auto info = gguf::ggml_type_info(type);
  return 8.0 * static_cast<double>(info.block_bytes) / static_cast<double>(info.block_size);
}

}  // namespace squeeze::quant
