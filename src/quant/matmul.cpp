// quant/matmul.cpp — threaded quantized GEMV and tiled GEMM over the traits' kernels.
#include "quant/matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/error.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"
#include "quant/packed.h"

namespace squeeze::quant {
namespace {

const QuantTraits& check(const QMatrix& W, const QuantTraits* kernels) {
  const QuantTraits& t = kernels ? *kernels : traits(W.type);
  SQZ_CHECK(t.type == W.type, "matmul: kernels for ", t.name, " given a ", traits(W.type).name, " matrix");
  SQZ_CHECK(t.vec_dot != nullptr, "matmul: ", t.name, " has no dot kernel");
  SQZ_CHECK(W.rows >= 0 && W.cols > 0 && W.cols % t.block_size == 0, "matmul: ", t.name, " matrix of ", W.rows,
            " x ", W.cols, " (row length must be a multiple of ", t.block_size, ")");
  SQZ_CHECK(W.data != nullptr || W.rows == 0, "matmul: null weights");
  return t;
}

// Quantizes M activation rows to the dot type; returns the row stride in bytes.
// block_sums: each row also carries its blocks' sums (packed Q4_1 / Q8_0 / MXFP4, quant/packed.h).
int64_t quantize_activations(const QuantTraits& t, const float* X, int64_t ldx, int64_t M, int64_t K,
                             AlignedBuffer& buf, ThreadPool* pool, bool block_sums = false) {
  if (t.dot_type == GgmlType::F32) return 0;  // used in place
  // The weight kernels' ISA (the AVX2 and scalar quantizers write identical bytes).
  const QuantTraits* at = traits_for(t.dot_type, t.isa);
  SQZ_CHECK(at && at->quantize_act_row, "matmul: no activation quantizer for ", t.name);
  SQZ_CHECK(!block_sums || t.dot_type == GgmlType::Q8_0, "matmul: block sums of ", at->name, " activations");
  const int64_t nb = K / at->block_size;
  const int64_t stride = (nb * at->block_bytes + (block_sums ? nb * 2 : 0) + 63) / 64 * 64;
  if (buf.size() < static_cast<size_t>(stride * M)) buf = AlignedBuffer(static_cast<size_t>(stride * M));
  auto body = [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) {
      uint8_t* row = buf.as<uint8_t>() + m * stride;
      at->quantize_act_row(X + m * ldx, row, K);
      if (block_sums) write_act_block_sums(row, K);
    }
  };
  if (pool) pool->parallel_for(0, M, body, {ThreadPool::Schedule::Static, 8});
  else body(0, M);
  return stride;
}

thread_local AlignedBuffer t_act;
thread_local AlignedBuffer t_rowbuf;

// Prefill: Y = X · Wᵀ by the packed f32 GEMM, each weight row dequantized into the
// packed panels K block by K block (blocks never split), once per call. Decoding a
// weight once per batch of M tokens costs 1/M of the products, and the f32 kernel runs
// near the FMA peak, where the integer dot tile decodes every block once per 4 tokens.
// The activations are used in f32 (no 8-bit rounding), so this path is also more exact.
void gemm_dequantized(ThreadPool& pool, const QuantTraits& t, const QMatrix& W, const float* X, int64_t M, int64_t ldx,
                      float* Y, int64_t ldy) {
  const int64_t K = W.cols;
  const int64_t rb = K / t.block_size * t.block_bytes;
  const auto* w = static_cast<const uint8_t*>(W.data);
  constexpr int P = kernels::cpu::kGemmPanel;
  kernels::cpu::gemm_packed(pool, X, ldx, [&](int64_t n0, int nr, int64_t k0, int64_t kc, float* panel) {
    const size_t need = static_cast<size_t>(kc) * sizeof(float);
    if (t_rowbuf.size() < need) t_rowbuf = AlignedBuffer(need);
    float* row = t_rowbuf.as<float>();
    for (int j = 0; j < nr; ++j) {
      t.dequantize_row(w + (n0 + j) * rb + k0 / t.block_size * t.block_bytes, row, kc);
      for (int64_t k = 0; k < kc; ++k) panel[k * P + j] = row[k];
    }
  }, Y, ldy, M, W.rows, K, t.block_size);
}

// The active ISA's packed kernels for W, or nulls when W is not packed or explicit kernels
// were asked for.
struct PackedKernels {
  PackedTile tile = nullptr;
  PackedGemv gemv = nullptr;
  explicit operator bool() const { return tile != nullptr; }
};

PackedKernels packed_kernels_for(const QMatrix& W, const QuantTraits* kernels) {
  if (!W.packed || kernels) return {};
  const auto isa = kernels::cpu::active_isa();
  const PackedKernels k{packed_tile(W.type, isa), packed_gemv(W.type, isa)};
  SQZ_CHECK(k.tile && k.gemv, "matmul: packed ", traits(W.type).name, " weights but no packed kernel for ",
            kernels::cpu::active_isa_name());
  return k;
}

// Groups [g0, g1) of packed W for tokens [0, M). One token: the range cut into
// kPackGemvGroups stretches walked in lockstep (that many weight streams in flight).
// A batch: tiles of kPackTokens tokens over blocks of four groups, so a block's weights
// stay in L1/L2 while the tokens pass over it.
void packed_groups(const PackedKernels& k, const QMatrix& W, const uint8_t* act, int64_t stride, int64_t M, float* Y,
                   int64_t ldy, int64_t g0, int64_t g1) {
  const int64_t gb = packed_group_bytes(W.type, W.cols);
  const auto* base = static_cast<const uint8_t*>(W.packed);
  const auto valid = [&](int64_t g) { return static_cast<int>(std::min<int64_t>(kPackRows, W.rows - g * kPackRows)); };
  if (M == 1) {
    constexpr int S = kPackGemvGroups;
    const int64_t len = (g1 - g0 + S - 1) / S;
    for (int64_t j = 0; j < len; ++j) {
      const void* groups[S];
      float* ys[S];
      int n_valid[S], ng = 0;
      for (int s = 0; s < S; ++s) {
        const int64_t g = g0 + s * len + j;
        if (g >= std::min(g1, g0 + (s + 1) * len)) continue;
        groups[ng] = base + g * gb, ys[ng] = Y + g * kPackRows, n_valid[ng] = valid(g);
        ++ng;
      }
      if (ng) k.gemv(W.cols, groups, ng, act, ys, n_valid);
    }
    return;
  }
  constexpr int64_t kBlock = 4;
  for (int64_t b = g0; b < g1; b += kBlock) {
    const int64_t be = std::min(g1, b + kBlock);
    for (int64_t m = 0; m < M; m += kPackTokens) {
      const int nt = static_cast<int>(std::min<int64_t>(kPackTokens, M - m));
      for (int64_t g = b; g < be; ++g)
        k.tile(W.cols, base + g * gb, act + m * stride, stride, nt, Y + m * ldy + g * kPackRows, ldy, valid(g));
    }
  }
}

int64_t packed_group_count(const QMatrix& W) { return (W.rows + kPackRows - 1) / kPackRows; }

}  // namespace

