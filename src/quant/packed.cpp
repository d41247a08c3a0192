// quant/packed.cpp — repacking GGUF rows into the interleaved groups, the scalar reference
// tile (the definition the SIMD kernels match bit for bit) and the kernel choice.
#include "quant/packed.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <string_view>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/error.h"
#include "quant/blocks.h"
#include "quant/traits.h"

namespace squeeze::quant {

namespace impl {
// packed_avx512.cpp
void avx512_packed_tile_q4_k(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                             int64_t ldy, int n_valid);
void avx512_packed_tile_q6_k(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                             int64_t ldy, int n_valid);
void avx512_packed_gemv_q4_k(int64_t K, const void* const* groups, int ng, const void* a, float* const* y,
                             const int* n_valid);
void avx512_packed_gemv_q6_k(int64_t K, const void* const* groups, int ng, const void* a, float* const* y,
                             const int* n_valid);
void avx512_packed_tile_q4_1(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                             int64_t ldy, int n_valid);
void avx512_packed_gemv_q4_1(int64_t K, const void* const* groups, int ng, const void* a, float* const* y,
                             const int* n_valid);
void avx512_packed_tile_q8_0(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                             int64_t ldy, int n_valid);
void avx512_packed_gemv_q8_0(int64_t K, const void* const* groups, int ng, const void* a, float* const* y,
                             const int* n_valid);
// packed_avx2.cpp
void avx2_packed_tile_q4_k(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                           int64_t ldy, int n_valid);
void avx2_packed_tile_q6_k(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                           int64_t ldy, int n_valid);
void avx2_packed_gemv_q4_k(int64_t K, const void* const* groups, int ng, const void* a, float* const* y,
                           const int* n_valid);
void avx2_packed_gemv_q6_k(int64_t K, const void* const* groups, int ng, const void* a, float* const* y,
                           const int* n_valid);
void avx2_packed_tile_q4_1(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                           int64_t ldy, int n_valid);
void avx2_packed_gemv_q4_1(int64_t K, const void* const* groups, int ng, const void* a, float* const* y,
                           const int* n_valid);
void avx2_packed_tile_q8_0(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                           int64_t ldy, int n_valid);
void avx2_packed_gemv_q8_0(int64_t K, const void* const* groups, int ng, const void* a, float* const* y,
                           const int* n_valid);
// packed_avx2.cpp (MXFP4)
void avx2_packed_tile_mxfp4(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                            int64_t ldy, int n_valid);
void avx2_packed_gemv_mxfp4(int64_t K, const void* const* groups, int ng, const void* a, float* const* y,
                            const int* n_valid);
}  // namespace impl

namespace {

void pack_group_q4k(const uint8_t* src, int64_t row_bytes, int n_rows, int64_t nb, PackedQ4K* dst) {
  std::memset(dst, 0, static_cast<size_t>(nb) * sizeof(PackedQ4K));
  for (int r = 0; r < n_rows; ++r) {
    const auto* row = reinterpret_cast<const BlockQ4_K*>(src + r * row_bytes);
    for (int64_t i = 0; i < nb; ++i) {
      const BlockQ4_K& b = row[i];
      PackedQ4K& p = dst[i];
      p.d[r] = b.d;
      p.dmin[r] = b.dmin;
      for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        k_scale_min(b.scales, j, sc, m);
        p.scales[j][r] = sc;
        p.mins[j / 2][r][j % 2] = m;
      }
      for (int c = 0; c < 4; ++c)
        for (int q = 0; q < 8; ++q) std::memcpy(p.qs[c][q][r], b.qs + 32 * c + 4 * q, 4);
    }
  }
}

// The definition of the packed Q4_K product (quant/packed.h): exact integer sums per
// super-block, then two FMAs per block in block order.
void ref_packed_tile_q4k(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                         int64_t ldy, int n_valid) {
  const auto* g = static_cast<const PackedQ4K*>(group);
  const int64_t nb = K / kQK_K;
  for (int t = 0; t < nt; ++t) {
    const auto* act = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(a) + t * a_stride);
    for (int r = 0; r < n_valid; ++r) {
      float acc = 0.0f;
      for (int64_t i = 0; i < nb; ++i) {
        const PackedQ4K& p = g[i];
        const BlockQ8_K& x = act[i];
        int32_t sumi = 0, summ = 0;
        for (int c = 0; c < 4; ++c) {
          int32_t lo = 0, hi = 0;
          for (int q = 0; q < 8; ++q)
            for (int e = 0; e < 4; ++e) {
              const uint8_t byte = p.qs[c][q][r][e];
              lo += (byte & 0x0F) * x.qs[64 * c + 4 * q + e];
              hi += (byte >> 4) * x.qs[64 * c + 32 + 4 * q + e];
            }
          sumi += lo * p.scales[2 * c][r] + hi * p.scales[2 * c + 1][r];
        }
        for (int j = 0; j < 8; ++j) summ += p.mins[j / 2][r][j % 2] * (x.bsums[2 * j] + x.bsums[2 * j + 1]);
        const float dd = f16_to_f32(p.d[r]) * x.d, dm = f16_to_f32(p.dmin[r]) * x.d;
        acc = std::fma(dd, static_cast<float>(sumi), acc);
        acc = std::fma(-dm, static_cast<float>(summ), acc);
      }
      y[t * ldy + r] = acc;
    }
  }
}

