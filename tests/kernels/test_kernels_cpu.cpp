// tests/kernels/test_kernels_cpu.cpp — every f32 kernel of every ISA table against a
// float64 computation and against the scalar reference, on fresh random inputs of
// awkward sizes. Each bound is derived in a comment where it is used.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/dtype.h"
#include "kernel_test_util.h"
#include "kernels/cpu/ops.h"

namespace squeeze::kernels::cpu {
namespace {

using test::awkward_sizes;
using test::dot_error_bound;
using test::kEpsF32;
using test::random_vector;

class KernelVariant : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    table_ = ops_for(GetParam());
    if (table_ == nullptr) GTEST_SKIP() << isa_name(GetParam()) << " not available on this CPU";
  }
  const Ops& k() const { return *table_; }
  const Ops& ref() const { return reference_ops(); }
  bool is_reference() const { return GetParam() == Isa::Scalar; }

 private:
  const Ops* table_ = nullptr;
};

// Checks `got` against exact `want` within `bound`, and against the scalar
// reference's value `ref` within bound + ref_bound (both sit near the exact value).
#define EXPECT_NEAR_BOTH(got, ref, want, bound)                                        \
  do {                                                                                 \
    EXPECT_LE(std::fabs(static_cast<double>(got) - (want)), (bound)) << "vs float64";  \
    EXPECT_LE(std::fabs(static_cast<double>(got) - static_cast<double>(ref)), 2 * (bound)) << "vs scalar"; \
  } while (0)

TEST_P(KernelVariant, Dot) {
  for (int64_t n : awkward_sizes()) {
    auto a = random_vector(n), b = random_vector(n);
    double exact = 0, sum_abs = 0;
    for (int64_t i = 0; i < n; ++i) {
      exact += static_cast<double>(a[i]) * b[i];
      sum_abs += std::fabs(static_cast<double>(a[i]) * b[i]);
    }
    SCOPED_TRACE(n);
    EXPECT_NEAR_BOTH(k().dot(a.data(), b.data(), n), ref().dot(a.data(), b.data(), n), exact, dot_error_bound(n, sum_abs));
  }
}

TEST_P(KernelVariant, Axpy) {
  for (int64_t n : awkward_sizes()) {
    auto x = random_vector(n), y = random_vector(n);
    auto y_ref = y, y_got = y;
    const float alpha = random_vector(1)[0];
    k().axpy(alpha, x.data(), y_got.data(), n);
    ref().axpy(alpha, x.data(), y_ref.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      // one multiply and one add (or one fused op): at most 2 roundings of terms of this size
      const double want = y[i] + static_cast<double>(alpha) * x[i];
      const double bound = 2 * kEpsF32 * (std::fabs(y[i]) + std::fabs(alpha * x[i]));
      EXPECT_NEAR_BOTH(y_got[i], y_ref[i], want, bound);
    }
  }
}

TEST_P(KernelVariant, GemvAndGemm) {
  for (int64_t rows : {1, 3, 4, 5, 17}) {
    for (int64_t cols : {1, 7, 33, 1000}) {
      const int64_t lda = cols + 3;  // padded rows: the kernel must honour the stride
      auto A = random_vector(rows * lda), x = random_vector(cols);
      std::vector<float> y(static_cast<size_t>(rows)), y_ref(static_cast<size_t>(rows));
      k().gemv(A.data(), lda, x.data(), y.data(), rows, cols);
      ref().gemv(A.data(), lda, x.data(), y_ref.data(), rows, cols);
      for (int64_t r = 0; r < rows; ++r) {
        double exact = 0, sum_abs = 0;
        for (int64_t c = 0; c < cols; ++c) {
          exact += static_cast<double>(A[r * lda + c]) * x[c];
          sum_abs += std::fabs(static_cast<double>(A[r * lda + c]) * x[c]);
        }
        SCOPED_TRACE(testing::Message() << rows << "x" << cols << " row " << r);
        EXPECT_NEAR_BOTH(y[r], y_ref[r], exact, dot_error_bound(cols, sum_abs));
      }
    }
  }
  for (int64_t M : {1, 4, 7}) {
    for (int64_t N : {1, 5, 8, 13}) {
      for (int64_t K : {1, 9, 64, 131}) {
        auto A = random_vector(M * K), B = random_vector(N * K);
        const int64_t ldc = N + 1;
        std::vector<float> C(static_cast<size_t>(M * ldc), NAN), C_ref(static_cast<size_t>(M * ldc), NAN);
        k().gemm_nt(A.data(), K, B.data(), K, C.data(), ldc, M, N, K);
        ref().gemm_nt(A.data(), K, B.data(), K, C_ref.data(), ldc, M, N, K);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double exact = 0, sum_abs = 0;
            for (int64_t kk = 0; kk < K; ++kk) {
              exact += static_cast<double>(A[m * K + kk]) * B[n * K + kk];
              sum_abs += std::fabs(static_cast<double>(A[m * K + kk]) * B[n * K + kk]);
            }
            SCOPED_TRACE(testing::Message() << M << "x" << N << "x" << K);
            EXPECT_NEAR_BOTH(C[m * ldc + n], C_ref[m * ldc + n], exact, dot_error_bound(K, sum_abs));
          }
      }
    }
  }
}

