// quant/dot_q45k_avx2.cpp — AVX2 dots of Q4_K and Q5_K weight rows with Q8_K
// activation rows (the loop is quant/q45k_rows.h; here the scale step is a madd and an
// add). Compiled for AVX2.
#include <cstring>
#include <type_traits>

#include "quant/avx2_common.h"
#include "quant/blocks.h"
#include "quant/kernels_impl.h"

namespace squeeze::quant::impl {
namespace {

using namespace avx2;

inline __m256i accumulate_scaled(__m256i acc, __m256i p16, __m256i scale) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, scale));
}

#include "quant/q45k_rows.h"

template <bool Q5>
void dot_multi(int64_t n, const void* w, const void* a, int64_t stride, int nt, float* out) {
  switch (nt) {
    case 1: return q45k_rows<Q5, 1>(n, w, a, stride, out);
    case 2: return q45k_rows<Q5, 2>(n, w, a, stride, out);
    case 3: return q45k_rows<Q5, 3>(n, w, a, stride, out);
    default: return q45k_rows<Q5, 4>(n, w, a, stride, out);
  }
}

}  // namespace

float avx2_dot_q4_k(int64_t n, const void* w, const void* a) {
  float r;
  q45k_rows<false, 1>(n, w, a, 0, &r);
  return r;
}
void avx2_multi_q4_k(int64_t n, const void* w, const void* a, int64_t s, int nt, float* out) {
  dot_multi<false>(n, w, a, s, nt, out);
}
float avx2_dot_q5_k(int64_t n, const void* w, const void* a) {
  float r;
  q45k_rows<true, 1>(n, w, a, 0, &r);
  return r;
}
void avx2_multi_q5_k(int64_t n, const void* w, const void* a, int64_t s, int nt, float* out) {
  dot_multi<true>(n, w, a, s, nt, out);
}

}  // namespace squeeze::quant::impl
