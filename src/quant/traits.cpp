// quant/traits.cpp — the per-ISA traits tables and their lookup.
#include "quant/traits.h"

#include <array>

#include "core/cpu_features.h"
#include "core/error.h"
#include "quant/kernels_impl.h"

namespace squeeze::quant {
namespace {

using namespace impl;

// Calls vec_dot once per activation row: the scalar reference of dot_multi.
template <float (*Dot)(int64_t, const void*, const void*)>
void ref_multi(int64_t n, const void* w, const void* a, int64_t stride, int nt, float* out) {
  for (int t = 0; t < nt; ++t) out[t] = Dot(n, w, static_cast<const char*>(a) + t * stride);
}

constexpr GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                               GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                               GgmlType::MXFP4, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

#define SQZ_REF_ROW(T, ENUM, NAME, BS, BB, DOT_T, ACT)                                                      \
  QuantTraits{GgmlType::ENUM, Isa::Scalar, NAME, BS, BB, GgmlType::DOT_T, ref_dequantize_##T, ref_quantize_##T, ACT, \
              ref_dot_##T, ref_multi<ref_dot_##T>}
#define SQZ_AVX2_ROW(T, ENUM, NAME, BS, BB, DOT_T, ACT, DEQ) \
  QuantTraits{GgmlType::ENUM, Isa::Avx2, NAME, BS, BB, GgmlType::DOT_T, DEQ, ref_quantize_##T, ACT, avx2_dot_##T, avx2_multi_##T}
#define SQZ_AVX2_ROW_W(T, ENUM, NAME, BS, BB, DEQ)                                                           \
  QuantTraits{GgmlType::ENUM, Isa::Avx2, NAME, BS, BB, GgmlType::Q8_0, DEQ, ref_quantize_##T, nullptr, avx2_dot_##T, \
              avx2_multi_##T, avx2_wrows_##T, avx2_tile_##T}

const std::array kScalar{
    SQZ_REF_ROW(f32, F32, "F32", 1, 4, F32, nullptr),
    SQZ_REF_ROW(f16, F16, "F16", 1, 2, F32, nullptr),
    SQZ_REF_ROW(bf16, BF16, "BF16", 1, 2, F32, nullptr),
    SQZ_REF_ROW(q8_0, Q8_0, "Q8_0", 32, 34, Q8_0, ref_quantize_act_q8_0),
    SQZ_REF_ROW(q4_0, Q4_0, "Q4_0", 32, 18, Q8_0, nullptr),
    SQZ_REF_ROW(q4_1, Q4_1, "Q4_1", 32, 20, Q8_0, nullptr),
    SQZ_REF_ROW(q5_0, Q5_0, "Q5_0", 32, 22, Q8_0, nullptr),
    SQZ_REF_ROW(q5_1, Q5_1, "Q5_1", 32, 24, Q8_0, nullptr),
    SQZ_REF_ROW(mxfp4, MXFP4, "MXFP4", 32, 17, Q8_0, nullptr),
    SQZ_REF_ROW(q4_k, Q4_K, "Q4_K", 256, 144, Q8_K, nullptr),
    SQZ_REF_ROW(q5_k, Q5_K, "Q5_K", 256, 176, Q8_K, nullptr),
    SQZ_REF_ROW(q6_k, Q6_K, "Q6_K", 256, 210, Q8_K, nullptr),
    QuantTraits{GgmlType::Q8_K, Isa::Scalar, "Q8_K", 256, 292, GgmlType::Q8_K, ref_dequantize_q8_k, ref_quantize_q8_k,
                ref_quantize_act_q8_k, nullptr, nullptr},
};

const std::array kAvx2{
    SQZ_AVX2_ROW(f32, F32, "F32", 1, 4, F32, nullptr, ref_dequantize_f32),
    SQZ_AVX2_ROW(f16, F16, "F16", 1, 2, F32, nullptr, ref_dequantize_f16),
    SQZ_AVX2_ROW(bf16, BF16, "BF16", 1, 2, F32, nullptr, ref_dequantize_bf16),
    SQZ_AVX2_ROW(q8_0, Q8_0, "Q8_0", 32, 34, Q8_0, avx2_quantize_act_q8_0, avx2_dequantize_q8_0),
    SQZ_AVX2_ROW_W(q4_0, Q4_0, "Q4_0", 32, 18, avx2_dequantize_q4_0),
    SQZ_AVX2_ROW_W(q4_1, Q4_1, "Q4_1", 32, 20, avx2_dequantize_q4_1),
    SQZ_AVX2_ROW_W(q5_0, Q5_0, "Q5_0", 32, 22, avx2_dequantize_q5_0),
    SQZ_AVX2_ROW_W(q5_1, Q5_1, "Q5_1", 32, 24, avx2_dequantize_q5_1),
    SQZ_AVX2_ROW_W(mxfp4, MXFP4, "MXFP4", 32, 17, avx2_dequantize_mxfp4),
    SQZ_AVX2_ROW(q4_k, Q4_K, "Q4_K", 256, 144, Q8_K, nullptr, avx2_dequantize_q4_k),
    SQZ_AVX2_ROW(q5_k, Q5_K, "Q5_K", 256, 176, Q8_K, nullptr, ref_dequantize_q5_k),
    SQZ_AVX2_ROW(q6_k, Q6_K, "Q6_K", 256, 210, Q8_K, nullptr, avx2_dequantize_q6_k),
    QuantTraits{GgmlType::Q8_K, Isa::Avx2, "Q8_K", 256, 292, GgmlType::Q8_K, ref_dequantize_q8_k, ref_quantize_q8_k,
                avx2_quantize_act_q8_k, nullptr, nullptr},
};

// AVX-512: the AVX2 table with the types dot_avx512.cpp has replaced (the 4-/5-bit
// 32-element types and MXFP4 keep their AVX2 row groups and micro-tiles).
const std::array<QuantTraits, kAvx2.size()> kAvx512 = [] {
  auto table = kAvx2;
  for (QuantTraits& t : table) {
    t.isa = Isa::Avx512;
    auto use = [&t](float (*dot)(int64_t, const void*, const void*),
                    void (*multi)(int64_t, const void*, const void*, int64_t, int, float*)) {
      t.vec_dot = dot;
      t.dot_multi = multi;
      t.dot_wrows = nullptr;
      t.dot_tile = nullptr;
    };
    switch (t.type) {
      case GgmlType::F32: use(avx512_dot_f32, avx512_multi_f32); break;
      case GgmlType::F16: use(avx512_dot_f16, avx512_multi_f16); break;
      case GgmlType::BF16: use(avx512_dot_bf16, avx512_multi_bf16); break;
      case GgmlType::Q8_0: use(avx512_dot_q8_0, avx512_multi_q8_0); break;
      case GgmlType::Q4_K: use(avx512_dot_q4_k, avx512_multi_q4_k); break;
      case GgmlType::Q5_K: use(avx512_dot_q5_k, avx512_multi_q5_k); break;
      case GgmlType::Q6_K: use(avx512_dot_q6_k, avx512_multi_q6_k); break;
      default: break;
    }
  }
  return table;
}();

template <size_t N>
const QuantTraits* find(const std::array<QuantTraits, N>& table, GgmlType type) {
  for (const auto& t : table)
    if (t.type == type) return &t;
  return nullptr;
}

}  // namespace

const QuantTraits* traits_for(GgmlType type, Isa isa) {
  switch (isa) {
    case Isa::Scalar: return find(kScalar, type);
    case Isa::Avx2: return cpu_features().has_avx2_fma() ? find(kAvx2, type) : nullptr;
    case Isa::Avx512: return cpu_features().has_avx512_vnni() ? find(kAvx512, type) : nullptr;
  }
  return nullptr;
}

const QuantTraits& traits(GgmlType type) {
  // Fixed once, from the f32 kernels' choice (SQUEEZE_ISA applies to both).
  static const Isa isa = kernels::cpu::active_isa();
  const QuantTraits* t = traits_for(type, isa);
  if (!t) t = traits_for(type, Isa::Scalar);
  if (!t) {
    const auto info = gguf::ggml_type_info(static_cast<uint32_t>(type));
    fail("tensor type ", info ? info->name : "unknown", " (id ", static_cast<uint32_t>(type),
         ") is not supported by squeeze's kernels");
  }
  return *t;
}

bool is_supported(GgmlType type) { return traits_for(type, Isa::Scalar) != nullptr; }

std::span<const GgmlType> supported_types() { return kTypes; }

int64_t row_bytes(GgmlType type, int64_t n) {
  const QuantTraits& t = traits(type);
  SQZ_CHECK(n >= 0 && n % t.block_size == 0, "row of ", n, " elements is not a multiple of ", t.name, "'s block of ",
            t.block_size);
  return n / t.block_size * t.block_bytes;
}

}  // namespace squeeze::quant