// One packed panel (the prefill GEMM's kernel): every row count around the 6-row tile,
// every panel width, K tails, strided A and C, and accumulation into C. Columns of P past
// nc hold NaN, which must not reach C; C past nc must stay untouched.
TEST_P(KernelVariant, GemmPanel) {
  for (int64_t M : {1, 2, 5, 6, 7, 11, 12, 13, 25}) {
    for (int nc : {1, 7, 8, 9, 16}) {
      for (int64_t K : {1, 3, 64, 257}) {
        for (bool accumulate : {false, true}) {
          const int64_t lda = K + 3, ldc = kGemmPanel + 5;
          auto A = random_vector(M * lda), B = random_vector(nc * K), C0 = random_vector(M * ldc);
          AlignedBuffer panel(static_cast<size_t>(K * kGemmPanel) * sizeof(float));  // the kernel's aligned loads
          float* P = panel.as<float>();
          std::fill(P, P + K * kGemmPanel, NAN);
          for (int j = 0; j < nc; ++j)
            for (int64_t kk = 0; kk < K; ++kk) P[kk * kGemmPanel + j] = B[j * K + kk];
          std::vector<float> C = C0, C_ref = C0;
          k().gemm_panel(A.data(), lda, P, C.data(), ldc, M, nc, K, accumulate);
          ref().gemm_panel(A.data(), lda, P, C_ref.data(), ldc, M, nc, K, accumulate);
          SCOPED_TRACE(testing::Message() << M << "x" << nc << "x" << K << (accumulate ? " accumulate" : ""));
          for (int64_t m = 0; m < M; ++m) {
            for (int j = 0; j < nc; ++j) {
              double exact = accumulate ? C0[m * ldc + j] : 0.0, sum_abs = std::fabs(exact);
              for (int64_t kk = 0; kk < K; ++kk) {
                exact += static_cast<double>(A[m * lda + kk]) * B[j * K + kk];
                sum_abs += std::fabs(static_cast<double>(A[m * lda + kk]) * B[j * K + kk]);
              }
              EXPECT_NEAR_BOTH(C[m * ldc + j], C_ref[m * ldc + j], exact, dot_error_bound(K + 1, sum_abs));
            }
            for (int64_t j = nc; j < ldc; ++j) ASSERT_EQ(C[m * ldc + j], C0[m * ldc + j]) << "column " << j;
          }
        }
      }
    }
  }
}

