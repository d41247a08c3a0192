// tests/quant/test_quant_matmul.cpp — threaded quantized GEMV and tiled GEMM against
// the traits' own dot (bit-exact) and against a float64 reference (bounded by the
// activation quantization).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "quant/matmul.h"
#include "quant/packed.h"
#include "quant/quantize.h"
#include "quant_test_util.h"

namespace squeeze::quant {
namespace {

struct Problem {
  int64_t rows, cols;
  std::vector<uint8_t> w;
  std::vector<float> wf;  // dequantized W
};

Problem make_problem(GgmlType type, int64_t rows, int64_t cols) {
  Problem p{rows, cols, {}, {}};
  const auto x = test::gaussian(rows * cols);
  p.w = quantize_tensor({.type = type, .src = x.data(), .rows = rows, .cols = cols});
  p.wf = dequantize_tensor(type, p.w.data(), rows, cols);
  return p;
}

// |W·x − W·x̂| where x̂ is x quantized to the dot type: each activation element moves by
// at most half its grid step (d/2, plus the f16 rounding of a Q8_0 d: 127·2^-11·d), so
// the float64 reference is off by at most Σ|w|·step/2; f32 summation adds γ·Σ|w||x|.
std::vector<double> reference_bounds(const QuantTraits& t, const Problem& p, const float* x, std::vector<double>& bound) {
  std::vector<double> y(p.rows);
  bound.assign(p.rows, 0.0);
  std::vector<double> half_step(p.cols, 0.0);
  if (t.dot_type != GgmlType::F32) {
    const int bs = t.dot_type == GgmlType::Q8_K ? kQK_K : kQK;
    const double f16_slack = t.dot_type == GgmlType::Q8_0 ? 127.0 / 2048.0 : 0.0;
    for (int64_t b = 0; b < p.cols; b += bs) {
      double amax = 0;
      for (int i = 0; i < bs; ++i) amax = std::max(amax, std::fabs(static_cast<double>(x[b + i])));
      for (int i = 0; i < bs; ++i) half_step[b + i] = amax / 127.0 * (0.5 + f16_slack) * 1.0001;
    }
  }
  for (int64_t r = 0; r < p.rows; ++r) {
    const auto off = test::code_zero_offsets(t.type, p.w.data() + r * row_bytes(t.type, p.cols), p.cols);
    double s = 0, mag = 0, qerr = 0;
    for (int64_t c = 0; c < p.cols; ++c) {
      const double w = p.wf[r * p.cols + c];
      s += w * x[c];
      mag += (std::fabs(w) + 2 * std::fabs(off[c])) * (std::fabs(x[c]) + half_step[c]);
      qerr += std::fabs(w) * half_step[c];
    }
    y[r] = s;
    const int64_t terms = t.block_size == 1 ? p.cols : p.cols / t.block_size;
    bound[r] = qerr + 1.01 * static_cast<double>(terms + 10) * test::kU * mag + 1e-30;
  }
  return y;
}

class Matmul : public ::testing::TestWithParam<GgmlType> {};

TEST_P(Matmul, GemvMatchesDotAndFloat64) {
  const GgmlType type = GetParam();
  const Problem p = make_problem(type, 67, 1024 + 256);
  const auto x = test::gaussian(p.cols);
  for (Isa isa : test::all_isas()) {
    const QuantTraits* t = traits_for(type, isa);
    if (!t) continue;
    std::vector<float> y(p.rows);
    gemv(default_thread_pool(), {type, p.w.data(), p.rows, p.cols}, x.data(), y.data(), t);
    std::vector<double> bound;
    const auto ref = reference_bounds(*t, p, x.data(), bound);
    // The same activation row through vec_dot: identical bits.
    std::vector<uint8_t> act;
    const void* a = x.data();
    if (t->dot_type != GgmlType::F32) {
      act.resize(row_bytes(t->dot_type, p.cols));
      traits_for(t->dot_type, isa)->quantize_act_row(x.data(), act.data(), p.cols);
      a = act.data();
    }
    const int64_t rb = row_bytes(type, p.cols);
    for (int64_t r = 0; r < p.rows; ++r) {
      EXPECT_EQ(y[r], t->vec_dot(p.cols, p.w.data() + r * rb, a)) << t->name << " row " << r;
      EXPECT_NEAR(y[r], ref[r], bound[r]) << t->name << " row " << r;
    }
  }
}

TEST_P(Matmul, GemmMatchesDotAndFloat64) {
  const GgmlType type = GetParam();
  const Problem p = make_problem(type, 45, 512);
  for (const int64_t M : {1, 3, 4, 9}) {
    const int64_t ldx = p.cols + 3, ldy = p.rows + 5;
    const auto X = test::gaussian(M * ldx);
    for (Isa isa : test::all_isas()) {
      const QuantTraits* t = traits_for(type, isa);
      if (!t) continue;
      std::vector<float> Y(M * ldy, -7.0f);
      gemm(default_thread_pool(), {type, p.w.data(), p.rows, p.cols},
           {.X = X.data(), .M = M, .ldx = ldx, .Y = Y.data(), .ldy = ldy, .kernels = t});
      for (int64_t m = 0; m < M; ++m) {
        std::vector<float> y(p.rows);
        gemv(default_thread_pool(), {type, p.w.data(), p.rows, p.cols}, X.data() + m * ldx, y.data(), t);
        std::vector<double> bound;
        const auto ref = reference_bounds(*t, p, X.data() + m * ldx, bound);
        for (int64_t r = 0; r < p.rows; ++r) {
          EXPECT_EQ(Y[m * ldy + r], y[r]) << t->name << " M=" << M << " m=" << m << " r=" << r;
          EXPECT_NEAR(Y[m * ldy + r], ref[r], bound[r]);
        }
        for (int64_t r = p.rows; r < ldy; ++r) EXPECT_EQ(Y[m * ldy + r], -7.0f);  // padding untouched
      }
    }
  }
}

TEST_P(Matmul, BatchedGemmOnDequantizedWeightsWithinSummationBound) {
  // From kDequantizedGemmMinBatch tokens on, gemm() multiplies f32 activations by the
  // dequantized weights with the packed f32 GEMM (K = 512 spans two of its K blocks): exact weights, f32 sums in any order, so Higham's
  // gamma_K * sum |w||x| bounds the error against float64 on the same dequantized values.
  const GgmlType type = GetParam();
  const Problem p = make_problem(type, 70, 512);
  for (const int64_t M : {kDequantizedGemmMinBatch, int64_t{37}}) {
    const int64_t ldx = p.cols + 5, ldy = p.rows + 3;
    const auto X = test::gaussian(M * ldx);
    std::vector<float> Y(M * ldy, -7.0f);
    gemm(default_thread_pool(), {type, p.w.data(), p.rows, p.cols}, {.X = X.data(), .M = M, .ldx = ldx, .Y = Y.data(), .ldy = ldy});
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t r = 0; r < p.rows; ++r) {
        double s = 0, mag = 0;
        for (int64_t c = 0; c < p.cols; ++c) {
          s += static_cast<double>(p.wf[r * p.cols + c]) * X[m * ldx + c];
          mag += std::fabs(static_cast<double>(p.wf[r * p.cols + c]) * X[m * ldx + c]);
        }
        ASSERT_NEAR(Y[m * ldy + r], s, 1.01 * (p.cols + 2) * 5.96e-8 * mag) << "M=" << M << " m=" << m << " r=" << r;
      }
      for (int64_t r = p.rows; r < ldy; ++r) ASSERT_EQ(Y[m * ldy + r], -7.0f);  // padding untouched
    }
  }
}