void gemv(ThreadPool& pool, const QMatrix& W, const float* x, float* y, const QuantTraits* kernels) {
  const QuantTraits& t = check(W, kernels);
  if (t.type == GgmlType::F32 && !kernels) {
    // f32 weights: the f32 GEMV reads 4 rows at a time (4 memory streams per thread),
    // which reaches ~85% of DRAM bandwidth where one row at a time reaches ~65%.
    kernels::cpu::gemv(pool, static_cast<const float*>(W.data), W.cols, x, y, W.rows, W.cols);
    return;
  }
  const int64_t K = W.cols;
  const PackedKernels pk = packed_kernels_for(W, kernels);
  const int64_t stride = quantize_activations(t, x, K, 1, K, t_act, nullptr, pk && packed_needs_act_sums(W.type));
  const void* act = stride ? t_act.data() : static_cast<const void*>(x);
  if (pk) {
    pool.parallel_for(0, packed_group_count(W), [&](int64_t g0, int64_t g1) {
      packed_groups(pk, W, static_cast<const uint8_t*>(act), stride, 1, y, W.rows, g0, g1);
    });
    return;
  }
  const int64_t rb = W.cols / t.block_size * t.block_bytes;
  const auto* w = static_cast<const uint8_t*>(W.data);
  const auto dot = t.vec_dot;
  const auto wrows = t.dot_wrows;
  // Static contiguous ranges keep each thread streaming one long stretch of W; row
  // groups of kMaxDotRows share the activation's per-block work (and keep several
  // weight streams in flight).
  pool.parallel_for(0, W.rows, [&](int64_t r0, int64_t r1) {
    if (wrows) {
      for (int64_t r = r0; r < r1; r += kMaxDotRows)
        wrows(K, w + r * rb, rb, static_cast<int>(std::min<int64_t>(kMaxDotRows, r1 - r)), act, y + r);
      return;
    }
    for (int64_t r = r0; r < r1; ++r) y[r] = dot(K, w + r * rb, act);
  }, {ThreadPool::Schedule::Static, 8});
}

