// quant/packed_kernel_util.h — internal: what the packed kernels of every ISA share (their
// prefetch of the next block and their exported entry points). ISA-neutral: no intrinsics.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/count_dispatch.h"

namespace squeeze::quant::impl {

// Software prefetch of block i + kPrefetchBlocks, spread over the block's loop: part
// `part` of `Parts` issues its share of the block's cache lines. The hardware prefetcher
// alone left Q6_K's single-token (decode) loop waiting on memory (Q4_K's loop, with fewer
// instructions per byte, and the multi-token tiles measured faster without it).
inline constexpr int64_t kPrefetchBlocks = 1;
template <size_t Bytes, int Parts>
inline void prefetch_lines(const void* block, int part) {
  constexpr int kLines = (Bytes + 63) / 64, kPer = (kLines + Parts - 1) / Parts;
  const char* b = static_cast<const char*>(block);
  // asm volatile: GCC deletes a loop of _mm_prefetch whose trip count is not a constant
  // (the builtin counts as side-effect free and the loop as removable).
  for (int l = part * kPer; l < (part + 1) * kPer && l < kLines; ++l)
    asm volatile("prefetcht0 %0" : : "m"(*(b + 64 * l)));
}

}  // namespace squeeze::quant::impl

// The exported entry points `<isa>_packed_tile_<suffix>` and `<isa>_packed_gemv_<suffix>`
// (quant/packed.h's PackedTile and PackedGemv): the token or group count becomes the
// template argument of `tile<NT>` / `gemv<NG>`.
#define SQZ_PACKED_ENTRIES(isa, suffix, tile, gemv, Group, Act)                                                  \
  void isa##_packed_tile_##suffix(int64_t K, const void* group, const void* a, int64_t a_stride, int nt,       \
                                  float* y, int64_t ldy, int n_valid) {                                         \
    dispatch_count(nt, [&](auto n) {                                                                            \
      tile<decltype(n)::value>(K, static_cast<const Group*>(group), static_cast<const uint8_t*>(a), a_stride, y, \
                               ldy, n_valid);                                                                   \
    });                                                                                                         \
  }                                                                                                             \
  void isa##_packed_gemv_##suffix(int64_t K, const void* const* groups, int ng, const void* a,                \
                                  float* const* y, const int* n_valid) {                                        \
    dispatch_count(ng, [&](auto n) {                                                                            \
      gemv<decltype(n)::value>(K, reinterpret_cast<const Group* const*>(groups), static_cast<const Act*>(a), y,  \
                               n_valid);                                                                        \
    });                                                                                                         \
  }