TEST_P(Matmul, BatchInvariantGemmRowsEqualGemvAtEveryBatchSize) {
  // batch_invariant: a row's result must not depend on the batch it rides in (batched
  // serving returns what a request alone returns), here up to past the dequantized-GEMM threshold.
  const GgmlType type = GetParam();
  const Problem p = make_problem(type, 53, 512);
  const QuantTraits& t = traits(type);
  for (const int64_t M : {int64_t{1}, int64_t{5}, kDequantizedGemmMinBatch, int64_t{37}}) {
    const auto X = test::gaussian(M * p.cols);
    std::vector<float> Y(M * p.rows);
    gemm(default_thread_pool(), {type, p.w.data(), p.rows, p.cols},
         {.X = X.data(), .M = M, .Y = Y.data(), .batch_invariant = true});
    for (int64_t m = 0; m < M; ++m) {
      std::vector<float> y(p.rows);
      gemv(default_thread_pool(), {type, p.w.data(), p.rows, p.cols}, X.data() + m * p.cols, y.data(), &t);
      for (int64_t r = 0; r < p.rows; ++r) ASSERT_EQ(Y[m * p.rows + r], y[r]) << "M=" << M << " m=" << m << " r=" << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, Matmul,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                                           GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::MXFP4,
                                           GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K),
                         [](const auto& info) { return std::string(traits(info.param).name); });

TEST(MatmulF32, DefaultGemmUsesF32PathWithinSummationBound) {
  // F32 weights without explicit kernels take kernels::cpu::gemm_nt (packed GEMM for large
  // products): any summation order stays within Higham's γ_K·Σ|w||x|.
  const Problem p = make_problem(GgmlType::F32, 70, 300);
  const int64_t M = 33;
  const auto X = test::gaussian(M * p.cols);
  std::vector<float> Y(M * p.rows);
  gemm(default_thread_pool(), {GgmlType::F32, p.w.data(), p.rows, p.cols}, {.X = X.data(), .M = M, .Y = Y.data()});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t r = 0; r < p.rows; ++r) {
      double s = 0, mag = 0;
      for (int64_t c = 0; c < p.cols; ++c) {
        s += static_cast<double>(p.wf[r * p.cols + c]) * X[m * p.cols + c];
        mag += std::fabs(p.wf[r * p.cols + c] * X[m * p.cols + c]);
      }
      ASSERT_NEAR(Y[m * p.rows + r], s, 1.01 * (p.cols + 2) * test::kU * mag + 1e-30);
    }
}