void gemv_many(ThreadPool& pool, std::span<const GemvOutput> outputs, const float* x, bool dot_kernels) {
  if (outputs.empty()) return;
  const int64_t K = outputs[0].W.cols;
  // Per output: its kernels, its activation row and its first row in the joint index.
  struct Part {
    const QuantTraits* t;
    const uint8_t* w;
    int64_t rb, first, rows;
    const void* act;
    float* y;
    bool f32_fast;
    PackedKernels packed;
  };
  constexpr size_t kMaxParts = 4;
  SQZ_CHECK(outputs.size() <= kMaxParts, "gemv_many: at most ", kMaxParts, " outputs");
  thread_local AlignedBuffer t_acts[kMaxParts];
  Part parts[kMaxParts];
  GgmlType act_types[kMaxParts];
  int n_acts = 0;
  int64_t total = 0;
  // an activation row shared by a packed Q4_1, Q8_0 or MXFP4 matrix carries the block sums (the other
  // kernels read only its blocks)
  bool sums_for[kMaxParts] = {};
  for (size_t i = 0; i < outputs.size(); ++i) {
    const QMatrix& W = outputs[i].W;
    if (!packed_kernels_for(W, nullptr) || !packed_needs_act_sums(W.type)) continue;
    for (size_t j = 0; j < outputs.size(); ++j)
      sums_for[j] = sums_for[j] || traits(outputs[j].W.type).dot_type == traits(W.type).dot_type;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const QMatrix& W = outputs[i].W;
    SQZ_CHECK(W.cols == K, "gemv_many: matrices of ", K, " and ", W.cols, " columns");
    const QuantTraits& t = check(W, dot_kernels ? &traits(W.type) : nullptr);
    Part& p = parts[i];
    p = {&t, static_cast<const uint8_t*>(W.data), K / t.block_size * t.block_bytes, total, W.rows, x, outputs[i].y,
         t.type == GgmlType::F32 && !dot_kernels, packed_kernels_for(W, nullptr)};
    total += W.rows;
    if (t.dot_type == GgmlType::F32) continue;
    int a = 0;
    while (a < n_acts && act_types[a] != t.dot_type) ++a;
    if (a == n_acts) {  // the first matrix with this activation type quantizes x
      act_types[n_acts++] = t.dot_type;
      quantize_activations(t, x, K, 1, K, t_acts[a], nullptr, sums_for[i]);
    }
    p.act = t_acts[a].data();
  }
  const auto f32_gemv = kernels::cpu::ops().gemv;
  pool.parallel_for(0, total, [&](int64_t b, int64_t e) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Part& p = parts[i];
      const int64_t r0 = std::max(b, p.first) - p.first, r1 = std::min(e, p.first + p.rows) - p.first;
      if (r0 >= r1) continue;
      if (p.packed) {  // the groups that start in [r0, r1); dot_kernels or not, as gemv()
        const auto first_group = [](int64_t r) { return (r + kPackRows - 1) / kPackRows; };
        packed_groups(p.packed, outputs[i].W, static_cast<const uint8_t*>(p.act), 0, 1, p.y, p.rows, first_group(r0),
                      first_group(r1));
      } else if (p.f32_fast) {
        f32_gemv(reinterpret_cast<const float*>(p.w) + r0 * K, K, x, p.y + r0, r1 - r0, K);
      } else if (p.t->dot_wrows) {
        for (int64_t r = r0; r < r1; r += kMaxDotRows)
          p.t->dot_wrows(K, p.w + r * p.rb, p.rb, static_cast<int>(std::min<int64_t>(kMaxDotRows, r1 - r)), p.act,
                         p.y + r);
      } else {
        for (int64_t r = r0; r < r1; ++r) p.y[r] = p.t->vec_dot(K, p.w + r * p.rb, p.act);
      }
    }
  }, {ThreadPool::Schedule::Static, 8});
}

