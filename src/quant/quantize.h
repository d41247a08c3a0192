// quant/quantize.h — whole-tensor quantize / dequantize over the thread pool, and the
// reconstruction-error measures a quantization planner compares types by.
//
// A tensor here is a row-major matrix of `rows` rows of `cols` elements (GGUF ne[0] =
// cols); each row is quantized independently into row_bytes(type, cols) bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "quant/traits.h"

namespace squeeze::quant {

struct QuantizeParams {
  GgmlType type = GgmlType::F32;
  const float* src = nullptr;  // [rows, cols] row-major
  int64_t rows = 0;
  int64_t cols = 0;
  // Per-input-column importance (cols values, e.g. an imatrix's mean x²) or null.
  const float* importance = nullptr;
};

// Quantizes with the reference quantizer, rows split over the pool; dst must hold
// rows * row_bytes(type, cols) bytes. Throws squeeze::Error (and writes nothing
// useful) on a row length that is not a multiple of the block size, non-finite input
// or importance values, or a type without kernels.
void quantize_rows(ThreadPool& pool, const QuantizeParams& p, void* dst);
// As quantize_rows on the default pool, returning the bytes.
std::vector<uint8_t> quantize_tensor(const QuantizeParams& p);

// dst[rows, cols] = the f32 values of src (rows * row_bytes(type, cols) bytes).
void dequantize_rows(ThreadPool& pool, GgmlType type, const void* src, int64_t rows, int64_t cols, float* dst);
std::vector<float> dequantize_tensor(GgmlType type, const void* src, int64_t rows, int64_t cols);

// How far `approx` is from `ref` (both [rows, cols]). The weighted figures weight each
// element by importance[col] (uniform when null), the measure a planner minimises.
struct ErrorStats {
  double rms = 0;           // sqrt(mean ref²)
  double rmse = 0;          // sqrt(mean (ref − approx)²)
  double rel_rmse = 0;      // rmse / rms (0 when ref is all zero and equal)
  double weighted_rel = 0;  // sqrt(Σ w·err² / Σ w·ref²)
  double max_abs = 0;       // max |ref − approx|
};
ErrorStats compare(const float* ref, const float* approx, int64_t rows, int64_t cols,
                   const float* importance = nullptr);

// Quantize then dequantize `p` with `p.type` and compare with the input: the error a
// planner measures per (tensor, candidate type).
ErrorStats round_trip_error(ThreadPool& pool, const QuantizeParams& p);

// Bits per weight of a type (block bytes · 8 / block size).
double bits_per_weight(GgmlType type);

}  // namespace squeeze::quant