// The fused decode projections: each output equals its own gemv — bit for bit for the
// quantized types (mixed activation types: Q8_K for Q4_K / Q6_K, Q8_0 for Q8_0 / Q4_1)
// and for F32 through its dot kernels; the F32 fast path within the summation bound.
TEST(MatmulMany, EachOutputEqualsItsGemv) {
  const int64_t cols = 512;
  const auto x = test::gaussian(cols);
  ThreadPool& pool = default_thread_pool();
  struct Case {
    std::vector<std::pair<GgmlType, int64_t>> mats;
    bool dot_kernels;
  };
  for (const Case& c : {Case{{{GgmlType::Q4_K, 37}, {GgmlType::Q6_K, 29}, {GgmlType::Q8_0, 11}}, false},
                        Case{{{GgmlType::Q4_1, 64}, {GgmlType::Q4_1, 3}}, false},
                        Case{{{GgmlType::F32, 21}, {GgmlType::Q4_0, 19}, {GgmlType::F32, 8}}, true},
                        Case{{{GgmlType::F32, 45}, {GgmlType::F32, 13}}, false}}) {
    std::vector<Problem> probs;
    for (auto [type, rows] : c.mats) probs.push_back(make_problem(type, rows, cols));
    std::vector<std::vector<float>> ys(probs.size());
    std::vector<GemvOutput> outs;
    for (size_t i = 0; i < probs.size(); ++i) {
      ys[i].assign(probs[i].rows, NAN);
      outs.push_back({{c.mats[i].first, probs[i].w.data(), probs[i].rows, cols}, ys[i].data()});
    }
    gemv_many(pool, outs, x.data(), c.dot_kernels);
    for (size_t i = 0; i < probs.size(); ++i) {
      const GgmlType type = c.mats[i].first;
      std::vector<float> want(probs[i].rows);
      gemv(pool, outs[i].W, x.data(), want.data(), c.dot_kernels ? &traits(type) : nullptr);
      for (int64_t r = 0; r < probs[i].rows; ++r) {
        if (type != GgmlType::F32 || c.dot_kernels) {
          ASSERT_EQ(ys[i][r], want[r]) << traits(type).name << " output " << i << " row " << r;
        } else {
          double mag = 0;
          for (int64_t k = 0; k < cols; ++k) mag += std::fabs(probs[i].wf[r * cols + k] * x[k]);
          ASSERT_NEAR(ys[i][r], want[r], 2.02 * (cols + 2) * test::kU * mag) << "F32 output " << i << " row " << r;
        }
      }
    }
  }
  std::vector<float> y(64);
  const Problem a = make_problem(GgmlType::Q8_0, 4, 256), b = make_problem(GgmlType::Q8_0, 4, 512);
  const GemvOutput mismatched[] = {{{GgmlType::Q8_0, a.w.data(), 4, 256}, y.data()},
                                   {{GgmlType::Q8_0, b.w.data(), 4, 512}, y.data() + 4}};
  EXPECT_THROW(gemv_many(pool, mismatched, x.data()), Error);
}

