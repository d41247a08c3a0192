// mok/mxfp8.cpp — the scalar reference and the kernel choice.
#include "mok/mxfp8.h"

#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "core/error.h"

namespace squeeze::mok {

namespace {

void encode_ref(const float* x, int64_t n, uint8_t* elems, uint8_t* scales) {
  SQZ_CHECK(n % kMxBlock == 0, "mxfp8: ", n, " values are not whole blocks of 32");
  for (int64_t b = 0; b < n / kMxBlock; ++b) {
    const float* xb = x + b * kMxBlock;
    uint8_t* eb = elems + b * kMxBlock;
    float amax = 0;
    bool finite = true;
    for (int64_t i = 0; i < kMxBlock; ++i) {
      finite = finite && std::isfinite(xb[i]);
      amax = std::max(amax, std::fabs(xb[i]));
    }
    if (!finite) {
      scales[b] = 0xFF;
      for (int64_t i = 0; i < kMxBlock; ++i) eb[i] = 0x7F;
      continue;
    }
    if (amax == 0) {
      scales[b] = 0;
      for (int64_t i = 0; i < kMxBlock; ++i) eb[i] = std::signbit(xb[i]) ? 0x80 : 0x00;
      continue;
    }
    const int e = mxfp8_scale_exponent(amax);
    scales[b] = e8m0_from_exponent(e);
    const float inv = std::ldexp(1.0f, -e);  // exact: e in [-127, 119]
    for (int64_t i = 0; i < kMxBlock; ++i) eb[i] = f32_to_e4m3(xb[i] * inv, /*saturate=*/true);
  }
}

void decode_ref(const uint8_t* elems, const uint8_t* scales, int64_t n, float* y) {
  SQZ_CHECK(n % kMxBlock == 0, "mxfp8: ", n, " values are not whole blocks of 32");
  for (int64_t b = 0; b < n / kMxBlock; ++b) {
    const float s = e8m0_to_f32(scales[b]);
    for (int64_t i = 0; i < kMxBlock; ++i) y[b * kMxBlock + i] = e4m3_to_f32(elems[b * kMxBlock + i]) * s;
  }
}

const Mxfp8Kernels kReference{encode_ref, decode_ref};

}  // namespace

int mxfp8_scale_exponent(float amax) {
  int exp2 = 0;
  std::frexp(amax, &exp2);  // amax = m · 2^exp2, m in [0.5, 1): floor(log2 amax) = exp2 − 1
  return std::clamp(exp2 - 1 - 8, -127, 127);
}

const Mxfp8Kernels& mxfp8_reference() { return kReference; }

const Mxfp8Kernels* mxfp8_for(kernels::cpu::Isa isa) {
  using kernels::cpu::Isa;
  if (isa == Isa::Scalar) return &kReference;
  if (!kernels::cpu::ops_for(isa)) return nullptr;  // not built, or not this CPU
  return isa == Isa::Avx2 ? &detail::kMxfp8Avx2 : &detail::kMxfp8Avx512;
}

const Mxfp8Kernels& mxfp8() {
  static const Mxfp8Kernels& k = *mxfp8_for(kernels::cpu::active_isa());
  return k;
}

}  // namespace squeeze::mok
