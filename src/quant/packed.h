// quant/packed.h — weight matrices repacked at load time for the integer GEMM / GEMV.
//
// A packed matrix interleaves groups of kPackRows (16) weight rows block by block, so that
// one 64-byte load holds 4 consecutive codes of each of the 16 rows: one `vpdpbusd` with a
// broadcast of 4 activation codes then advances 16 output rows at once, and every weight
// byte is decoded once per tile of tokens instead of once per token. The kernels stream a
// group's blocks linearly along K. Rows past the matrix's end (the last group's padding)
// are zero and never written out.
//
// The per-row arithmetic is fixed and independent of the tile: each super-block's sums are
// exact integers, folded into one f32 accumulator per (row, token) by FMAs in block order.
// So a row's value does not depend on how many tokens were computed with it (the GEMM is
// bit-identical to the GEMV: batch invariance), and the AVX-512 kernel is bit-identical
// to the scalar reference (tests compare bytes).
#pragma once

#include <cstdint>

#include "gguf/ggml_type.h"
#include "kernels/cpu/ops.h"

namespace squeeze::quant {

using gguf::GgmlType;

inline constexpr int kPackRows = 16;
// Most tokens one tile call computes.
inline constexpr int kPackTokens = 4;

// Q4_K super-block of 16 rows (2368 bytes, 37 cache lines). The sums per row r and token
// with Q8_K block y are sumi = Σ_j scales[j][r]·Σ_{k∈j} q[r][k]·y.qs[k] and
// summ = Σ_j m_j[r]·(y.bsums[2j] + y.bsums[2j+1]); the row's value accumulates
// fma(d[r]·y.d, sumi, acc) then fma(−dmin[r]·y.d, summ, acc).
struct PackedQ4K {
  uint16_t d[kPackRows];        // f16
  uint16_t dmin[kPackRows];     // f16
  uint8_t scales[8][kPackRows];  // sub-block j's 6-bit scale of row r
  uint8_t mins[4][kPackRows][2];  // the mins of sub-blocks 2p, 2p+1 of row r
  // Chunk c, quad q, row r: bytes 32c+4q .. 32c+4q+3 of the row's qs (low nibbles:
  // elements 64c+4q.., high nibbles: elements 64c+32+4q..).
  uint8_t qs[4][8][kPackRows][4];
};
static_assert(sizeof(PackedQ4K) == 2368);

// Q6_K super-block of 16 rows (3392 bytes, 53 cache lines). Codes u = q + 32 in [0, 63]
// (unsigned, as vpdpbusd wants them); the offset comes back through the activation's bsums
// (one per 16-element sub-block): sumi = Σ_h sc_h[r]·Σ_{k∈h} u[r][k]·y.qs[k]
// − 32·Σ_h sc_h[r]·y.bsums[h]; the row's value accumulates fma(d[r]·y.d, sumi, acc).
struct PackedQ6K {
  float d[kPackRows];                // the f16 d, widened
  int8_t scales[8][kPackRows][2];    // scales of sub-blocks 2p, 2p+1 of row r
  // Quad pair p (elements 8p .. 8p+7), row r, byte e: low 4 bits of element 8p+e in the
  // low nibble, of element 8p+4+e in the high nibble.
  uint8_t ql[32][kPackRows][4];
  // Sub-block h (elements 16h .. 16h+15), row r, byte e: the 2 high bits of element
  // 16h+4s+e in bits 2s, 2s+1.
  uint8_t qh[16][kPackRows][4];
};
static_assert(sizeof(PackedQ6K) == 3392);

// Q4_1 group of 16 rows × one 32-element block (320 bytes, as many as the rows' own
// blocks). Byte e of quad q of row r is the row's qs[4q + e]: element 4q + e in the low
// nibble, 16 + 4q + e in the high one. A row's value is d·code + m, so with a Q8_0
// activation block (d_a, a) it accumulates fma(d[r]·d_a, Σ code·a, acc) then
// fma(m[r]·d_a, Σ a, acc). Rows of any length that is a multiple of 32 pack (SmolLM2's
// 576 is not one of 256, so K-quants cannot serve it).
struct PackedQ4_1 {
  uint16_t d[kPackRows];  // f16
  uint16_t m[kPackRows];  // f16
  uint8_t qs[4][kPackRows][4];
};
static_assert(sizeof(PackedQ4_1) == 320);

// Q8_0 group of 16 rows × one 32-element block (544 bytes, as the rows' own blocks). The
// codes are stored offset, u = q + 128 (vpdpbusd multiplies unsigned by signed bytes),
// so Σ q·a = Σ u·a − 128·Σ a: the row accumulates fma(d[r]·d_a, Σ u·a − 128·Σ a, acc).
// Byte e of quad q of row r is element 4q + e.
struct PackedQ8_0 {
  uint16_t d[kPackRows];  // f16
  uint8_t qs[8][kPackRows][4];
};
static_assert(sizeof(PackedQ8_0) == 544);

// MXFP4 group of 16 rows × one 32-element block (272 bytes, as the rows' own blocks).
// Byte e of quad q of row r is the row's qs[4q + e], as in PackedQ4_1. With a Q8_0
// activation block (d_a, a) a row accumulates fma(e8m0_half(e[r])·d_a, Σ v·a, acc), v =
// kMxfp4Values[nibble] (an exact integer sum). The AVX2 kernels take u = v + 12 (unsigned,
// for vpmaddubsw) and Σ v·a = Σ u·a − 12·Σ a: the same integer.
struct PackedMXFP4 {
  uint8_t e[kPackRows];  // E8M0 exponents
  uint8_t qs[4][kPackRows][4];
};
static_assert(sizeof(PackedMXFP4) == 272);

// Activation rows of the packed Q4_1, Q8_0 and MXFP4 kernels: the Q8_0 blocks, then each
// block's Σ a as int16 (|Σ a| ≤ 32·127). The min (offset) term needs that sum once per
// block for all 16 rows of a group; summing it inside the kernel would cost nearly as much
// as the dots.
bool packed_needs_act_sums(GgmlType type);
// Writes the sums after the K / 32 Q8_0 blocks at `row`.
void write_act_block_sums(void* row, int64_t K);
inline const int16_t* act_block_sums(const void* row, int64_t K) {
  return reinterpret_cast<const int16_t*>(static_cast<const uint8_t*>(row) + K / 32 * 34);
}

// The tile kernel: tokens t < nt ≤ kPackTokens, activation rows (Q8_K; Q8_0 with sums
// for Q4_1, Q8_0 and MXFP4) at a + t·a_stride bytes; writes y[t·ldy + r] for the group's rows r < n_valid.
using PackedTile = void (*)(int64_t K, const void* group, const void* a, int64_t a_stride, int nt, float* y,
                            int64_t ldy, int n_valid);

// The decode kernel: one activation row a against ng ≤ kPackGemvGroups groups in
// lockstep (several weight streams in flight); writes y[k][r] for r < n_valid[k]. Each
// group's values are bit-identical to the tile's with nt = 1.
inline constexpr int kPackGemvGroups = 4;
using PackedGemv = void (*)(int64_t K, const void* const* groups, int ng, const void* a, float* const* y,
                            const int* n_valid);

// The kernels of `type` for `isa`; null where that ISA has none (or the CPU lacks it).
PackedTile packed_tile(GgmlType type, kernels::cpu::Isa isa);
PackedGemv packed_gemv(GgmlType type, kernels::cpu::Isa isa);

// Packed layouts: Q4_K, Q6_K, Q4_1, Q8_0 and MXFP4.
// True if weights of `type` should be packed for the active ISA (it has a packed kernel and
// SQUEEZE_REPACK is not 0).
bool packs(GgmlType type);

// Bytes of the packed form of a rows × cols matrix (cols a multiple of the type's block).
int64_t packed_bytes(GgmlType type, int64_t rows, int64_t cols);
// Bytes of one packed group (kPackRows rows × cols).
int64_t packed_group_bytes(GgmlType type, int64_t cols);

// Packs rows × cols of GGUF rows (row_bytes(type, cols) apart) into dst (packed_bytes).
void pack_matrix(GgmlType type, const void* src, int64_t rows, int64_t cols, void* dst);

}  // namespace squeeze::quant
