// quant/dot_float_avx2.cpp — AVX2 dots of F32, F16 and BF16 weight rows with f32
// activation rows (the plain types' dot_type). Compiled for AVX2.
#include "quant/avx2_common.h"
#include "quant/kernels_impl.h"

namespace squeeze::quant::impl {
namespace {

using namespace avx2;

enum class Kind { F32, F16, BF16 };

template <Kind K>
inline __m256 load8(const void* w, int64_t i) {
  if constexpr (K == Kind::F32) {
    return _mm256_loadu_ps(static_cast<const float*>(w) + i);
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + i));
    if constexpr (K == Kind::F16) return _mm256_cvtph_ps(h);
    else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <Kind K>
inline float load1(const void* w, int64_t i) {
  if constexpr (K == Kind::F32) return static_cast<const float*>(w)[i];
  else if constexpr (K == Kind::F16) return half(static_cast<const uint16_t*>(w)[i]);
  else return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(static_cast<const uint16_t*>(w)[i]) << 16)));
}

// Two accumulators per row hide the FMA latency; the tail runs scalar.
template <Kind K, int NT>
void dot_rows(int64_t n, const void* w, const void* a, int64_t stride, float* out) {
  const float* y[NT];
  __m256 acc0[NT], acc1[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = reinterpret_cast<const float*>(static_cast<const char*>(a) + t * stride);
    acc0[t] = acc1[t] = _mm256_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = load8<K>(w, i), w1 = load8<K>(w, i + 8);
    for (int t = 0; t < NT; ++t) {
      acc0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(y[t] + i), acc0[t]);
      acc1[t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(y[t] + i + 8), acc1[t]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    float s = hsum(_mm256_add_ps(acc0[t], acc1[t]));
    for (int64_t j = i; j < n; ++j) s += load1<K>(w, j) * y[t][j];
    out[t] = s;
  }
}

template <Kind K>
void multi(int64_t n, const void* w, const void* a, int64_t stride, int nt, float* out) {
  switch (nt) {
    case 1: return dot_rows<K, 1>(n, w, a, stride, out);
    case 2: return dot_rows<K, 2>(n, w, a, stride, out);
    case 3: return dot_rows<K, 3>(n, w, a, stride, out);
    default: return dot_rows<K, 4>(n, w, a, stride, out);
  }
}

template <Kind K>
float dot(int64_t n, const void* w, const void* a) {
  float r;
  dot_rows<K, 1>(n, w, a, 0, &r);
  return r;
}

}  // namespace

float avx2_dot_f32(int64_t n, const void* w, const void* a) { return dot<Kind::F32>(n, w, a); }
float avx2_dot_f16(int64_t n, const void* w, const void* a) { return dot<Kind::F16>(n, w, a); }
float avx2_dot_bf16(int64_t n, const void* w, const void* a) { return dot<Kind::BF16>(n, w, a); }
void avx2_multi_f32(int64_t n, const void* w, const void* a, int64_t s, int nt, float* out) { multi<Kind::F32>(n, w, a, s, nt, out); }
void avx2_multi_f16(int64_t n, const void* w, const void* a, int64_t s, int nt, float* out) { multi<Kind::F16>(n, w, a, s, nt, out); }
void avx2_multi_bf16(int64_t n, const void* w, const void* a, int64_t s, int nt, float* out) { multi<Kind::BF16>(n, w, a, s, nt, out); }

}  // namespace squeeze::quant::impl
