// quant/matmul.h — multithreaded products with quantized weight matrices:
// GEMV for decode (one token) and a tiled GEMM for batches (prefill).
//
// W holds `rows` weight rows of `cols` elements each, as a GGUF tensor stores them
// (ne[0] = cols), every row row_bytes(type, cols) bytes. The activation is quantized
// once to the type's dot_type (Q8_K / Q8_0; f32 rows stay f32) and every dot uses the
// traits' kernels, so results match vec_dot of the same rows exactly.
#pragma once

#include <cstdint>
#include <span>

#include "core/thread_pool.h"
#include "quant/traits.h"

namespace squeeze::quant {

struct QMatrix {
  GgmlType type = GgmlType::F32;
  const void* data = nullptr;
  int64_t rows = 0;  // output features
  int64_t cols = 0;  // input features (multiple of the block size)
  // The same rows repacked for the active ISA's integer tile (quant/packed.h), or null.
  // When set, products without explicit kernels run on it for every batch size.
  const void* packed = nullptr;
};

// y[rows] = W · x[cols]. `kernels` selects an ISA's table (tests); null = active one.
void gemv(ThreadPool& pool, const QMatrix& W, const float* x, float* y, const QuantTraits* kernels = nullptr);

// One output of gemv_many: y[W.rows] = W · x.
struct GemvOutput {
  QMatrix W;
  float* y = nullptr;
};

// Several GEMVs of the same input x (every W.cols equal; types may differ): one pass over
// the pool for all of them (the Q/K/V or gate/up projections of a decode step), x
// quantized once per activation type. dot_kernels = false: the active ISA's fast path
// (as gemv with null kernels); true: the types' own dot kernels for F32 weights too (as
// gemv with traits(type)), and then every row's value is exactly gemv()'s — as it is for
// quantized types either way (the f32 fast path's rounding depends on row grouping).
// Packed matrices always run their packed kernels, as gemv() and gemm() without explicit
// kernels do, so batch invariance holds across all three.
void gemv_many(ThreadPool& pool, std::span<const GemvOutput> outputs, const float* x, bool dot_kernels = false);

struct GemmParams {
  const float* X = nullptr;  // [M, W.cols], row stride ldx
  int64_t M = 0;
  int64_t ldx = 0;           // 0 = W.cols
  float* Y = nullptr;        // [M, W.rows], row stride ldy; overwritten
  int64_t ldy = 0;           // 0 = W.rows
  const QuantTraits* kernels = nullptr;  // null = active ISA
  // Every M through the quantized dot tile (F32 weights too): each row's result is then
  // independent of M and of the other rows, bit-identical to gemv() with the same kernels
  // (batched serving and speculative verification rely on it). Costs the packed f32
  // GEMM's speed on large batches.
  bool batch_invariant = false;
};

// From this batch size on, gemm() without explicit kernels dequantizes the weights to f32
// straight into the packed GEMM's panels (kernels::cpu::gemm_packed; activations stay
// f32); below it, the quantized dot tile runs.
inline constexpr int64_t kDequantizedGemmMinBatch = 16;

// Y = X · Wᵀ. Packed weights (W.packed, no explicit kernels) run the packed integer tile
// for every M (batch-invariant by construction, bit-identical to gemv). Otherwise each X row is quantized once; weight rows are split into tiles over the
// pool, and each weight block is decoded once for up to kMaxDotRows tokens. F32 weights
// without explicit kernels go to kernels::cpu::gemm_nt (the packed GEMM for large products).
void gemm(ThreadPool& pool, const QMatrix& W, const GemmParams& p);

}  // namespace squeeze::quant