// The 6-bit code (q + 32) of element k of a Q6_K block.
int q6k_code(const BlockQ6_K& b, int k) {
  const int half = k / 128, m = k % 128 / 32, l = k % 32;
  const uint8_t low = b.ql[64 * half + l + (m & 1) * 32];
  const int nib = m < 2 ? low & 0x0F : low >> 4;
  return nib | ((b.qh[32 * half + l] >> (2 * m)) & 3) << 4;
}

void pack_group_q6k(const uint8_t* src, int64_t row_bytes, int n_rows, int64_t nb, PackedQ6K* dst) {
  std::memset(dst, 0, static_cast<size_t>(nb) * sizeof(PackedQ6K));
  for (int r = 0; r < n_rows; ++r) {
    const auto* row = reinterpret_cast<const BlockQ6_K*>(src + r * row_bytes);
    for (int64_t i = 0; i < nb; ++i) {
      const BlockQ6_K& b = row[i];
      PackedQ6K& p = dst[i];
      p.d[r] = f16_to_f32(b.d);
      for (int h = 0; h < 16; ++h) p.scales[h / 2][r][h % 2] = b.scales[h];
      for (int k = 0; k < kQK_K; ++k) {
        const int u = q6k_code(b, k), h = k / 16, s = k % 16 / 4, e = k % 4;
        p.ql[2 * h + s / 2][r][e] |= static_cast<uint8_t>((u & 0x0F) << (4 * (s & 1)));
        p.qh[h][r][e] |= static_cast<uint8_t>((u >> 4) << (2 * s));
      }
    }
  }
}

// The definition of the packed Q6_K product (quant/packed.h).
void ref_packed_tile_q6k(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                         int64_t ldy, int n_valid) {
  const auto* g = static_cast<const PackedQ6K*>(group);
  const int64_t nb = K / kQK_K;
  for (int t = 0; t < nt; ++t) {
    const auto* act = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(a) + t * a_stride);
    for (int r = 0; r < n_valid; ++r) {
      float acc = 0.0f;
      for (int64_t i = 0; i < nb; ++i) {
        const PackedQ6K& p = g[i];
        const BlockQ8_K& x = act[i];
        int32_t sumi = 0, offset = 0;
        for (int h = 0; h < 16; ++h) {
          int32_t dot = 0;
          for (int w = 0; w < 16; ++w) {
            const int s = w / 4, e = w % 4;
            const int u = (p.ql[2 * h + s / 2][r][e] >> (4 * (s & 1)) & 0x0F) | (p.qh[h][r][e] >> (2 * s) & 3) << 4;
            dot += u * x.qs[16 * h + w];
          }
          const int sc = p.scales[h / 2][r][h % 2];
          sumi += sc * dot;
          offset += sc * x.bsums[h];
        }
        sumi -= 32 * offset;
        acc = std::fma(p.d[r] * x.d, static_cast<float>(sumi), acc);
      }
      y[t * ldy + r] = acc;
    }
  }
}

