// tests/quant/quant_test_util.h — random data and error-bound helpers for quant tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "quant/blocks.h"
#include "kernels/cpu/ops.h"
#include "quant/traits.h"

namespace squeeze::test {

// Every kernel ISA this CPU runs (scalar first), and the SIMD ones among them: the quant
// tests compare each against the scalar reference.
inline std::vector<kernels::cpu::Isa> all_isas() { return kernels::cpu::available_isas(); }
inline std::vector<kernels::cpu::Isa> simd_isas() {
  auto isas = all_isas();
  isas.erase(isas.begin());
  return isas;
}

using quant::GgmlType;

inline std::mt19937& qrng() {
  static std::mt19937 gen(std::random_device{}());
  return gen;
}

inline std::vector<float> gaussian(int64_t n, float sigma = 1.0f) {
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(qrng());
  return v;
}

// Heavy-tailed: Student-t with 3 degrees of freedom (finite variance, frequent outliers).
inline std::vector<float> heavy_tailed(int64_t n) {
  std::student_t_distribution<float> d(3.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(qrng());
  return v;
}

// Unit roundoff of f32.
constexpr double kU = 5.96e-8;

// The part of each dequantized weight that the kernels handle as a separate term
// (Q4_K/Q5_K: −dmin·m; Q4_1/Q5_1: +m; Q6_K: −32·d·sc; MXFP4: −12·d, its AVX2 kernels' codes
// being the table value + 12), found by dequantizing the block with every code zeroed
// (MXFP4: set to nibble 15, the value −12). Sums of |w| + 2|offset| bound the magnitudes the kernels add, so
// cancellation between the terms is accounted for in the error bounds.
inline std::vector<float> code_zero_offsets(GgmlType type, const void* row, int64_t n) {
  const auto& t = *quant::traits_for(type, quant::Isa::Scalar);
  std::vector<uint8_t> copy(static_cast<const uint8_t*>(row),
                            static_cast<const uint8_t*>(row) + n / t.block_size * t.block_bytes);
  std::vector<float> out(static_cast<size_t>(n), 0.0f);
  for (int64_t b = 0; b < n / t.block_size; ++b) {
    uint8_t* p = copy.data() + b * t.block_bytes;
    switch (type) {
      case GgmlType::Q4_K: std::memset(reinterpret_cast<quant::BlockQ4_K*>(p)->qs, 0, 128); break;
      case GgmlType::Q4_1: std::memset(reinterpret_cast<quant::BlockQ4_1*>(p)->qs, 0, 16); break;
      case GgmlType::MXFP4: std::memset(reinterpret_cast<quant::BlockMXFP4*>(p)->qs, 0xFF, 16); break;
      case GgmlType::Q5_1: {
        auto* q = reinterpret_cast<quant::BlockQ5_1*>(p);
        std::memset(q->qs, 0, sizeof q->qs), std::memset(q->qh, 0, sizeof q->qh);
        break;
      }
      case GgmlType::Q5_K: {
        auto* q = reinterpret_cast<quant::BlockQ5_K*>(p);
        std::memset(q->qs, 0, sizeof q->qs), std::memset(q->qh, 0, sizeof q->qh);
        break;
      }
      case GgmlType::Q6_K: {
        auto* q = reinterpret_cast<quant::BlockQ6_K*>(p);
        std::memset(q->ql, 0, sizeof q->ql), std::memset(q->qh, 0, sizeof q->qh);
        break;
      }
      default: return out;  // the other types' kernels use signed codes directly: no offset term
    }
  }
  t.dequantize_row(copy.data(), out.data(), n);
  return out;
}

}  // namespace squeeze::test