// ---- packed weights (quant/packed.h) ----

struct Packed {
  GgmlType type;
  Problem p;
  std::vector<uint8_t> bytes;
  QMatrix W() const { return {.type = type, .data = p.w.data(), .rows = p.rows, .cols = p.cols, .packed = bytes.data()}; }
};

Packed make_packed(GgmlType type, int64_t rows, int64_t cols) {
  Packed k{type, make_problem(type, rows, cols), {}};
  k.bytes.resize(static_cast<size_t>(packed_bytes(type, rows, cols)));
  pack_matrix(type, k.p.w.data(), rows, cols, k.bytes.data());
  return k;
}

class PackedTypes : public ::testing::TestWithParam<GgmlType> {};

// Row lengths: K-quants three super-blocks; the 32-element types SmolLM2's 576, no
// multiple of 256.
int64_t packed_cols(GgmlType type) { return traits(type).block_size == kQK ? 576 : 768; }

// Each ISA's tile equals the scalar reference bit for bit, for every token count of the
// tile, on a last group of 5 valid rows whose padding must stay unwritten.
TEST_P(PackedTypes, EveryIsaTileEqualsScalarReferenceBitForBit) {
  const GgmlType type = GetParam();
  const int64_t rows = 37, cols = packed_cols(type);
  const Packed k = make_packed(type, rows, cols);
  const GgmlType act_type = traits(type).dot_type;
  const bool sums = packed_needs_act_sums(type);
  const int64_t astride = row_bytes(act_type, cols) + (sums ? cols / 32 * 2 : 0);
  std::vector<uint8_t> act(kPackTokens * astride);
  for (int t = 0; t < kPackTokens; ++t) {
    const auto x = test::gaussian(cols, 1.0f + t);
    traits_for(act_type, Isa::Scalar)->quantize_act_row(x.data(), act.data() + t * astride, cols);
    if (sums) write_act_block_sums(act.data() + t * astride, cols);
  }
  const PackedTile ref = packed_tile(type, Isa::Scalar);
  ASSERT_NE(ref, nullptr);
  const int64_t gb = packed_group_bytes(type, cols), ldy = 21;
  int checked = 0;
  for (Isa isa : test::all_isas()) {
    const PackedTile tile = packed_tile(type, isa);
    if (!tile) continue;
    ++checked;
    for (int64_t g = 0; g * kPackRows < rows; ++g) {
      const int valid = static_cast<int>(std::min<int64_t>(kPackRows, rows - g * kPackRows));
      const uint8_t* group = k.bytes.data() + g * gb;
      for (int nt = 1; nt <= kPackTokens; ++nt) {
        std::vector<float> want(kPackTokens * ldy, -7.0f), got(kPackTokens * ldy, -7.0f);
        for (int t = 0; t < nt; ++t) ref(cols, group, act.data() + t * astride, astride, 1, want.data() + t * ldy, ldy, valid);
        tile(cols, group, act.data(), astride, nt, got.data(), ldy, valid);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << kernels::cpu::isa_name(isa) << " group " << g << " nt " << nt << " at " << i;
      }
    }
    // The decode kernel: 1..kPackGemvGroups groups in lockstep (the last one partial), each
    // equal to the reference tile with one token.
    const PackedGemv gemv = packed_gemv(type, isa);
    ASSERT_NE(gemv, nullptr);
    const int64_t n_groups = (rows + kPackRows - 1) / kPackRows;
    for (int ng = 1; ng <= kPackGemvGroups; ++ng) {
      const void* groups[kPackGemvGroups];
      float* ys[kPackGemvGroups];
      int valid[kPackGemvGroups];
      std::vector<float> got(kPackGemvGroups * kPackRows, -7.0f), want(got);
      for (int j = 0; j < ng; ++j) {
        const int64_t g = (n_groups - 1 + j) % n_groups;  // starts with the partial group
        groups[j] = k.bytes.data() + g * gb;
        ys[j] = got.data() + j * kPackRows;
        valid[j] = static_cast<int>(std::min<int64_t>(kPackRows, rows - g * kPackRows));
        ref(cols, groups[j], act.data(), astride, 1, want.data() + j * kPackRows, 0, valid[j]);
      }
      gemv(cols, groups, ng, act.data(), ys, valid);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << kernels::cpu::isa_name(isa) << " gemv of " << ng << " groups at " << i;
    }
  }
  EXPECT_GE(checked, 1);
}