void pack_group_q41(const uint8_t* src, int64_t row_bytes, int n_rows, int64_t nb, PackedQ4_1* dst) {
  std::memset(dst, 0, static_cast<size_t>(nb) * sizeof(PackedQ4_1));
  for (int r = 0; r < n_rows; ++r) {
    const auto* row = reinterpret_cast<const BlockQ4_1*>(src + r * row_bytes);
    for (int64_t i = 0; i < nb; ++i) {
      PackedQ4_1& p = dst[i];
      p.d[r] = row[i].d;
      p.m[r] = row[i].m;
      for (int q = 0; q < 4; ++q) std::memcpy(p.qs[q][r], row[i].qs + 4 * q, 4);
    }
  }
}

// The tiles of the two 32-element types, whose activation rows are Q8_0 with block sums:
// `block(p, r, x, sum, acc)` folds row r's share of one block into its accumulator.
template <typename Group, typename Block>
void ref_tile_q8_0_act(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y, int64_t ldy,
                       int n_valid, Block block) {
  const auto* g = static_cast<const Group*>(group);
  const int64_t nb = K / kQK;
  for (int t = 0; t < nt; ++t) {
    const void* row = static_cast<const uint8_t*>(a) + t * a_stride;
    const auto* act = static_cast<const BlockQ8_0*>(row);
    const int16_t* sums = act_block_sums(row, K);
    for (int r = 0; r < n_valid; ++r) {
      float acc = 0.0f;
      for (int64_t i = 0; i < nb; ++i) acc = block(g[i], r, act[i], sums[i], acc);
      y[t * ldy + r] = acc;
    }
  }
}

// The definition of the packed Q4_1 product (quant/packed.h).
void ref_packed_tile_q41(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                         int64_t ldy, int n_valid) {
  ref_tile_q8_0_act<PackedQ4_1>(K, group, a, a_stride, nt, y, ldy, n_valid,
                                [](const PackedQ4_1& p, int r, const BlockQ8_0& x, int16_t sum, float acc) {
                                  int32_t sumi = 0;
                                  for (int q = 0; q < 4; ++q)
                                    for (int e = 0; e < 4; ++e) {
                                      const uint8_t byte = p.qs[q][r][e];
                                      sumi += (byte & 0x0F) * x.qs[4 * q + e] + (byte >> 4) * x.qs[16 + 4 * q + e];
                                    }
                                  const float ad = f16_to_f32(x.d);
                                  acc = std::fma(f16_to_f32(p.d[r]) * ad, static_cast<float>(sumi), acc);
                                  return std::fma(f16_to_f32(p.m[r]) * ad, static_cast<float>(sum), acc);
                                });
}

void pack_group_q80(const uint8_t* src, int64_t row_bytes, int n_rows, int64_t nb, PackedQ8_0* dst) {
  std::memset(dst, 0, static_cast<size_t>(nb) * sizeof(PackedQ8_0));
  for (int r = 0; r < n_rows; ++r) {
    const auto* row = reinterpret_cast<const BlockQ8_0*>(src + r * row_bytes);
    for (int64_t i = 0; i < nb; ++i) {
      PackedQ8_0& p = dst[i];
      p.d[r] = row[i].d;
      for (int k = 0; k < kQK; ++k) p.qs[k / 4][r][k % 4] = static_cast<uint8_t>(row[i].qs[k] + 128);
    }
  }
}

// The definition of the packed Q8_0 product (quant/packed.h).
void ref_packed_tile_q80(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                         int64_t ldy, int n_valid) {
  ref_tile_q8_0_act<PackedQ8_0>(K, group, a, a_stride, nt, y, ldy, n_valid,
                                [](const PackedQ8_0& p, int r, const BlockQ8_0& x, int16_t sum, float acc) {
                                  int32_t dot = 0;
                                  for (int k = 0; k < kQK; ++k) dot += p.qs[k / 4][r][k % 4] * x.qs[k];
                                  const int32_t sumi = dot - 128 * sum;
                                  return std::fma(f16_to_f32(p.d[r]) * f16_to_f32(x.d), static_cast<float>(sumi), acc);
                                });
}

void pack_group_mxfp4(const uint8_t* src, int64_t row_bytes, int n_rows, int64_t nb, PackedMXFP4* dst) {
  std::memset(dst, 0, static_cast<size_t>(nb) * sizeof(PackedMXFP4));
  for (int r = 0; r < n_rows; ++r) {
    const auto* row = reinterpret_cast<const BlockMXFP4*>(src + r * row_bytes);
    for (int64_t i = 0; i < nb; ++i) {
      PackedMXFP4& p = dst[i];
      p.e[r] = row[i].e;
      for (int q = 0; q < 4; ++q) std::memcpy(p.qs[q][r], row[i].qs + 4 * q, 4);
    }
  }
}

