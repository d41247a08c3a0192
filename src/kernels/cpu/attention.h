// kernels/cpu/attention.h — causal grouped-query attention over a paged / ring KV cache,
// with sliding windows, tiled online softmax and flash-decoding key splits.
//
// Shapes (D = head_dim, H = n_heads, Hkv = n_kv_heads, G = H / Hkv):
//   q   [n_queries, H, D]  f32, row stride q_stride floats (query i is at position pos0 + i)
//   out [n_queries, H, D]  f32, row stride out_stride floats
//   K/V per KV head: rows of D values (f32, f16 or bf16) addressed by absolute position through a
//       KvLayerView: position p lives in slot p % ring_slots (ring buffer of a local layer) or
//       slot p (global layer), slot s in block s / block_slots at row s % block_slots.
// Query head h uses KV head h / G. A query at position p sees the keys at positions
// (p - window, p] (window > 0, local layer) or [0, p] (window == 0, global layer).
// Every key a query needs must already be in the view: write the chunk's K/V first, then
// attend (see model/kv_cache.h for how prefill chunks are sized so that this holds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/thread_pool.h"
#include "kernels/cpu/ops.h"

namespace squeeze::kernels::cpu {

// Element type of stored K/V rows. f16 and bf16 are written with the exact round-to-
// nearest-even conversions of core/dtype.h and widened to f32 exactly when read. q8_0
// stores each row as GGUF Q8_0 blocks (32 codes, one f16 scale amax/127, 34 bytes: 8.5
// bits per value, as llama.cpp's -ctk/-ctv q8_0); it needs head_dim % 32 == 0, and a
// value reads back as f16_to_f32(scale) * code.
enum class KvType : uint8_t { F32, F16, BF16, Q8_0 };
inline constexpr int64_t kKvQ8Block = 32;
// Bytes of one stored row of head_dim values (head_dim % 32 == 0 for q8_0).
size_t kv_row_bytes(KvType t, int64_t head_dim);
const char* kv_type_name(KvType t);
// Whether rows of head_dim values can be stored as t; false only for q8_0 with a head_dim
// not a multiple of 32.
bool kv_type_fits(KvType t, int64_t head_dim);
// One row of n values to its stored form, and back (the scalar reference: every kernel
// reads a stored value as exactly the float kv_decode_row gives).
void kv_encode_row(KvType t, const float* src, std::byte* dst, int64_t n);
void kv_decode_row(KvType t, const std::byte* src, float* dst, int64_t n);
// "f32", "f16", "bf16", "q8_0" (any case); anything else is an error naming `what` (e.g.
// the option it came from) and listing those.
KvType kv_type_from_name(std::string_view name, std::string_view what = "KV cache type");

// A non-owning description of one layer's K/V storage. Within a block, K and V are each
// laid out [Hkv][block_slots][D] (head-major, so one head's keys are contiguous runs).
struct KvLayerView {
  KvType type = KvType::F16;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_slots = 0;  // slots per block
  int64_t ring_slots = 0;   // > 0: slot of position p is p % ring_slots; 0: slot = p
  std::span<const std::byte* const> blocks;  // block bases; K part at offset 0
  size_t v_offset = 0;      // bytes from a block's base to its V part
  int64_t pos_begin = 0;    // positions [pos_begin, pos_end) are held
  int64_t pos_end = 0;

  size_t row_bytes() const { return kv_row_bytes(type, head_dim); }
  size_t head_bytes() const { return static_cast<size_t>(block_slots) * row_bytes(); }

  // The longest run of consecutive positions starting at `pos` (at most max_len) that is
  // contiguous in memory for KV head `head`, and where its K and V rows start.
  struct Run {
    const std::byte* k;
    const std::byte* v;
    int64_t len;
  };
  Run run(int64_t head, int64_t pos, int64_t max_len) const {
    const int64_t slot = ring_slots > 0 ? pos % ring_slots : pos;
    const int64_t block = slot / block_slots, row = slot % block_slots;
    int64_t len = block_slots - row;
    if (ring_slots > 0 && ring_slots - slot < len) len = ring_slots - slot;
    if (max_len < len) len = max_len;
    const std::byte* base = blocks[static_cast<size_t>(block)] + static_cast<size_t>(head) * head_bytes() +
                            static_cast<size_t>(row) * row_bytes();
    return {base, base + v_offset, len};
  }
};

struct AttentionParams {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t window = 0;   // 0: global (causal only); > 0: sliding window in tokens
  float scale = 0.0f;   // score scale; 0 means 1 / sqrt(head_dim)
  // gpt-oss's sinks: one logit per query head ([n_heads]; null: none) that joins the softmax's
  // denominator only — p_j = exp(z_j) / (Σ_i exp(z_i) + exp(sink_h)): unscaled, unmasked, no value.
  const float* sinks = nullptr;
  // No key splits (flash-decoding): whether a query's keys are split depends on how many
  // queries share the call, and merging split partials rounds differently from one pass,
  // so batch-invariant steps (a query's bits the same in any chunk) run every key range whole.
  bool batch_invariant = false;

  float effective_scale() const;
  void validate() const;  // throws squeeze::Error on inconsistent values
};

struct AttentionBatch {
  const float* q = nullptr;  // [n_queries, n_heads, head_dim]
  int64_t q_stride = 0;      // floats between queries; 0 means n_heads * head_dim
  float* out = nullptr;      // [n_queries, n_heads, head_dim]; must not alias q
  int64_t out_stride = 0;    // floats between queries; 0 means n_heads * head_dim
  int64_t n_queries = 0;
  int64_t pos0 = 0;          // absolute position of query 0
};

// Knobs for tests and benchmarks; the defaults choose by shape and thread count.
struct AttentionTuning {
  int64_t key_splits = 0;   // > 0: split every query tile's key range into this many parts
  int64_t query_tile = 0;   // > 0: queries per task
  const Isa* isa = nullptr; // force a variant (Scalar or Avx2); null: the active ISA
};

// out = softmax(scale · q Kᵀ + causal/window mask) V, per query head. Multithreaded over
// (query tile, KV head, key split) tasks; splits are merged exactly (max, sum, acc). The
// task decomposition depends on the shapes only, so the result is bit-identical for any
// pool size. No allocation once warm (per-thread scratch is reused across calls).
// Throws squeeze::Error on bad shapes or when a needed key is not held in `kv`.
void attention(ThreadPool& pool, const AttentionParams& params, const KvLayerView& kv,
               const AttentionBatch& batch, const AttentionTuning& tuning = {});

// The naive oracle: per query head, all scores in float64, two-pass softmax, float64
// accumulation, then rounded to f32. Single-threaded; for tests.
void attention_reference(const AttentionParams& params, const KvLayerView& kv, const AttentionBatch& batch);

// Variant names available on this CPU for the attention kernel (tests iterate these).
bool attention_isa_available(Isa isa);
// The ISA of the attention kernel the active table runs for head dims that are multiples
// of 8 (AVX-512 CPUs run the AVX2 kernel: no 512-bit attention kernel yet).
const char* attention_kernel_name();

}  // namespace squeeze::kernels::cpu
