// mok/experts.h — SwiGLU experts over grouped rows: per expert, one GEMM per projection
// over its contiguous block of received rows (the dispatch's output contract).
#pragma once

#include <cstdint>
#include <vector>

#include "mok/config.h"

namespace squeeze::mok {

// What the backward needs: inputs and activations of every row, [rows, *].
struct FfnCache {
  std::vector<float> x, a, b, h;  // x [n, H]; a = x·Wgᵀ, b = x·Wuᵀ, h = silu(a)·b: [n, I]
};

// y [n, H] = down(silu(x·gateᵀ) * (x·upᵀ)) for one expert; fills cache.
void swiglu_forward(const ExpertWeights& w, int64_t H, int64_t I, int64_t n, const float* x, float* y, FfnCache& c);
// The same for a slice of an expert's rows, activations into caller-owned a, b, h [n, I].
void swiglu_forward_rows(const ExpertWeights& w, int64_t H, int64_t I, int64_t n, const float* x, float* y, float* a,
                         float* b, float* h);
// dy [n, H] -> dx [n, H] (overwritten); accumulates weight gradients into g.
void swiglu_backward(const ExpertWeights& w, int64_t H, int64_t I, int64_t n, const FfnCache& c, const float* dy,
                     float* dx, ExpertWeights& g);

// swiglu_backward in its two halves, for the fused pipeline: the per-row half (da, db
// [n, I] and dx [n, H] from the cached activations a, b) works on any slice of rows; the
// weight gradients sum over the rows, so they take all of an expert's rows in one call
// (the same reduction as swiglu_backward, hence the same bits).
void swiglu_backward_rows(const ExpertWeights& w, int64_t H, int64_t I, int64_t n, const float* a, const float* b,
                          const float* dy, float* da, float* db, float* dx);
void swiglu_weight_grads(int64_t H, int64_t I, int64_t n, const float* x, const float* h, const float* dy,
                         const float* da, const float* db, ExpertWeights& g);
// Grouped over this rank's local experts: rows of local expert e are
// [offsets[e], offsets[e+1]) of x / y / dx. The per-row products run in tiles of
// tile_rows rows from each expert's first row, the fused pipeline's tiles: a BLAS may pick
// a different kernel (and summation order) for a different number of rows, so the same
// tiles are what makes the two paths agree bit for bit. Weight gradients take each
// expert's rows in one product in both.
struct ExpertGroup {
  const MoeConfig* cfg;
  const MoeWeights* weights;
  int rank;
  std::vector<int64_t> offsets;  // [EL + 1]
  int64_t tile_rows = 32;
};
void experts_forward(const ExpertGroup& g, const float* x, float* y, std::vector<FfnCache>& caches);
void experts_backward(const ExpertGroup& g, const std::vector<FfnCache>& caches, const float* dy, float* dx,
                      MoeWeights& grads);

}  // namespace squeeze::mok