void gemm(ThreadPool& pool, const QMatrix& W, const GemmParams& p) {
  const QuantTraits& t = check(W, p.kernels);
  const bool dot_tile_only = p.kernels || p.batch_invariant;
  const int64_t K = W.cols, M = p.M;
  const int64_t ldx = p.ldx ? p.ldx : K, ldy = p.ldy ? p.ldy : W.rows;
  SQZ_CHECK(M >= 0 && ldx >= K && ldy >= W.rows, "gemm: bad strides");
  if (M == 0 || W.rows == 0) return;
  SQZ_CHECK(p.X != nullptr && p.Y != nullptr, "gemm: null buffer");
  if (const PackedKernels pk = packed_kernels_for(W, p.kernels)) {
    AlignedBuffer act;
    const int64_t stride = quantize_activations(t, p.X, ldx, M, K, act, &pool, packed_needs_act_sums(W.type));
    // One token: static ranges (each thread streams its own stretch of W); a batch:
    // blocks of four groups handed out as threads free up.
    const ThreadPool::ForOptions opt =
        M == 1 ? ThreadPool::ForOptions{} : ThreadPool::ForOptions{ThreadPool::Schedule::Dynamic, 4};
    pool.parallel_for(0, packed_group_count(W), [&](int64_t g0, int64_t g1) {
      packed_groups(pk, W, act.as<uint8_t>(), stride, M, p.Y, ldy, g0, g1);
    }, opt);
    return;
  }
  if (t.type == GgmlType::F32 && !dot_tile_only) {
    // f32 weights: the f32 GEMM (packed panels for large products) beats a dot-based tile.
    kernels::cpu::gemm_nt(pool, p.X, ldx, static_cast<const float*>(W.data), K, p.Y, ldy, M, W.rows, K);
    return;
  }
  if (!dot_tile_only && M >= kDequantizedGemmMinBatch) {
    gemm_dequantized(pool, t, W, p.X, M, ldx, p.Y, ldy);
    return;
  }
  AlignedBuffer act;
  int64_t stride = quantize_activations(t, p.X, ldx, M, K, act, &pool);
  const uint8_t* abase = act.as<uint8_t>();
  if (stride == 0) stride = ldx * static_cast<int64_t>(sizeof(float)), abase = reinterpret_cast<const uint8_t*>(p.X);
  const int64_t rb = K / t.block_size * t.block_bytes;
  const auto* w = static_cast<const uint8_t*>(W.data);
  // A tile of weight rows sized to stay in L2 (~256 KiB) while every token group of
  // kMaxDotRows passes over it; the token group's activations stay in L1/L2.
  const int64_t tile = std::clamp<int64_t>((256 << 10) / std::max<int64_t>(rb, 1), 4, 256);
  const auto multi = t.dot_multi;
  const auto micro = t.dot_tile;
  pool.parallel_for(0, (W.rows + tile - 1) / tile, [&](int64_t t0, int64_t t1) {
    float out[kMaxDotRows * kMaxDotRows];
    for (int64_t ti = t0; ti < t1; ++ti) {
      const int64_t r0 = ti * tile, r1 = std::min(W.rows, r0 + tile);
      for (int64_t m = 0; m < M; m += kMaxDotRows) {
        const int nt = static_cast<int>(std::min<int64_t>(kMaxDotRows, M - m));
        if (micro) {  // kMaxDotRows weight rows × nt tokens at a time
          for (int64_t r = r0; r < r1; r += kMaxDotRows) {
            const int nr = static_cast<int>(std::min<int64_t>(kMaxDotRows, r1 - r));
            micro(K, w + r * rb, rb, nr, abase + m * stride, stride, nt, out);
            for (int j = 0; j < nr; ++j)
              for (int i = 0; i < nt; ++i) p.Y[(m + i) * ldy + r + j] = out[j * nt + i];
          }
          continue;
        }
        for (int64_t r = r0; r < r1; ++r) {
          multi(K, w + r * rb, abase + m * stride, stride, nt, out);
          for (int i = 0; i < nt; ++i) p.Y[(m + i) * ldy + r] = out[i];
        }
      }
    }
  }, {ThreadPool::Schedule::Dynamic, 1});
}

}  // namespace squeeze::quant
