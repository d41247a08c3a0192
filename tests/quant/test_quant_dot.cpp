// tests/quant/test_quant_dot.cpp — dot kernels: AVX2 vs the scalar reference, both vs a
// float64 dot of the dequantized values; dot_multi vs vec_dot; activation quantizers.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/dtype.h"

#include "quant/quantize.h"
#include "quant_test_util.h"

namespace squeeze::quant {
namespace {

using test::kU;

struct DotCase {
  std::vector<uint8_t> w, a;       // weight row (type) and activation row (dot_type)
  std::vector<float> wf, af;       // their dequantized values
  double exact = 0, magnitude = 0;  // float64 dot of wf·af; Σ(|w|+2|offset|)|a|
};

DotCase make_case(GgmlType type, int64_t n, const QuantTraits& act_src) {
  const QuantTraits& t = *traits_for(type, Isa::Scalar);
  DotCase c;
  const auto x = test::gaussian(n), y = test::gaussian(n);
  c.w.resize(row_bytes(type, n));
  t.quantize_row(x.data(), c.w.data(), n, nullptr);
  c.wf.resize(n);
  t.dequantize_row(c.w.data(), c.wf.data(), n);
  if (t.dot_type == GgmlType::F32) {
    c.a.resize(n * sizeof(float));
    std::memcpy(c.a.data(), y.data(), c.a.size());
    c.af = y;
  } else {
    c.a.resize(row_bytes(t.dot_type, n));
    act_src.quantize_act_row(y.data(), c.a.data(), n);
    c.af.resize(n);
    traits_for(t.dot_type, Isa::Scalar)->dequantize_row(c.a.data(), c.af.data(), n);
  }
  const auto off = test::code_zero_offsets(type, c.w.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    c.exact += static_cast<double>(c.wf[i]) * c.af[i];
    c.magnitude += (std::fabs(c.wf[i]) + 2.0 * std::fabs(off[i])) * std::fabs(c.af[i]);
  }
  return c;
}

// Error of a kernel's f32 result against the exact sum of the dequantized products.
// Integer block sums are exact; what rounds is: the dequantized values themselves (≤ 3
// roundings each for the weight, 1 for the activation), each block's scale product and
// its i32→f32 conversion (≤ 3), and the f32 accumulation over nb block terms (or n
// products for the plain types, Higham's γ_n). Magnitude includes the separately
// summed offset terms, so cancellation between them is covered.
double dot_bound(const QuantTraits& t, int64_t n, double magnitude) {
  const int64_t terms = t.block_size == 1 ? n : n / t.block_size;
  return 1.01 * static_cast<double>(terms + 10) * kU * magnitude + 1e-30;
}

class Dot : public ::testing::TestWithParam<GgmlType> {};

TEST_P(Dot, SimdMatchesScalarAndFloat64) {
  const GgmlType type = GetParam();
  const QuantTraits& ref = *traits_for(type, Isa::Scalar);
  const QuantTraits& act_src = *traits_for(ref.dot_type == GgmlType::F32 ? GgmlType::Q8_0 : ref.dot_type, Isa::Scalar);
  std::vector<int64_t> sizes{256, 512, 4096 + 256, 11008};
  // 1 block, odd block counts (3, 11, 129), a large row (344 blocks above).
  if (ref.block_size == 32) sizes.insert(sizes.end(), {32, 96, 352, 4096 + 32});
  if (ref.block_size == 1) sizes.insert(sizes.end(), {1, 7, 15, 33, 4097});
  for (int64_t n : sizes) {
    for (int rep = 0; rep < 3; ++rep) {
      const DotCase c = make_case(type, n, act_src);
      const double bound = dot_bound(ref, n, c.magnitude);
      const float r = ref.vec_dot(n, c.w.data(), c.a.data());
      EXPECT_NEAR(r, c.exact, bound) << ref.name << " scalar n=" << n;
      for (Isa isa : test::simd_isas()) {
        const QuantTraits* simd = traits_for(type, isa);
        const float s = simd->vec_dot(n, c.w.data(), c.a.data());
        EXPECT_NEAR(s, c.exact, bound) << ref.name << " " << isa_name(isa) << " n=" << n;
        // Both within `bound` of the exact sum, so within 2·bound of each other.
        EXPECT_NEAR(s, r, 2 * bound) << ref.name << " " << isa_name(isa) << " vs scalar n=" << n;
      }
    }
  }
}

TEST_P(Dot, MultiRowEqualsSingleRow) {
  const GgmlType type = GetParam();
  for (Isa isa : test::all_isas()) {
    const QuantTraits* t = traits_for(type, isa);
    if (!t) continue;
    const QuantTraits& act_src = *traits_for(t->dot_type == GgmlType::F32 ? GgmlType::Q8_0 : t->dot_type, Isa::Scalar);
    // Block counts that leave every tail of a 4-block step.
    for (const int64_t blocks : {32, 33, 34, 35, 5}) {
      const int64_t n = blocks * (t->block_size == 1 ? 32 : t->block_size);
      SCOPED_TRACE(n);
      DotCase rows[kMaxDotRows];
      for (auto& r : rows) r = make_case(type, n, act_src);
      // Pack the activation rows at a stride, as the GEMM does.
      const size_t stride = rows[0].a.size() + 64;
      std::vector<uint8_t> packed(stride * kMaxDotRows);
      for (int i = 0; i < kMaxDotRows; ++i) std::memcpy(packed.data() + i * stride, rows[i].a.data(), rows[i].a.size());
      for (int nt = 1; nt <= kMaxDotRows; ++nt) {
        float out[kMaxDotRows];
        t->dot_multi(n, rows[0].w.data(), packed.data(), static_cast<int64_t>(stride), nt, out);
        // Each row's accumulation runs the same operations in the same order: identical bits.
        for (int i = 0; i < nt; ++i)
          EXPECT_EQ(out[i], t->vec_dot(n, rows[0].w.data(), rows[i].a.data())) << t->name << " nt=" << nt;
      }
    }
  }
}

// The GEMM's micro-tile (dot_tile, where a type has one): nr weight rows × nt activation
// rows, every result bit-identical to vec_dot of that pair, at every tail length.
TEST_P(Dot, TileEqualsSingleRow) {
  const GgmlType type = GetParam();
  for (Isa isa : test::simd_isas()) {
    const QuantTraits* t = traits_for(type, isa);
    if (!t->dot_tile) continue;
    const QuantTraits& act_src = *traits_for(t->dot_type, Isa::Scalar);
    for (const int64_t blocks : {32, 33, 34, 35, 5, 1}) {
      const int64_t n = blocks * t->block_size;
      SCOPED_TRACE(n);
      DotCase cases[kMaxDotRows];
      for (auto& c : cases) c = make_case(type, n, act_src);
      const size_t ws = cases[0].w.size() + 40, as = cases[0].a.size() + 24;
      std::vector<uint8_t> w(ws * kMaxDotRows), a(as * kMaxDotRows);
      for (int i = 0; i < kMaxDotRows; ++i) {
        std::memcpy(w.data() + i * ws, cases[i].w.data(), cases[i].w.size());
        std::memcpy(a.data() + i * as, cases[i].a.data(), cases[i].a.size());
      }
      for (int nr = 1; nr <= kMaxDotRows; ++nr)
        for (int nt = 1; nt <= kMaxDotRows; ++nt) {
          float out[kMaxDotRows * kMaxDotRows];
          t->dot_tile(n, w.data(), static_cast<int64_t>(ws), nr, a.data(), static_cast<int64_t>(as), nt, out);
          for (int r = 0; r < nr; ++r)
            for (int i = 0; i < nt; ++i)
              ASSERT_EQ(out[r * nt + i], t->vec_dot(n, cases[r].w.data(), cases[i].a.data()))
                  << t->name << " nr=" << nr << " nt=" << nt << " r=" << r << " t=" << i;
        }
    }
  }
}

// The GEMV's row groups (dot_wrows, where a type has them): nr weight rows at a stride
// against one activation row, each result bit-identical to vec_dot of that row, at
// block counts that leave every tail length of the 4-block step (1, 2, 3, 4, 5, 11, 129).
TEST_P(Dot, WeightRowGroupsEqualSingleRow) {
  const GgmlType type = GetParam();
  for (Isa isa : test::simd_isas()) {
    const QuantTraits* t = traits_for(type, isa);
    if (!t->dot_wrows) continue;
    const QuantTraits& act_src = *traits_for(t->dot_type, Isa::Scalar);
    for (const int64_t blocks : {1, 2, 3, 4, 5, 11, 129}) {  // every tail of the 4-block steps
      const int64_t n = blocks * t->block_size;
      DotCase rows[kMaxDotRows];
      for (auto& r : rows) r = make_case(type, n, act_src);
      const size_t stride = rows[0].w.size() + 20;  // rows not packed back to back
      std::vector<uint8_t> packed(stride * kMaxDotRows);
      for (int i = 0; i < kMaxDotRows; ++i) std::memcpy(packed.data() + i * stride, rows[i].w.data(), rows[i].w.size());
      for (int nr = 1; nr <= kMaxDotRows; ++nr) {
        float out[kMaxDotRows];
        t->dot_wrows(n, packed.data(), static_cast<int64_t>(stride), nr, rows[0].a.data(), out);
        for (int i = 0; i < nr; ++i) {
          EXPECT_EQ(out[i], t->vec_dot(n, rows[i].w.data(), rows[0].a.data())) << t->name << " n=" << n << " nr=" << nr;
          const float r = traits_for(type, Isa::Scalar)->vec_dot(n, rows[i].w.data(), rows[0].a.data());
          double exact = 0, mag = 0;
          const auto off = test::code_zero_offsets(type, rows[i].w.data(), n);
          for (int64_t j = 0; j < n; ++j) {
            exact += static_cast<double>(rows[i].wf[j]) * rows[0].af[j];
            mag += (std::fabs(rows[i].wf[j]) + 2.0 * std::fabs(off[j])) * std::fabs(rows[0].af[j]);
          }
          EXPECT_NEAR(out[i], r, 2 * dot_bound(*t, n, mag)) << t->name << " n=" << n << " nr=" << nr;
        }
      }
    }
  }
}

// Blocks as any other GGUF writer might produce them: every code, scale and min byte
// random (Q8_0 codes include -128), only the f16 fields kept finite. MXFP4's E8M0 byte is
// drawn from [0, 200] (subnormal scales included; far above, 12·d·Σ|a| overflows f32) on
// odd repetitions, from around 2^0 on even ones (where no block dwarfs the others).
class DotBlocks : public ::testing::TestWithParam<GgmlType> {};

TEST_P(DotBlocks, ArbitraryBlocksSimdMatchesScalar) {
  const GgmlType type = GetParam();
  const QuantTraits& ref = *traits_for(type, Isa::Scalar);
  const int64_t n = 4096 + 256;
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> g(0.0f, 0.01f);
  for (int rep = 0; rep < 5; ++rep) {
    std::vector<uint8_t> w(row_bytes(type, n));
    for (auto& b : w) b = static_cast<uint8_t>(byte(test::qrng()));
    for (int64_t b = 0; b < n / ref.block_size; ++b) {
      uint8_t* p = w.data() + b * ref.block_bytes;
      auto put = [&](size_t off) {
        const uint16_t h = f32_to_f16(g(test::qrng()));
        std::memcpy(p + off, &h, 2);
      };
      if (type == GgmlType::MXFP4) p[0] = static_cast<uint8_t>(rep % 2 ? byte(test::qrng()) * 200 / 255
                                                                        : 117 + byte(test::qrng()) % 21);
      else if (type == GgmlType::Q6_K) put(offsetof(BlockQ6_K, d));
      else put(0);
      if (type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q4_1 || type == GgmlType::Q5_1) put(2);
    }
    const auto y = test::heavy_tailed(n);
    std::vector<uint8_t> a(row_bytes(ref.dot_type, n));
    traits_for(ref.dot_type, Isa::Scalar)->quantize_act_row(y.data(), a.data(), n);
    std::vector<float> wf(n), af(n);
    ref.dequantize_row(w.data(), wf.data(), n);
    traits_for(ref.dot_type, Isa::Scalar)->dequantize_row(a.data(), af.data(), n);
    const auto off = test::code_zero_offsets(type, w.data(), n);
    double exact = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      exact += static_cast<double>(wf[i]) * af[i];
      mag += (std::fabs(wf[i]) + 2.0 * std::fabs(off[i])) * std::fabs(af[i]);
    }
    const double bound = dot_bound(ref, n, mag);
    const float r = ref.vec_dot(n, w.data(), a.data());
    EXPECT_NEAR(r, exact, bound) << ref.name;
    for (Isa isa : test::simd_isas())
      EXPECT_NEAR(traits_for(type, isa)->vec_dot(n, w.data(), a.data()), exact, bound) << ref.name << " " << isa_name(isa);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, Dot,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                                           GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::MXFP4,
                                           GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K),
                         [](const auto& info) { return std::string(traits(info.param).name); });

INSTANTIATE_TEST_SUITE_P(Types, DotBlocks,
                         ::testing::Values(GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                           GgmlType::MXFP4, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K),
                         [](const auto& info) { return std::string(traits(info.param).name); });

TEST(ActivationQuant, SimdBytesEqualScalar) {
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q8_K}) {
    const QuantTraits* ref = traits_for(type, Isa::Scalar);
    for (Isa isa : test::simd_isas()) {
      const QuantTraits* simd = traits_for(type, isa);
      for (int64_t n : {256, 4096 + 256}) {
        auto x = test::heavy_tailed(n);
        x[5] = 0.0f;
        std::vector<uint8_t> a(row_bytes(type, n)), b(a.size());
        ref->quantize_act_row(x.data(), a.data(), n);
        simd->quantize_act_row(x.data(), b.data(), n);
        EXPECT_EQ(a, b) << ref->name << " " << isa_name(isa);
      }
    }
  }
}