// The definition of the packed MXFP4 product (quant/packed.h): the signed table values
// directly (the SIMD kernels' offset form Σ u·a − 12·Σ a is the same integer), so the block
// sums go unused here.
void ref_packed_tile_mxfp4(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                           int64_t ldy, int n_valid) {
  ref_tile_q8_0_act<PackedMXFP4>(K, group, a, a_stride, nt, y, ldy, n_valid,
                                 [](const PackedMXFP4& p, int r, const BlockQ8_0& x, int16_t, float acc) {
                                   int32_t sumi = 0;
                                   for (int q = 0; q < 4; ++q)
                                     for (int e = 0; e < 4; ++e) {
                                       const uint8_t byte = p.qs[q][r][e];
                                       sumi += kMxfp4Values[byte & 0x0F] * x.qs[4 * q + e] +
                                               kMxfp4Values[byte >> 4] * x.qs[16 + 4 * q + e];
                                     }
                                   return std::fma(e8m0_half(p.e[r]) * f16_to_f32(x.d), static_cast<float>(sumi), acc);
                                 });
}

template <PackedTile Tile>
void ref_packed_gemv(int64_t K, const void* const* groups, int ng, const void* a, float* const* y, const int* n_valid) {
  for (int k = 0; k < ng; ++k) Tile(K, groups[k], a, 0, 1, y[k], 0, n_valid[k]);
}

}  // namespace

namespace {

struct KernelPair {
  PackedTile tile = nullptr;
  PackedGemv gemv = nullptr;
};

// The kernels of a packed type for an ISA: the scalar reference; AVX-512 VNNI where the CPU
// has it; AVX2 (`vpmaddubsw`) on the AVX2 ISA and on AVX-512 CPUs without VNNI. None for
// the other types (whose matrices then stay unpacked).
KernelPair kernel_pair(GgmlType type, kernels::cpu::Isa isa) {
  using kernels::cpu::Isa;
  const bool vnni = isa == Isa::Avx512 && cpu_features().has_avx512_vnni();
  const bool avx2 = (isa == Isa::Avx2 || (isa == Isa::Avx512 && !vnni)) && cpu_features().has_avx2_fma();
  switch (type) {
    case GgmlType::Q4_1:
      if (isa == Isa::Scalar) return {ref_packed_tile_q41, ref_packed_gemv<ref_packed_tile_q41>};
      if (vnni) return {impl::avx512_packed_tile_q4_1, impl::avx512_packed_gemv_q4_1};
      if (avx2) return {impl::avx2_packed_tile_q4_1, impl::avx2_packed_gemv_q4_1};
      return {};
    case GgmlType::Q8_0:
      if (isa == Isa::Scalar) return {ref_packed_tile_q80, ref_packed_gemv<ref_packed_tile_q80>};
      if (vnni) return {impl::avx512_packed_tile_q8_0, impl::avx512_packed_gemv_q8_0};
      if (avx2) return {impl::avx2_packed_tile_q8_0, impl::avx2_packed_gemv_q8_0};
      return {};
    case GgmlType::MXFP4:
      // No VNNI kernel (yet): on such CPUs MXFP4 stays unpacked (its AVX-512 dot).
      if (isa == Isa::Scalar) return {ref_packed_tile_mxfp4, ref_packed_gemv<ref_packed_tile_mxfp4>};
      if (vnni) return {};
      if (avx2) return {impl::avx2_packed_tile_mxfp4, impl::avx2_packed_gemv_mxfp4};
      return {};
    case GgmlType::Q4_K:
      if (isa == Isa::Scalar) return {ref_packed_tile_q4k, ref_packed_gemv<ref_packed_tile_q4k>};
      if (vnni) return {impl::avx512_packed_tile_q4_k, impl::avx512_packed_gemv_q4_k};
      if (avx2) return {impl::avx2_packed_tile_q4_k, impl::avx2_packed_gemv_q4_k};
      return {};
    case GgmlType::Q6_K:
      if (isa == Isa::Scalar) return {ref_packed_tile_q6k, ref_packed_gemv<ref_packed_tile_q6k>};
      if (vnni) return {impl::avx512_packed_tile_q6_k, impl::avx512_packed_gemv_q6_k};
      if (avx2) return {impl::avx2_packed_tile_q6_k, impl::avx2_packed_gemv_q6_k};
      return {};
    default: return {};
  }
}

}  // namespace

