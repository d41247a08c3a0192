// quant/kernels_impl.h — internal: the per-type kernel functions the traits tables
// (traits.cpp) point at. ref_* are the scalar references; avx2_* live in the
// dot_*_avx2.cpp translation units compiled for AVX2.
#pragma once

#include <cstdint>

namespace squeeze::quant::impl {

// ---- scalar references: quantize (importance may be null) / dequantize / dot ----
#define SQZ_QUANT_REF_DECL(T)                                                      \
  void ref_quantize_##T(const float* x, void* dst, int64_t n, const float* importance); \
  void ref_dequantize_##T(const void* src, float* y, int64_t n);                   \
  float ref_dot_##T(int64_t n, const void* w, const void* a);
SQZ_QUANT_REF_DECL(f32)
SQZ_QUANT_REF_DECL(f16)
SQZ_QUANT_REF_DECL(bf16)
SQZ_QUANT_REF_DECL(q8_0)
SQZ_QUANT_REF_DECL(q4_0)
SQZ_QUANT_REF_DECL(q4_1)
SQZ_QUANT_REF_DECL(q5_0)
SQZ_QUANT_REF_DECL(q5_1)
SQZ_QUANT_REF_DECL(mxfp4)
SQZ_QUANT_REF_DECL(q4_k)
SQZ_QUANT_REF_DECL(q5_k)
SQZ_QUANT_REF_DECL(q6_k)
#undef SQZ_QUANT_REF_DECL
void ref_quantize_q8_k(const float* x, void* dst, int64_t n, const float* importance);
void ref_dequantize_q8_k(const void* src, float* y, int64_t n);
// ggml's round-to-nearest reference quantizers (q4q5_scalar.cpp): the bytes ggml and the
// gguf package write, for the cross-check with them; the table's quantizers search.
void rtn_quantize_q4_1(const float* x, void* dst, int64_t n);
void rtn_quantize_q5_0(const float* x, void* dst, int64_t n);
void rtn_quantize_q5_1(const float* x, void* dst, int64_t n);
void rtn_quantize_mxfp4(const float* x, void* dst, int64_t n);  // mxfp4_scalar.cpp
// Round-to-nearest activation quantizers.
void ref_quantize_act_q8_0(const float* x, void* dst, int64_t n);
void ref_quantize_act_q8_k(const float* x, void* dst, int64_t n);

// ---- AVX2 ----
float avx2_dot_f32(int64_t n, const void* w, const void* a);
float avx2_dot_f16(int64_t n, const void* w, const void* a);
float avx2_dot_bf16(int64_t n, const void* w, const void* a);
void avx2_multi_f32(int64_t n, const void* w, const void* a, int64_t stride, int nt, float* out);
void avx2_multi_f16(int64_t n, const void* w, const void* a, int64_t stride, int nt, float* out);
void avx2_multi_bf16(int64_t n, const void* w, const void* a, int64_t stride, int nt, float* out);
#define SQZ_QUANT_AVX2_DECL(T)                                \
  float avx2_dot_##T(int64_t n, const void* w, const void* a); \
  void avx2_multi_##T(int64_t n, const void* w, const void* a, int64_t stride, int nt, float* out);
SQZ_QUANT_AVX2_DECL(q8_0)
SQZ_QUANT_AVX2_DECL(q4_0)
SQZ_QUANT_AVX2_DECL(q4_1)
SQZ_QUANT_AVX2_DECL(q5_0)
SQZ_QUANT_AVX2_DECL(q5_1)
SQZ_QUANT_AVX2_DECL(mxfp4)
SQZ_QUANT_AVX2_DECL(q4_k)
SQZ_QUANT_AVX2_DECL(q5_k)
SQZ_QUANT_AVX2_DECL(q6_k)
#undef SQZ_QUANT_AVX2_DECL
// nr ≤ kMaxDotRows weight rows (at `stride` bytes) times one Q8_0 activation row: the
// GEMV's row group; out[r] equals vec_dot of row r bit for bit.
void avx2_wrows_q4_0(int64_t n, const void* w, int64_t stride, int nr, const void* a, float* out);
void avx2_wrows_q4_1(int64_t n, const void* w, int64_t stride, int nr, const void* a, float* out);
void avx2_wrows_q5_0(int64_t n, const void* w, int64_t stride, int nr, const void* a, float* out);
void avx2_wrows_q5_1(int64_t n, const void* w, int64_t stride, int nr, const void* a, float* out);
void avx2_wrows_mxfp4(int64_t n, const void* w, int64_t stride, int nr, const void* a, float* out);
// nr weight rows × nt Q8_0 activation rows (the GEMM's micro-tile): out[r * nt + t]
// equals vec_dot of row r and activation t bit for bit.
void avx2_tile_q4_0(int64_t n, const void* w, int64_t ws, int nr, const void* a, int64_t as, int nt, float* out);
void avx2_tile_q4_1(int64_t n, const void* w, int64_t ws, int nr, const void* a, int64_t as, int nt, float* out);
void avx2_tile_q5_0(int64_t n, const void* w, int64_t ws, int nr, const void* a, int64_t as, int nt, float* out);
void avx2_tile_q5_1(int64_t n, const void* w, int64_t ws, int nr, const void* a, int64_t as, int nt, float* out);
void avx2_tile_mxfp4(int64_t n, const void* w, int64_t ws, int nr, const void* a, int64_t as, int nt, float* out);
// ---- AVX-512 (F/BW/VL/DQ + VNNI), dot_avx512.cpp; the other types keep their AVX2 kernels ----
#define SQZ_QUANT_AVX512_DECL(T)                                \
  float avx512_dot_##T(int64_t n, const void* w, const void* a); \
  void avx512_multi_##T(int64_t n, const void* w, const void* a, int64_t stride, int nt, float* out);
SQZ_QUANT_AVX512_DECL(f32)
SQZ_QUANT_AVX512_DECL(f16)
SQZ_QUANT_AVX512_DECL(bf16)
SQZ_QUANT_AVX512_DECL(q8_0)
SQZ_QUANT_AVX512_DECL(q4_k)
SQZ_QUANT_AVX512_DECL(q5_k)
SQZ_QUANT_AVX512_DECL(q6_k)
#undef SQZ_QUANT_AVX512_DECL
void avx2_quantize_act_q8_0(const float* x, void* dst, int64_t n);
void avx2_quantize_act_q8_k(const float* x, void* dst, int64_t n);
// dequant_avx2.cpp: bit-identical to ref_dequantize_q4_k / ref_dequantize_q6_k.
void avx2_dequantize_q4_k(const void* src, float* y, int64_t n);
void avx2_dequantize_q6_k(const void* src, float* y, int64_t n);
// dot_q8_avx2.cpp: bit-identical to ref_dequantize_* of the 32-element types.
void avx2_dequantize_q8_0(const void* src, float* y, int64_t n);
void avx2_dequantize_q4_0(const void* src, float* y, int64_t n);
void avx2_dequantize_q4_1(const void* src, float* y, int64_t n);
void avx2_dequantize_q5_0(const void* src, float* y, int64_t n);
void avx2_dequantize_q5_1(const void* src, float* y, int64_t n);
void avx2_dequantize_mxfp4(const void* src, float* y, int64_t n);

}  // namespace squeeze::quant::impl