TEST(ActivationQuant, Q8KBsumsAndError) {
  const int64_t n = 512;
  const auto x = test::gaussian(n);
  std::vector<BlockQ8_K> b(n / kQK_K);
  traits(GgmlType::Q8_K).quantize_act_row(x.data(), b.data(), n);
  for (const auto& blk : b) {
    float amax = 0;
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += blk.qs[16 * g + i];
      EXPECT_EQ(blk.bsums[g], s);
    }
    (void)amax;
  }
  // Rounding to the grid d = amax/127: every element within d/2 (+ f32 rounding).
  std::vector<float> y(n);
  traits(GgmlType::Q8_K).dequantize_row(b.data(), y.data(), n);
  for (int64_t i = 0; i < n; ++i) EXPECT_LE(std::fabs(y[i] - x[i]), b[i / kQK_K].d * (0.5 + 1e-5));
}

}  // namespace
}  // namespace squeeze::quant

namespace squeeze::quant {
namespace {

// Every ISA's dequantizer performs the scalar reference's float operations in the same
// order, so they must agree bit for bit — on blocks made by the quantizer and on blocks of
// random bytes (every code and scale pattern; f16 scales kept finite).
TEST(Dequantize, EveryIsaIsBitIdenticalToTheReference) {
  for (GgmlType type : supported_types()) {
    const QuantTraits* ref = traits_for(type, Isa::Scalar);
    for (Isa isa : test::simd_isas()) {
      const QuantTraits* simd = traits_for(type, isa);
      const int64_t n = 4 * ref->block_size * (ref->block_size == 1 ? 64 : 1);
      for (int variant = 0; variant < 2; ++variant) {
        std::vector<uint8_t> row(static_cast<size_t>(row_bytes(type, n)));
        if (variant == 0) {
          const auto x = test::gaussian(n);
          ref->quantize_row(x.data(), row.data(), n, nullptr);
        } else {
          for (auto& byte : row) byte = static_cast<uint8_t>(test::qrng()());
          if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) {
            const auto x = test::gaussian(n);  // raw bytes would be NaNs and infinities
            ref->quantize_row(x.data(), row.data(), n, nullptr);
          } else {
            // finite f16 scales: clear the top exponent bit of every 16-bit field that holds one
            const auto x = test::gaussian(n);
            std::vector<uint8_t> good(row.size());
            ref->quantize_row(x.data(), good.data(), n, nullptr);
            for (size_t b = 0; b < row.size(); b += static_cast<size_t>(ref->block_bytes)) {
              // keep the quantizer's scale fields (d, dmin) and randomise only the codes
              const bool two_fields = type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q4_1 ||
                                      type == GgmlType::Q5_1;
              // (MXFP4: every E8M0 byte is a finite scale or, times 12, an infinity on both sides)
              const size_t scale_bytes = type == GgmlType::Q6_K || type == GgmlType::MXFP4 ? 0 : two_fields ? 4 : 2;
              std::memcpy(row.data() + b, good.data() + b, scale_bytes);
              if (type == GgmlType::Q6_K) std::memcpy(row.data() + b + 208, good.data() + b + 208, 2);
            }
          }
        }
        std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
        ref->dequantize_row(row.data(), a.data(), n);
        simd->dequantize_row(row.data(), b.data(), n);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(a[static_cast<size_t>(i)]), std::bit_cast<uint32_t>(b[static_cast<size_t>(i)]))
              << ref->name << " " << isa_name(isa) << " variant " << variant << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace squeeze::quant