PackedGemv packed_gemv(GgmlType type, kernels::cpu::Isa isa) { return kernel_pair(type, isa).gemv; }

PackedTile packed_tile(GgmlType type, kernels::cpu::Isa isa) { return kernel_pair(type, isa).tile; }

bool packs(GgmlType type) {
  static const bool enabled = [] {
    const char* e = std::getenv("SQUEEZE_REPACK");
    return !(e && std::string_view(e) == "0");
  }();
  const auto isa = kernels::cpu::active_isa();
  return enabled && isa != kernels::cpu::Isa::Scalar && packed_tile(type, isa) != nullptr;
}

namespace {
// The packed types whose blocks are 32 elements (Q8_0 activations with block sums).
bool block32(GgmlType type) { return type == GgmlType::Q4_1 || type == GgmlType::Q8_0 || type == GgmlType::MXFP4; }
// Elements per packed block: a K-quant super-block, or a 32-element block.
int64_t packed_block(GgmlType type) { return block32(type) ? kQK : kQK_K; }
}  // namespace

bool packed_needs_act_sums(GgmlType type) { return block32(type); }

void write_act_block_sums(void* row, int64_t K) {
  const auto* blocks = static_cast<const BlockQ8_0*>(row);
  auto* sums = reinterpret_cast<int16_t*>(static_cast<uint8_t*>(row) + K / kQK * static_cast<int64_t>(sizeof(BlockQ8_0)));
  for (int64_t i = 0; i < K / kQK; ++i) {
    int s = 0;
    for (int j = 0; j < kQK; ++j) s += blocks[i].qs[j];
    sums[i] = static_cast<int16_t>(s);
  }
}

int64_t packed_group_bytes(GgmlType type, int64_t cols) {
  size_t bytes = 0;
  switch (type) {
    case GgmlType::Q4_K: bytes = sizeof(PackedQ4K); break;
    case GgmlType::Q6_K: bytes = sizeof(PackedQ6K); break;
    case GgmlType::Q4_1: bytes = sizeof(PackedQ4_1); break;
    case GgmlType::Q8_0: bytes = sizeof(PackedQ8_0); break;
    case GgmlType::MXFP4: bytes = sizeof(PackedMXFP4); break;
    default: fail("packed weights: no packed layout for ", traits(type).name);
  }
  const int64_t block = packed_block(type);
  SQZ_CHECK(cols > 0 && cols % block == 0, "packed weights: row length ", cols, " is not a multiple of ", block);
  return cols / block * static_cast<int64_t>(bytes);
}

int64_t packed_bytes(GgmlType type, int64_t rows, int64_t cols) {
  return (rows + kPackRows - 1) / kPackRows * packed_group_bytes(type, cols);
}

void pack_matrix(GgmlType type, const void* src, int64_t rows, int64_t cols, void* dst) {
  const int64_t gb = packed_group_bytes(type, cols), rb = row_bytes(type, cols);
  const int64_t nb = cols / packed_block(type);
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  for (int64_t r0 = 0, g = 0; r0 < rows; r0 += kPackRows, ++g) {
    const int n = static_cast<int>(std::min<int64_t>(kPackRows, rows - r0));
    if (type == GgmlType::Q4_K) pack_group_q4k(s + r0 * rb, rb, n, nb, reinterpret_cast<PackedQ4K*>(d + g * gb));
    else if (type == GgmlType::Q4_1) pack_group_q41(s + r0 * rb, rb, n, nb, reinterpret_cast<PackedQ4_1*>(d + g * gb));
    else if (type == GgmlType::Q8_0) pack_group_q80(s + r0 * rb, rb, n, nb, reinterpret_cast<PackedQ8_0*>(d + g * gb));
    else if (type == GgmlType::MXFP4) pack_group_mxfp4(s + r0 * rb, rb, n, nb, reinterpret_cast<PackedMXFP4*>(d + g * gb));
    else pack_group_q6k(s + r0 * rb, rb, n, nb, reinterpret_cast<PackedQ6K*>(d + g * gb));
  }
}

}  // namespace squeeze::quant