// The largest codes against the largest activations of either sign (K-quants: |a| up to
// 128, past the Q8_K quantizer's 127; the 32-element types: 127, the Q8_0 quantizer's
// range): the SIMD kernels' narrow (i16) partial sums must not wrap or saturate, so every
// ISA still equals the scalar reference bit for bit. Rows alternate the scale's sign (Q6_K)
// or the code's (Q8_0) so that errors of a wrapped sum could not cancel.
TEST(PackedMatmul, ExtremeCodesEqualScalarReference) {
  constexpr int64_t cols = 2 * kQK_K, rows = 16;
  for (const GgmlType type : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::MXFP4}) {
    const int64_t block = traits(type).block_size;
    std::vector<uint8_t> w(static_cast<size_t>(rows * row_bytes(type, cols)));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < cols / block; ++b) {
        uint8_t* blk = w.data() + r * row_bytes(type, cols) + b * traits(type).block_bytes;
        if (type == GgmlType::Q4_K) {
          auto* q = reinterpret_cast<BlockQ4_K*>(blk);
          q->d = f32_to_f16(0.5f + r), q->dmin = f32_to_f16(0.25f);
          std::memset(q->scales, 0xFF, sizeof q->scales);  // every scale and min 63
          std::memset(q->qs, r % 3 ? 0xFF : 0xF0, sizeof q->qs);  // codes 15 (and 0)
        } else if (type == GgmlType::Q6_K) {
          auto* q = reinterpret_cast<BlockQ6_K*>(blk);
          q->d = f32_to_f16(0.5f + r);
          std::memset(q->ql, 0xFF, sizeof q->ql), std::memset(q->qh, 0xFF, sizeof q->qh);  // codes 63
          for (int j = 0; j < 16; ++j) q->scales[j] = static_cast<int8_t>(r % 2 ? 127 : -128);
        } else if (type == GgmlType::Q4_1) {
          auto* q = reinterpret_cast<BlockQ4_1*>(blk);
          q->d = f32_to_f16(0.5f + r), q->m = f32_to_f16(-0.25f);
          std::memset(q->qs, 0xFF, sizeof q->qs);  // codes 15
        } else if (type == GgmlType::MXFP4) {
          auto* q = reinterpret_cast<BlockMXFP4*>(blk);
          q->e = static_cast<uint8_t>(126 + r % 4);
          std::memset(q->qs, r % 2 ? 0x77 : 0xFF, sizeof q->qs);  // values 12 (offset code 24) or -12
        } else {
          auto* q = reinterpret_cast<BlockQ8_0*>(blk);
          q->d = f32_to_f16(0.5f + r);
          std::memset(q->qs, r % 2 ? 0x7F : 0x80, sizeof q->qs);  // codes 127 or -128
        }
      }
    std::vector<uint8_t> packed(static_cast<size_t>(packed_bytes(type, rows, cols)));
    pack_matrix(type, w.data(), rows, cols, packed.data());
    const bool k_quant = block == kQK_K;
    const int peak = k_quant ? 128 : 127;
    const int64_t astride = row_bytes(k_quant ? GgmlType::Q8_K : GgmlType::Q8_0, cols) + (k_quant ? 0 : cols / kQK * 2);
    std::vector<uint8_t> act(kPackTokens * astride);
    for (int t = 0; t < kPackTokens; ++t) {
      uint8_t* row = act.data() + t * astride;
      // Tokens 0 and 1 one sign throughout (the largest sums), 2 and 3 a sign per 64 codes.
      const auto code = [&](int64_t k) { return static_cast<int8_t>((t < 2 ? t : t + k / 64) % 2 ? -peak : 127); };
      for (int64_t b = 0; b < cols / block; ++b) {
        if (k_quant) {
          auto* x = reinterpret_cast<BlockQ8_K*>(row) + b;
          x->d = 1.0f / (1 + t);
          for (int k = 0; k < kQK_K; ++k) x->qs[k] = code(b * kQK_K + k);
          for (int j = 0; j < 16; ++j) {
            int s = 0;
            for (int k = 0; k < 16; ++k) s += x->qs[16 * j + k];
            x->bsums[j] = static_cast<int16_t>(s);
          }
        } else {
          auto* x = reinterpret_cast<BlockQ8_0*>(row) + b;
          x->d = f32_to_f16(1.0f / (1 + t));
          for (int k = 0; k < kQK; ++k) x->qs[k] = code(b * kQK + k);
        }
      }
      if (!k_quant) write_act_block_sums(row, cols);
    }
    const PackedTile ref = packed_tile(type, Isa::Scalar);
    std::vector<float> want(kPackTokens * rows);
    for (int t = 0; t < kPackTokens; ++t) ref(cols, packed.data(), act.data() + t * astride, astride, 1, want.data() + t * rows, rows, rows);
    for (Isa isa : test::all_isas()) {
      const PackedTile tile = packed_tile(type, isa);
      if (!tile || isa == Isa::Scalar) continue;
      std::vector<float> got(want.size(), -7.0f);
      tile(cols, packed.data(), act.data(), astride, kPackTokens, got.data(), rows, rows);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << traits(type).name << " " << kernels::cpu::isa_name(isa) << " at " << i;
      const void* group = packed.data();
      float* y = got.data();
      const int valid = rows;
      packed_gemv(type, isa)(cols, &group, 1, act.data(), &y, &valid);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(got[r], want[r]) << traits(type).name << " gemv " << kernels::cpu::isa_name(isa) << " row " << r;
    }
  }
}

