// mok/mxfp8.h — MXFP8 payloads (OCP Microscaling: blocks of 32 FP8 E4M3 elements sharing
// one E8M0 power-of-two scale) for MoK's dispatch and combine: a quarter of f32's bytes,
// half of bf16's, plus one scale byte per 32 values.
//
// The OCP rule: a block's scale is 2^(floor(log2(amax)) − 8) (8 = E4M3's largest exponent),
// each element x / scale rounded to nearest even and saturated at ±448 (a block whose amax
// has a mantissa above 1.75 saturates its largest elements: at most 1/8 of their value);
// an all-zero block has the scale byte 0 (2^−127); a block holding Inf or NaN has the
// scale byte 0xFF (NaN) and decodes to NaN. Scales are clamped to E8M0's 2^−127 … 2^127.
//
// One scalar reference (built on core/dtype.h's conversions) and AVX2 / AVX-512 kernels,
// bit-identical to it; the kernel table follows the CPU kernels' ISA choice (SQUEEZE_ISA).
#pragma once

#include <cstdint>

#include "kernels/cpu/ops.h"

namespace squeeze::mok {

inline constexpr int64_t kMxBlock = 32;

struct Mxfp8Kernels {
  // n % 32 == 0: elems[n] E4M3 bytes, scales[n / 32] E8M0 bytes.
  void (*encode)(const float* x, int64_t n, uint8_t* elems, uint8_t* scales);
  void (*decode)(const uint8_t* elems, const uint8_t* scales, int64_t n, float* y);
};

const Mxfp8Kernels& mxfp8_reference();
// The kernels for `isa`; nullptr when this build or CPU lacks it.
const Mxfp8Kernels* mxfp8_for(kernels::cpu::Isa isa);
// The kernels of the active ISA (kernels::cpu::active_isa()).
const Mxfp8Kernels& mxfp8();

// Bytes of n values (n % 32 == 0) as MXFP8: elements and scales.
constexpr int64_t mxfp8_bytes(int64_t n) { return n + n / kMxBlock; }

// The scale exponent (of 2) the OCP rule gives a block of amax (finite, > 0), clamped to
// E8M0's range.
int mxfp8_scale_exponent(float amax);

namespace detail {
extern const Mxfp8Kernels kMxfp8Avx2, kMxfp8Avx512;
}

}  // namespace squeeze::mok