// The two-panel kernel, where a table has one: every C element bit-identical to what the
// same table's one-panel kernel gives it (so the pairing never changes a result, and the
// one-panel test above covers the accuracy), the second panel's columns past nc1 (NaN in
// the panel) and C past them untouched.
TEST_P(KernelVariant, GemmPanelPairEqualsTwoPanels) {
  if (k().gemm_panel_pair == nullptr) GTEST_SKIP() << "no two-panel kernel in this table";
  for (int64_t M : {1, 3, 7, 8, 9, 17, 48}) {
    for (int nc1 : {1, 9, 16}) {
      for (int64_t K : {1, 3, 257}) {
        for (bool accumulate : {false, true}) {
          const int64_t lda = K + 5, ldc = 2 * kGemmPanel + 3;
          auto A = random_vector(M * lda), C0 = random_vector(M * ldc);
          AlignedBuffer panels(static_cast<size_t>(2 * K * kGemmPanel) * sizeof(float));
          float* P0 = panels.as<float>();
          float* P1 = P0 + K * kGemmPanel;
          const auto b = random_vector(2 * K * kGemmPanel);
          std::copy(b.begin(), b.end(), P0);
          for (int64_t kk = 0; kk < K; ++kk) std::fill(P1 + kk * kGemmPanel + nc1, P1 + (kk + 1) * kGemmPanel, NAN);
          std::vector<float> C = C0, C_two = C0;
          k().gemm_panel_pair(A.data(), lda, P0, P1, C.data(), ldc, M, nc1, K, accumulate);
          k().gemm_panel(A.data(), lda, P0, C_two.data(), ldc, M, kGemmPanel, K, accumulate);
          k().gemm_panel(A.data(), lda, P1, C_two.data() + kGemmPanel, ldc, M, nc1, K, accumulate);
          SCOPED_TRACE(testing::Message() << M << "x(16+" << nc1 << ")x" << K << (accumulate ? " accumulate" : ""));
          for (int64_t i = 0; i < M * ldc; ++i) ASSERT_EQ(std::bit_cast<uint32_t>(C[i]), std::bit_cast<uint32_t>(C_two[i])) << i;
        }
      }
    }
  }
}

TEST_P(KernelVariant, RmsNorm) {
  for (int64_t n : awkward_sizes()) {
    auto x = random_vector(n, -3, 3), w = random_vector(n, 0.5f, 1.5f);
    std::vector<float> y(static_cast<size_t>(n)), y_ref(static_cast<size_t>(n));
    const float eps = 1e-5f;
    k().rmsnorm(x.data(), w.data(), y.data(), n, eps);
    ref().rmsnorm(x.data(), w.data(), y_ref.data(), n, eps);
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double scale = 1.0 / std::sqrt(ss / n + eps);
    for (int64_t i = 0; i < n; ++i) {
      // sum of squares: relative error <= (n+2)u; the square root halves it; then a
      // divide and two multiplies add ~4u.
      const double want = x[i] * scale * w[i];
      EXPECT_NEAR_BOTH(y[i], y_ref[i], want, (0.5 * (n + 2) + 6) * kEpsF32 * std::fabs(want));
    }
    // in place, no weights
    auto z = x;
    k().rmsnorm(z.data(), nullptr, z.data(), n, eps);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(z[i], x[i] * scale, (0.5 * (n + 2) + 6) * kEpsF32 * std::fabs(x[i] * scale));
  }
}

TEST_P(KernelVariant, RopeBothPairings) {
  for (RopeStyle style : {RopeStyle::Normal, RopeStyle::NeoX}) {
    for (int64_t head_dim : {2, 8, 64, 128, 80}) {
      for (int64_t rot_dim : {head_dim, head_dim / 2 - (head_dim / 2) % 2}) {
        if (rot_dim <= 0) continue;
        // Scaled RoPE: none, linear (positions × 1/4), and per-pair frequency divisors (Llama 3).
        std::vector<float> factors(static_cast<size_t>(rot_dim / 2));
        for (float& f : factors) f = 1.0f + 7.0f * std::fabs(random_vector(1)[0]) / 3.0f;
        for (int scaling = 0; scaling < 3; ++scaling)
        for (int64_t pos : {0, 1, 77, 4096, 131071}) {
          const int64_t n_heads = 3;
          RopeParams p{.n_heads = n_heads, .head_dim = head_dim, .rot_dim = rot_dim, .position = pos,
                       .freq_base = 10000.0f, .freq_scale = scaling == 1 ? 0.25f : 1.0f,
                       .freq_factors = scaling == 2 ? factors.data() : nullptr, .style = style};
          if (pos == 77) p.freq_base = 1e6f;  // the global-layer base of long-context models
          auto x = random_vector(n_heads * head_dim);
          auto got = x, want_ref = x;
          k().rope(got.data(), p);
          ref().rope(want_ref.data(), p);
          for (int64_t h = 0; h < n_heads; ++h) {
            for (int64_t i = 0; i < head_dim; ++i) {
              // float64 rotation with exact trig; pair partner by pairing style
              double want = x[h * head_dim + i];
              if (i < rot_dim) {
                const int64_t pair = style == RopeStyle::Normal ? i / 2 : i % (rot_dim / 2);
                const int64_t i0 = style == RopeStyle::Normal ? 2 * pair : pair;
                const int64_t i1 = style == RopeStyle::Normal ? 2 * pair + 1 : pair + rot_dim / 2;
                const double theta = static_cast<double>(pos) * p.freq_scale *
                                     std::pow(static_cast<double>(p.freq_base), -2.0 * pair / rot_dim) /
                                     (scaling == 2 ? factors[static_cast<size_t>(pair)] : 1.0);
                const double a = x[h * head_dim + i0], b = x[h * head_dim + i1];
                want = (i == i0) ? a * std::cos(theta) - b * std::sin(theta) : a * std::sin(theta) + b * std::cos(theta);
              }
              // cos/sin rounded to f32 (1u each), two products and a sum (3u): 5u of |a|+|b| <= 2
              const double bound = 5 * kEpsF32 * 2.0;
              SCOPED_TRACE(testing::Message() << "scaling " << scaling << " style " << int(style) << " d " << head_dim << " rot " << rot_dim << " pos " << pos << " i " << i);
              EXPECT_NEAR_BOTH(got[h * head_dim + i], want_ref[h * head_dim + i], want, bound);
            }
          }
        }
      }
    }
  }
}

