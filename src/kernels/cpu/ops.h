// kernels/cpu/ops.h — the f32 CPU kernels: one table of function pointers per ISA.
//
// Every op has a plain scalar reference (ops_scalar.cpp) and SIMD variants in their
// own translation units (ops_avx2.cpp, ops_avx512.cpp). The active table is chosen once, at first
// use, from CPU feature detection; tests may fetch any table to compare variants.
// Kernels are pure: no allocation, no threads (see parallel.h for threaded wrappers).
#pragma once

#include <cstdint>
#include <vector>

namespace squeeze::kernels::cpu {

enum class Isa { Scalar, Avx2, Avx512 };
const char* isa_name(Isa isa);
// The short name SQUEEZE_ISA takes: scalar, avx2, avx512.
const char* isa_env_name(Isa isa);

// RoPE pairing: Normal rotates (x[2i], x[2i+1]) (llama); NeoX rotates (x[i], x[i + d/2]).
enum class RopeStyle { Normal, NeoX };

struct RopeParams {
  int64_t n_heads = 1;
  int64_t head_dim = 0;   // stride between heads in the row
  int64_t rot_dim = 0;    // leading dims rotated (<= head_dim, even); 0 means head_dim
  int64_t position = 0;   // absolute position of this row (includes any offset)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  // linear position scaling: angle uses position * freq_scale
  // Per-pair divisors of the frequency (rot_dim / 2 of them; null: none): Llama 3's
  // `rope_freqs` tensor, as ggml_rope_ext takes it.
  const float* freq_factors = nullptr;
  RopeStyle style = RopeStyle::Normal;
};

// Weight rows per packed panel of the packed GEMM (Ops::gemm_panel).
inline constexpr int kGemmPanel = 16;

struct Ops {
  Isa isa;
  // sum_i a[i] * b[i]
  float (*dot)(const float* a, const float* b, int64_t n);
  // y += alpha * x
  void (*axpy)(float alpha, const float* x, float* y, int64_t n);
  // y[rows] = A[rows, cols] · x[cols]; A row-major with row stride lda (>= cols).
  void (*gemv)(const float* A, int64_t lda, const float* x, float* y, int64_t rows, int64_t cols);
  // C[M, N] (row stride ldc) = A[M, K] · B[N, K]^T: B holds N weight rows of length K,
  // the layout of every projection in a GGUF file. Overwrites C.
  void (*gemm_nt)(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
                  int64_t M, int64_t N, int64_t K);
  // C[M, nc] (row stride ldc) = (accumulate ? C : 0) + A[M, K] · P for one packed panel
  // of weight rows: P[k * kGemmPanel + j] = B[j][k] for j < nc <= kGemmPanel (columns
  // nc.. of P are ignored; P 32-byte aligned). The prefill GEMM's inner kernel (parallel.h gemm_packed).
  void (*gemm_panel)(const float* A, int64_t lda, const float* P, float* C, int64_t ldc, int64_t M, int nc, int64_t K,
                     bool accumulate);
  // Two panels at once, where a table has a kernel for it (null otherwise): C columns
  // 0..15 from the full panel P0, columns 16..16 + nc1 from P1 (nc1 ≤ kGemmPanel). Every
  // C element gets exactly the operations gemm_panel would give it (tested bit for bit);
  // sharing each broadcast of A between two panels is what makes it faster.
  void (*gemm_panel_pair)(const float* A, int64_t lda, const float* P0, const float* P1, float* C, int64_t ldc,
                          int64_t M, int nc1, int64_t K, bool accumulate) = nullptr;
  // y = x / sqrt(mean(x^2) + eps) * w   (w may be null: no scale). y may alias x.
  void (*rmsnorm)(const float* x, const float* w, float* y, int64_t n, float eps);
  // In place on one token's row of n_heads * head_dim values.
  void (*rope)(float* x, const RopeParams& p);
  // Numerically stable softmax in place: subtract the max, exponentiate, normalise.
  void (*softmax)(float* x, int64_t n);
  // y = x * sigmoid(x)
  void (*silu)(const float* x, float* y, int64_t n);
  // y = silu(gate) * up
  void (*swiglu)(const float* gate, const float* up, float* y, int64_t n);
  // y = gelu(x), tanh approximation (as GPT-2 / ViT / gemma use)
  void (*gelu)(const float* x, float* y, int64_t n);
  // y = gelu(gate) * up, tanh approximation: the GeGLU of Gemma's FFN. y may alias gate.
  void (*geglu)(const float* gate, const float* up, float* y, int64_t n);
  void (*add)(const float* a, const float* b, float* y, int64_t n);
  void (*mul)(const float* a, const float* b, float* y, int64_t n);
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*bf16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
  void (*f32_to_bf16)(const float* x, uint16_t* y, int64_t n);
};

// The scalar reference table (always available).
const Ops& reference_ops();
// The table for `isa`, or nullptr when this build or this CPU lacks it.
const Ops* ops_for(Isa isa);
// Every ISA this build has a table for and this CPU can run, worst to best (what the
// kernel tests iterate over).
std::vector<Isa> available_isas();
// The best table this CPU supports; chosen once. SQUEEZE_ISA=scalar|avx2|avx512 (the
// tables this build has) forces a lower one; any other value, or a table this CPU cannot
// run, is an error. The quantized kernels (quant/traits.h) follow the same choice.
const Ops& ops();
Isa active_isa();
const char* active_isa_name();

}  // namespace squeeze::kernels::cpu
