// model/memory_plan.h — how much memory a model needs at a context length: weights,
// KV cache (hybrid local/global, all-global, MHA-style), activations; whether it fits.
//
// Takes a ModelConfig plus either a weight type (a llama.cpp-style preset such as
// Q4_K_M, a ggml type, or a bits-per-weight figure) or the exact weight bytes of a file,
// so `squeeze plan FILE.gguf` only has to read the config and sum the tensor sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu/attention.h"
#include "model/companion_plan.h"
#include "model/config.h"

namespace squeeze::model {

// The KV element types are the engine's own (f32, f16, bf16): the planner sizes only
// caches that `generate --kv` can run.
using kernels::cpu::KvType;
using kernels::cpu::kv_type_from_name;  // "f32", "f16", "bf16" (any case)
using kernels::cpu::kv_type_name;

// Weight bytes for a type name, tensor by tensor (weight_tensors()):
//  - a preset or ggml type name: the per-tensor rules of model/quant_rules.h (Q4_K_M,
//    Q5_K_M: base Q4_K / Q5_K, output head Q6_K, attn_v and ffn_down Q6_K on the "more
//    bits" layers; Q4_K_S/Q5_K_S: base type, output Q6_K — SPEC §1's ~4.55 bpw mix;
//    Q4_0, Q4_1, Q5_0, Q5_1, Q6_K: that type, output Q6_K; Q8_0, F16, BF16, F32 and any other ggml type
//    name: that type everywhere), with llama.cpp's row fallbacks (Q4_K→Q5_0, Q5_K→Q5_1,
//    Q6_K→Q8_0, then F16), since the file may be written by another tool;
//  - a number like "5.3" (or "5.3bpw"): that many bits per weight on every matrix.
// Norm vectors stay F32.
struct WeightEstimate {
  int64_t bytes = 0;
  double bpw = 0;           // bytes · 8 / parameters
  std::string description;  // "Q4_K_M: 250 x Q4_K, 27 x Q6_K, 105 x F32"
};
WeightEstimate estimate_weights(const ModelConfig& c, std::string_view type);

struct PlanParams {
  int64_t n_ctx = 0;                   // tokens to hold; 0 = the config's n_ctx
  std::string weight_type = "Q4_K_M";
  std::optional<int64_t> weight_bytes; // exact bytes (from a file) override weight_type
  KvType kv_type = KvType::BF16;
  int64_t local_headroom = 0;          // ring slots beyond the window; 0: the runtime's rule,
                                       // local_ring_headroom(batch) (model/kv_slots.h)
  int64_t batch = 512;                 // prefill micro-batch (activations, default headroom)
  int64_t device_bytes = 24'000'000'000;  // "24 GB"
  // Muse Glimmer's companions, planned as separate files beside the text weights.
  std::optional<VisionShape> vision;   // the projector file, F16 (llama.cpp's mmproj default)
  std::optional<DrafterShape> drafter; // at the text weights' bits per weight
};

// A file that shares the device with the model (vision projector, drafter).
struct Companion {
  std::string name;
  int64_t params = 0;
  int64_t bytes = 0;
  std::string note;
};

struct KvSizes {
  int64_t n_head_kv = 0;
  int64_t bytes_per_token_layer = 0;  // K and V for one token in one layer
  int64_t local_slots = 0;            // tokens a local layer holds: min(ctx, window + headroom)
  int64_t global_slots = 0;           // tokens a global layer holds: ctx rounded up to 256-slot chunks
  int64_t hybrid = 0;                 // global layers × global_slots + local layers × local_slots
  int64_t all_global = 0;             // every layer × global_slots
  // Slot counts come from kv_layer_slots() (model/kv_slots.h), as the KV cache allocates:
  // `hybrid` is exactly KvCache::memory().bytes_at_limit for the same ctx, type, headroom.
};

struct MemoryPlan {
  ModelConfig config;
  PlanParams params;  // n_ctx resolved
  int64_t n_params = 0;
  WeightEstimate weights;
  KvSizes kv;         // the model's own KV heads
  KvSizes kv_mha;     // as if n_head_kv = n_head
  int64_t activation_bytes = 0;
  int64_t total_bytes = 0;  // weights + hybrid KV + activations
  bool fits = false;        // total_bytes <= device_bytes
  std::vector<Companion> companions;
  // The vision encoder's work per image, for square images of 1024 and 4096 tokens.
  std::vector<VisionImageCost> vision_images;
  int64_t total_with_companions = 0;
  bool fits_with_companions = false;
};

// Validates the config and parameters (errors name the field).
MemoryPlan plan_memory(const ModelConfig& c, const PlanParams& p);

// KV bytes for one token in one layer: 2 (K, V) · n_head_kv · head_dim · element size.
int64_t kv_bytes_per_token_layer(int64_t n_head_kv, int64_t head_dim, KvType t);
// `headroom` is the resolved ring headroom (local_ring_headroom()), not 0-means-default.
KvSizes kv_sizes(const ModelConfig& c, int64_t n_head_kv, int64_t n_ctx, KvType t, int64_t headroom);

// Activations and scratch during prefill, f32, B = min(batch, ctx) tokens in flight:
//   4·B·(2·n_embd + 2·q_dim + 2·kv_dim + 2·n_ff)   residual, norm out, Q, attn out, K, V, gate, up
//   + B·max(n_embd, q_dim, n_ff)·292/256             activations quantized for the dot kernels (Q8_K)
//   + 4·n_vocab                                       logits of the last position
// Attention never materialises scores (online softmax), so it adds only per-thread tiles.
int64_t activation_bytes(const ModelConfig& c, int64_t batch, int64_t n_ctx);

// "24GB", "24 GiB", "512MiB", "1.5TB", "1000000" (bytes). Errors name the text.
int64_t parse_byte_size(std::string_view text);
// "18.37 GB / 17.11 GiB"
std::string format_bytes(int64_t bytes);
// The table `squeeze plan` prints.
std::string format_plan(const MemoryPlan& plan);

}  // namespace squeeze::model