TEST_P(KernelVariant, SoftmaxIsStable) {
  for (int64_t n : awkward_sizes()) {
    for (float shift : {0.0f, 1000.0f, -1000.0f}) {  // naive exp would overflow/underflow
      auto x = random_vector(n, -10, 10);
      for (auto& v : x) v += shift;
      auto got = x, want_ref = x;
      k().softmax(got.data(), n);
      ref().softmax(want_ref.data(), n);
      double mx = -INFINITY, sum = 0;
      for (float v : x) mx = std::max(mx, static_cast<double>(v));
      for (float v : x) sum += std::exp(v - mx);
      for (int64_t i = 0; i < n; ++i) {
        // x - max rounds (1u of |x| <= 1010, i.e. up to ~1e-4 absolute in the exponent,
        // so |x|*u relative after exp), exp ~4u, the positive sum (n+1)u, the division 1u.
        const double want = std::exp(x[i] - mx) / sum;
        const double bound = ((n + 8) * kEpsF32 + 2 * std::fabs(x[i]) * kEpsF32) * want + 1e-37;
        SCOPED_TRACE(testing::Message() << "n " << n << " shift " << shift);
        EXPECT_NEAR_BOTH(got[i], want_ref[i], want, bound);
      }
    }
  }
}

TEST_P(KernelVariant, Activations) {
  for (int64_t n : awkward_sizes()) {
    auto x = random_vector(n, -8, 8), up = random_vector(n, -2, 2);
    std::vector<float> y(static_cast<size_t>(n)), yr(static_cast<size_t>(n));
    // silu = x*sigmoid(x): exp ~4u, add, divide, multiply ~3u, plus the input's effect
    // |x|(1-sigmoid)u <= 8u on [-8, 8]: within 16u of |y|.
    k().silu(x.data(), y.data(), n);
    ref().silu(x.data(), yr.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[i], want = v / (1 + std::exp(-v));
      EXPECT_NEAR_BOTH(y[i], yr[i], want, 16 * kEpsF32 * std::fabs(want) + 1e-37);
    }
    k().swiglu(x.data(), up.data(), y.data(), n);
    ref().swiglu(x.data(), up.data(), yr.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[i], want = v / (1 + std::exp(-v)) * up[i];
      EXPECT_NEAR_BOTH(y[i], yr[i], want, 17 * kEpsF32 * std::fabs(want) + 1e-37);
    }
    auto xg = random_vector(n, -5, 5);
    k().gelu(xg.data(), y.data(), n);
    ref().gelu(xg.data(), yr.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      // sigmoid(2z) with |2z| <= 11: the argument's 3u error scales by |2z| -> ~40u of |y|;
      // the reference's 1 + tanh(z) cancels for negative x, costing u*|x| absolute.
      const double v = xg[i];
      const double want = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
      EXPECT_NEAR_BOTH(y[i], yr[i], want, 48 * kEpsF32 * std::fabs(want) + 2 * kEpsF32 * std::fabs(v));
    }
    // geglu = gelu(gate)·up (Gemma's FFN), in place as the forward pass calls it: gelu's
    // bound times |up| plus one rounding of the product.
    std::vector<float> yi = xg;
    k().geglu(yi.data(), up.data(), yi.data(), n);
    ref().geglu(xg.data(), up.data(), yr.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double v = xg[i], u = up[i];
      const double want = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))) * u;
      EXPECT_NEAR_BOTH(yi[i], yr[i], want, 49 * kEpsF32 * std::fabs(want) + 2 * kEpsF32 * std::fabs(v * u));
    }
  }
}