// The packed product through gemm() (every batch size) and gemv(): each row bit-identical
// to the GEMV's, and within the activation-quantization bound of the float64 product.
TEST_P(PackedTypes, GemmRowsEqualGemvAndFloat64Bound) {
  const GgmlType type = GetParam();
  if (!packed_tile(type, kernels::cpu::active_isa()))
    GTEST_SKIP() << "no packed kernel for " << kernels::cpu::active_isa_name();
  const Packed k = make_packed(type, 53, packed_cols(type));
  const QMatrix W = k.W();
  for (const int64_t M : {1, 2, 5, 9, 33}) {
    const int64_t ldx = k.p.cols + 3, ldy = k.p.rows + 5;
    const auto X = test::gaussian(M * ldx);
    std::vector<float> Y(M * ldy, -7.0f);
    gemm(default_thread_pool(), W, {.X = X.data(), .M = M, .ldx = ldx, .Y = Y.data(), .ldy = ldy});
    for (int64_t m = 0; m < M; ++m) {
      std::vector<float> y(k.p.rows);
      gemv(default_thread_pool(), W, X.data() + m * ldx, y.data());
      std::vector<double> bound;
      const auto ref = reference_bounds(traits(type), k.p, X.data() + m * ldx, bound);
      for (int64_t r = 0; r < k.p.rows; ++r) {
        ASSERT_EQ(Y[m * ldy + r], y[r]) << "M=" << M << " m=" << m << " r=" << r;
        ASSERT_NEAR(y[r], ref[r], bound[r]) << "r=" << r;
      }
      for (int64_t r = k.p.rows; r < ldy; ++r) ASSERT_EQ(Y[m * ldy + r], -7.0f);  // padding untouched
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, PackedTypes, ::testing::Values(GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q4_1,
                                                                  GgmlType::Q8_0, GgmlType::MXFP4),
                         [](const auto& info) { return std::string(traits(info.param).name); });

// Every E8M0 exponent 0..255 with random codes and activations: each ISA's tile and gemv
// equal the scalar reference bit for bit. One block per product (exponent 16b + r in
// round b, row r; so each packed half holds 8 of them, the subnormal scales 0 and 1 and
// the largest, 255, among them), whose activation scale (2^15 down to the f16 subnormal
// 2^-24) keeps every product a finite, normal f32: a wrong scale could not hide in
// rounding behind a larger block's term.
TEST(PackedMatmul, Mxfp4EveryExponentEqualsScalarReference) {
  constexpr int64_t rows = kPackRows, cols = kQK;
  const int64_t rb = row_bytes(GgmlType::MXFP4, cols), astride = row_bytes(GgmlType::Q8_0, cols) + 2;
  std::uniform_int_distribution<int> byte(0, 255), code(-127, 127);
  const PackedTile ref = packed_tile(GgmlType::MXFP4, Isa::Scalar);
  ASSERT_NE(ref, nullptr);
  for (int b = 0; b < 16; ++b) {
    std::vector<uint8_t> w(static_cast<size_t>(rows * rb));
    for (int64_t r = 0; r < rows; ++r) {
      auto* q = reinterpret_cast<BlockMXFP4*>(w.data() + r * rb);
      q->e = static_cast<uint8_t>(16 * b + r);
      for (auto& v : q->qs) v = static_cast<uint8_t>(byte(test::qrng()));
      q->qs[0] = 0x77;  // one value 12 in each half: the row's sum is never 0
    }
    std::vector<uint8_t> packed(static_cast<size_t>(packed_bytes(GgmlType::MXFP4, rows, cols)));
    pack_matrix(GgmlType::MXFP4, w.data(), rows, cols, packed.data());
    std::vector<uint8_t> act(kPackTokens * astride);
    for (int t = 0; t < kPackTokens; ++t) {
      auto* x = reinterpret_cast<BlockQ8_0*>(act.data() + t * astride);
      x->d = f32_to_f16(std::ldexp(1.0f + 0.25f * t, std::clamp(120 - 16 * b, -24, 15)));
      for (auto& v : x->qs) v = static_cast<int8_t>(code(test::qrng()));
      x->qs[0] = x->qs[16] = 127;
      for (int k = 1; k < kQK; ++k)
        if (k != 16) x->qs[k] = static_cast<int8_t>(x->qs[k] / 32);  // |Σ v·a| ≥ 2·12·127 − 30·12·3 > 0
      write_act_block_sums(act.data() + t * astride, cols);
    }
    std::vector<float> want(kPackTokens * rows);
    for (int t = 0; t < kPackTokens; ++t)
      ref(cols, packed.data(), act.data() + t * astride, astride, 1, want.data() + t * rows, rows, rows);
    for (float v : want) ASSERT_TRUE(std::isnormal(v)) << v << " round " << b;
    for (Isa isa : test::simd_isas()) {
      const PackedTile tile = packed_tile(GgmlType::MXFP4, isa);
      if (!tile) continue;
      for (int nt = 1; nt <= kPackTokens; ++nt) {
        std::vector<float> got(want.size(), -7.0f);
        tile(cols, packed.data(), act.data(), astride, nt, got.data(), rows, rows);
        for (int64_t i = 0; i < nt * rows; ++i)
          ASSERT_EQ(got[i], want[i]) << kernels::cpu::isa_name(isa) << " round " << b << " nt " << nt << " at " << i;
      }
      std::vector<float> got(rows, -7.0f);
      const void* group = packed.data();
      float* y = got.data();
      const int valid = rows;
      packed_gemv(GgmlType::MXFP4, isa)(cols, &group, 1, act.data(), &y, &valid);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(got[r], want[r]) << "gemv " << kernels::cpu::isa_name(isa) << " round " << b << " row " << r;
    }
  }
}

// Packed matrices among the fused decode projections equal their own gemv.
TEST(PackedMatmul, GemvManyWithPackedOutputsEqualsGemv) {
  if (!packed_tile(GgmlType::Q4_K, kernels::cpu::active_isa()))
    GTEST_SKIP() << "no packed kernel for " << kernels::cpu::active_isa_name();
  const int64_t cols = 512;
  const Packed a = make_packed(GgmlType::Q4_K, 45, cols), b = make_packed(GgmlType::Q6_K, 16, cols);
  const Problem c = make_problem(GgmlType::Q8_0, 29, cols);
  const auto x = test::gaussian(cols);
  std::vector<float> ya(a.p.rows, NAN), yb(b.p.rows, NAN), yc(c.rows, NAN);
  const GemvOutput outs[] = {{a.W(), ya.data()}, {{GgmlType::Q8_0, c.w.data(), c.rows, cols}, yc.data()}, {b.W(), yb.data()}};
  gemv_many(default_thread_pool(), outs, x.data());
  for (const auto& [o, y] : {std::pair{outs[0], &ya}, std::pair{outs[1], &yc}, std::pair{outs[2], &yb}}) {
    std::vector<float> want(o.W.rows);
    gemv(default_thread_pool(), o.W, x.data(), want.data());
    for (int64_t r = 0; r < o.W.rows; ++r) ASSERT_EQ((*y)[r], want[r]) << traits(o.W.type).name << " row " << r;
  }
}

// A packed Q4_1 matrix shares its Q8_0 activation row (with the block sums) with a plain
// Q8_0 one in the fused decode projections: both equal their own gemv.
TEST(PackedMatmul, GemvManyQ4_1SharesItsActivationWithQ8_0) {
  if (!packed_tile(GgmlType::Q4_1, kernels::cpu::active_isa()))
    GTEST_SKIP() << "no packed kernel for " << kernels::cpu::active_isa_name();
  const int64_t cols = 576;
  const Problem c = make_problem(GgmlType::Q8_0, 29, cols);
  const Packed a = make_packed(GgmlType::Q4_1, 45, cols);
  const auto x = test::gaussian(cols);
  for (bool packed_first : {true, false}) {
    std::vector<float> ya(a.p.rows, NAN), yc(c.rows, NAN);
    const GemvOutput pa{a.W(), ya.data()}, pc{{GgmlType::Q8_0, c.w.data(), c.rows, cols}, yc.data()};
    const GemvOutput outs[] = {packed_first ? pa : pc, packed_first ? pc : pa};
    gemv_many(default_thread_pool(), outs, x.data());
    for (const auto& [o, y] : {std::pair{pa, &ya}, std::pair{pc, &yc}}) {
      std::vector<float> want(o.W.rows);
      gemv(default_thread_pool(), o.W, x.data(), want.data());
      for (int64_t r = 0; r < o.W.rows; ++r) ASSERT_EQ((*y)[r], want[r]) << traits(o.W.type).name << " row " << r;
    }
  }
}

TEST(MatmulBadInput, Errors) {
  std::vector<uint8_t> w(144 * 4);
  std::vector<float> x(256), y(4);
  EXPECT_THROW(gemv(default_thread_pool(), {GgmlType::Q4_K, w.data(), 4, 200}, x.data(), y.data()), Error);
  EXPECT_THROW(gemv(default_thread_pool(), {GgmlType::Q4_K, w.data(), 4, 256}, x.data(), y.data(),
                    traits_for(GgmlType::Q8_0, Isa::Scalar)),
               Error);
  EXPECT_THROW(gemv(default_thread_pool(), {GgmlType::Q2_K, w.data(), 4, 256}, x.data(), y.data()), Error);
}

}  // namespace
}  // namespace squeeze::quant
