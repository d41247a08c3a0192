// quant/blocks.h — the GGUF block layouts squeeze computes with, byte for byte as the
// GGUF ecosystem stores them (ggml-common.h in ggml is the format's definition). All fields little-endian; fp16 fields are IEEE half
// bit patterns. The static_asserts pin each size to gguf/ggml_type.cpp's geometry.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace squeeze::quant {

inline constexpr int kQK = 32;     // elements per Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / MXFP4 block
inline constexpr int kQK_K = 256;  // elements per K-quant super-block
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales+mins of Q4_K/Q5_K

// value = d * qs[i]
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};

// value = d * (nibble - 8); byte j: element j in the low nibble, element j+16 in the high.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// value = d * nibble + m; nibbles as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};

// value = d * (q - 16), q = nibble | (bit j of qh) << 4 for element j (qh read as a
// little-endian u32); nibbles as in Q4_0.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// value = d * q + m, q 5-bit as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// value = kMxfp4Values[nibble] · e8m0_half(e); nibbles as in Q4_0. The table holds the
// E2M1 values doubled (so they are integers), hence the halved E8M0 scale. No f16 field:
// the scale byte comes first and the block is 17 bytes, unaligned in a row.
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK / 2];
};
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e − 128) exactly, as ggml's ggml_e8m0_to_fp32_half builds it from bits: e = 0 and 1
// give the subnormals 2^-128 and 2^-127, e = 255 gives 2^127 (not NaN, as the MX spec
// would have it).
constexpr float e8m0_half(uint8_t e) {
  return std::bit_cast<float>(e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23);
}

// 8 sub-blocks of 32: value = d*sc[j]*q - dmin*m[j], q in [0,15], sc/m 6-bit packed in
// `scales`; qs chunk c (32 bytes) holds sub-block 2c (low nibbles) and 2c+1 (high).
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};

// As Q4_K with a fifth bit per element: bit 2c / 2c+1 of qh[l] is the high bit of
// element l of sub-block 2c / 2c+1; q in [0,31].
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16: value = d * scales[j] * (q - 32), q 6-bit from 4 low bits in ql
// and 2 high bits in qh (layout in quant/kquant_scalar.cpp). d comes last.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

// The activation partner of the K-quants: value = d * qs[i]; bsums[g] = sum of the 16
// codes of group g, so a weight type's per-sub-block min term costs one multiply.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(offsetof(BlockQ6_K, d) == 208);
static_assert(offsetof(BlockQ8_K, bsums) == 260);

// Unpacks sub-block j's 6-bit (scale, min) of a Q4_K/Q5_K block.
inline void k_scale_min(const uint8_t* s, int j, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// Packs 8 scales and 8 mins (each < 64) into the 12-byte layout k_scale_min reads.
inline void k_pack_scale_min(const uint8_t sc[8], const uint8_t m[8], uint8_t out[kKScaleBytes]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4));
  }
}

}  // namespace squeeze::quant
