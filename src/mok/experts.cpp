// mok/experts.cpp — SwiGLU expert forward/backward on the BLAS (per-expert GEMMs).
#include "mok/experts.h"

#include "core/error.h"
#include "kernels/cpu/blas.h"


#include <algorithm>
#include <cmath>
#include <cstring>

namespace squeeze::mok {
namespace {

// C[M,N] = beta*C + op(A)·op(B), row-major.
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
          float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  kernels::cpu::blas_gemm(kernels::cpu::GemmArgs<float>{.trans_a = ta, .trans_b = tb, .M = M, .N = N, .K = K, .A = A, .lda = lda, .B = B,
                            .ldb = ldb, .beta = beta, .C = C, .ldc = ldc});
}
float sigmoid(float a) { return 1.0f / (1.0f + std::exp(-a)); }

}  // namespace

void swiglu_forward(const ExpertWeights& w, int64_t H, int64_t I, int64_t n, const float* x, float* y, FfnCache& c) {
  c.x.assign(x, x + n * H);
  c.a.resize(size_t(n * I));
  c.b.resize(size_t(n * I));
  c.h.resize(size_t(n * I));
  swiglu_forward_rows(w, H, I, n, x, y, c.a.data(), c.b.data(), c.h.data());
}

void swiglu_forward_rows(const ExpertWeights& w, int64_t H, int64_t I, int64_t n, const float* x, float* y, float* a,
                         float* b, float* h) {
  if (n == 0) return;
  gemm(false, true, n, I, H, x, H, w.gate.data(), H, 0.0f, a, I);
  gemm(false, true, n, I, H, x, H, w.up.data(), H, 0.0f, b, I);
  for (int64_t i = 0; i < n * I; ++i) h[i] = a[i] * sigmoid(a[i]) * b[i];
  gemm(false, true, n, H, I, h, I, w.down.data(), I, 0.0f, y, H);
}

void swiglu_backward(const ExpertWeights& w, int64_t H, int64_t I, int64_t n, const FfnCache& c, const float* dy,
                     float* dx, ExpertWeights& g) {
  if (n == 0) return;
  std::vector<float> da(size_t(n * I)), db(size_t(n * I));
  swiglu_backward_rows(w, H, I, n, c.a.data(), c.b.data(), dy, da.data(), db.data(), dx);
  swiglu_weight_grads(H, I, n, c.x.data(), c.h.data(), dy, da.data(), db.data(), g);
}

void swiglu_backward_rows(const ExpertWeights& w, int64_t H, int64_t I, int64_t n, const float* a, const float* b,
                          const float* dy, float* da, float* db, float* dx) {
  if (n == 0) return;
  // dh [n, I] = dy·Wd, then through silu(a)·b.
  gemm(false, false, n, I, H, dy, H, w.down.data(), I, 0.0f, da, I);
  for (int64_t i = 0; i < n * I; ++i) {
    const float av = a[i], s = sigmoid(av), dh = da[i];
    db[i] = dh * av * s;
    da[i] = dh * b[i] * s * (1.0f + av * (1.0f - s));
  }
  gemm(false, false, n, H, I, da, I, w.gate.data(), H, 0.0f, dx, H);
  gemm(false, false, n, H, I, db, I, w.up.data(), H, 1.0f, dx, H);
}

void swiglu_weight_grads(int64_t H, int64_t I, int64_t n, const float* x, const float* h, const float* dy,
                         const float* da, const float* db, ExpertWeights& g) {
  if (n == 0) return;
  gemm(true, false, H, I, n, dy, H, h, I, 1.0f, g.down.data(), I);   // dWd [H, I] += dyᵀ·h
  gemm(true, false, I, H, n, da, I, x, H, 1.0f, g.gate.data(), H);   // dWg [I, H] += daᵀ·x
  gemm(true, false, I, H, n, db, I, x, H, 1.0f, g.up.data(), H);     // dWu [I, H] += dbᵀ·x
}

void experts_forward(const ExpertGroup& g, const float* x, float* y, std::vector<FfnCache>& caches) {
  const int64_t H = g.cfg->H(), I = g.cfg->I();
  const int EL = g.cfg->experts_per_rank();
  SQZ_CHECK(g.tile_rows >= 1, "experts: tiles of ", g.tile_rows, " rows");
  caches.resize(size_t(EL));
  for (int e = 0; e < EL; ++e) {
    const int64_t b = g.offsets[size_t(e)], n = g.offsets[size_t(e + 1)] - b;
    FfnCache& c = caches[size_t(e)];
    c.x.assign(x + b * H, x + (b + n) * H);
    for (auto* v : {&c.a, &c.b, &c.h}) v->resize(size_t(n * I));
    for (int64_t r = 0; r < n; r += g.tile_rows) {
      const int64_t m = std::min(g.tile_rows, n - r);
      swiglu_forward_rows(g.weights->experts[size_t(g.rank * EL + e)], H, I, m, c.x.data() + r * H,
                          y + (b + r) * H, c.a.data() + r * I, c.b.data() + r * I, c.h.data() + r * I);
    }
  }
}

void experts_backward(const ExpertGroup& g, const std::vector<FfnCache>& caches, const float* dy, float* dx,
                      MoeWeights& grads) {
  const int64_t H = g.cfg->H(), I = g.cfg->I();
  const int EL = g.cfg->experts_per_rank();
  SQZ_CHECK(g.tile_rows >= 1, "experts: tiles of ", g.tile_rows, " rows");
  for (int e = 0; e < EL; ++e) {
    const int64_t b = g.offsets[size_t(e)], n = g.offsets[size_t(e + 1)] - b;
    const int ge = g.rank * EL + e;
    const FfnCache& c = caches[size_t(e)];
    std::vector<float> da(size_t(n * I)), db(size_t(n * I));
    for (int64_t r = 0; r < n; r += g.tile_rows) {
      const int64_t m = std::min(g.tile_rows, n - r);
      swiglu_backward_rows(g.weights->experts[size_t(ge)], H, I, m, c.a.data() + r * I, c.b.data() + r * I,
                           dy + (b + r) * H, da.data() + r * I, db.data() + r * I, dx + (b + r) * H);
    }
    swiglu_weight_grads(H, I, n, c.x.data(), c.h.data(), dy + b * H, da.data(), db.data(), grads.experts[size_t(ge)]);
  }
}

}  // namespace squeeze::mok
