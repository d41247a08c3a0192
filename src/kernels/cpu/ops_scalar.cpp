// kernels/cpu/ops_scalar.cpp — the scalar reference of every f32 kernel.
// Plain loops, written for clarity; SIMD variants are tested against these.
#include <cmath>

#include "core/dtype.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/rope_tables.h"

namespace squeeze::kernels::cpu {
namespace {

float dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void gemv(const float* A, int64_t lda, const float* x, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) y[r] = dot(A + r * lda, x, cols);
}

void gemm_nt(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t N,
             int64_t K) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) C[m * ldc + n] = dot(A + m * lda, B + n * ldb, K);
}

void gemm_panel(const float* A, int64_t lda, const float* P, float* C, int64_t ldc, int64_t M, int nc, int64_t K,
                bool accumulate) {
  for (int64_t m = 0; m < M; ++m)
    for (int j = 0; j < nc; ++j) {
      float s = accumulate ? C[m * ldc + j] : 0.0f;
      for (int64_t k = 0; k < K; ++k) s += A[m * lda + k] * P[k * kGemmPanel + j];
      C[m * ldc + j] = s;
    }
}

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * (w ? w[i] : 1.0f);
}

void rope(float* x, const RopeParams& p) {
  const int64_t rot = p.rot_dim > 0 ? p.rot_dim : p.head_dim;
  for (int64_t h = 0; h < p.n_heads; ++h) {
    float* v = x + h * p.head_dim;
    for (int64_t i = 0; i < rot / 2; ++i) {
      float c, s;
      rope_angle(p, i, rot, &c, &s);
      const int64_t i0 = p.style == RopeStyle::Normal ? 2 * i : i;
      const int64_t i1 = p.style == RopeStyle::Normal ? 2 * i + 1 : i + rot / 2;
      const float a = v[i0], b = v[i1];
      v[i0] = a * c - b * s;
      v[i1] = a * s + b * c;
    }
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::fmax(mx, x[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

float silu1(float v) { return v / (1.0f + std::exp(-v)); }

void silu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = silu1(x[i]);
}

void swiglu(const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = silu1(gate[i]) * up[i];
}

float gelu1(float v) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
}

void gelu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = gelu1(x[i]);
}

void geglu(const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = gelu1(gate[i]) * up[i];
}

void add(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void f16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f16_to_f32(x[i]);
}
void bf16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_f32(x[i]);
}
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16(x[i]);
}
void f32_to_bf16_row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16(x[i]);
}

}  // namespace

const Ops& reference_ops() {
  static const Ops table{
      .isa = Isa::Scalar,
      .dot = dot,
      .axpy = axpy,
      .gemv = gemv,
      .gemm_nt = gemm_nt,
      .gemm_panel = gemm_panel,
      .rmsnorm = rmsnorm,
      .rope = rope,
      .softmax = softmax,
      .silu = silu,
      .swiglu = swiglu,
      .gelu = gelu,
      .geglu = geglu,
      .add = add,
      .mul = mul,
      .f16_to_f32 = f16_to_f32_row,
      .bf16_to_f32 = bf16_to_f32_row,
      .f32_to_f16 = f32_to_f16_row,
      .f32_to_bf16 = f32_to_bf16_row,
  };
  return table;
}

}  // namespace squeeze::kernels::cpu