TEST_P(KernelVariant, ElementwiseAddMulAreExact) {
  // a single IEEE operation per element: correctly rounded, so every variant agrees bit for bit
  for (int64_t n : awkward_sizes()) {
    auto a = random_vector(n, -100, 100), b = random_vector(n, -100, 100);
    std::vector<float> y(static_cast<size_t>(n)), yr(static_cast<size_t>(n));
    k().add(a.data(), b.data(), y.data(), n);
    ref().add(a.data(), b.data(), yr.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(y[i], yr[i]);
      EXPECT_EQ(y[i], static_cast<float>(static_cast<double>(a[i]) + b[i]));
    }
    k().mul(a.data(), b.data(), y.data(), n);
    ref().mul(a.data(), b.data(), yr.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(y[i], yr[i]);
      EXPECT_EQ(y[i], static_cast<float>(static_cast<double>(a[i]) * b[i]));
    }
  }
}

bool same_or_both_nan(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

TEST_P(KernelVariant, RowConversionsBitExact) {
  // all 65536 half patterns through the row converters, in awkward row lengths
  std::vector<uint16_t> all(65536 + 13);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);  // visits every pattern
  std::vector<float> f(all.size()), fr(all.size());
  for (auto [conv, ref_conv] : {std::pair{k().f16_to_f32, ref().f16_to_f32}, std::pair{k().bf16_to_f32, ref().bf16_to_f32}}) {
    conv(all.data(), f.data(), static_cast<int64_t>(all.size()));
    ref_conv(all.data(), fr.data(), static_cast<int64_t>(all.size()));
    for (size_t i = 0; i < all.size(); ++i) ASSERT_TRUE(same_or_both_nan(f[i], fr[i])) << i;
  }
  for (int64_t n : awkward_sizes()) {
    auto x = random_vector(n, -70000, 70000);
    for (int64_t i = 0; i < n; i += 5) x[i] *= 1e-6f;  // subnormal halves too
    if (n > 3) x[3] = NAN;
    std::vector<uint16_t> h(static_cast<size_t>(n)), hr(static_cast<size_t>(n));
    k().f32_to_f16(x.data(), h.data(), n);
    ref().f32_to_f16(x.data(), hr.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(h[i], hr[i]) << x[i];
    k().f32_to_bf16(x.data(), h.data(), n);
    ref().f32_to_bf16(x.data(), hr.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(h[i], hr[i]) << x[i];
  }
}

// Scalar runs too, so the reference itself is checked against float64. Tables this CPU
// cannot run are skipped (with a message), so every table this machine supports is tested.
INSTANTIATE_TEST_SUITE_P(AllIsas, KernelVariant, ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512),
                         [](const auto& info) {
                           switch (info.param) {
                             case Isa::Scalar: return std::string("scalar");
                             case Isa::Avx2: return std::string("avx2");
                             case Isa::Avx512: return std::string("avx512");
                           }
                           return std::string("unknown");
                         });

TEST(KernelDispatch, ChoosesBestAvailable) {
  const std::vector<Isa> isas = available_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::Scalar);
  for (Isa isa : isas) EXPECT_EQ(ops_for(isa)->isa, isa);
  // SQUEEZE_ISA (set by the test command's forced-ISA runs) may pick a lower table.
  if (std::getenv("SQUEEZE_ISA") == nullptr) EXPECT_EQ(ops().isa, isas.back());
  EXPECT_EQ(reference_ops().isa, Isa::Scalar);
}

}  // namespace
}  // namespace squeeze::kernels::cpu
