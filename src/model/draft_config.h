// model/draft_config.h — the shape of a DFlash drafter (block-diffusion speculative
// decoding, model/drafter.h) and its GGUF form.
//
// The file layout is llama.cpp's `dflash` architecture, so a converted official drafter
// loads: general.architecture = "dflash"; dflash.block_count, embedding_length,
// feed_forward_length, attention.head_count(_kv), attention.key_length,
// attention.layer_norm_rms_epsilon, rope.freq_base, context_length,
// attention.sliding_window and attention.sliding_window_pattern (one bool per layer),
// dflash.block_size, dflash.mask_token_id, and dflash.target_layers — the target layers
// whose outputs are tapped, stored as index + 1 (the count of target layers run before the
// tap, llama.cpp's convention; ModelConfig-side ids here are 0-based layer indices).
// Tensors: fc.weight [n_taps·E → E], enc.output_norm.weight [E] (the fusion's RMSNorm),
// per layer blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_q_norm, attn_k_norm,
// attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}.weight, and output_norm.weight. No
// embedding and no head: the drafter uses the target's.
//
// The architecture is the reference's (transformers' MuseGlimmerAssistantModel): pre-norm
// blocks with per-head QK RMSNorm, SwiGLU, NeoX RoPE (rotate-half) with the drafter's own
// base, attention non-causal over [context ; block] with a bidirectional sliding window
// on sliding layers (a query at q sees keys k with |q − k| ≤ window).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/metadata.h"
#include "gguf/reader.h"
#include "model/config.h"
#include "model/tensor_table.h"

namespace squeeze::model {

inline constexpr const char* kDraftArch = "dflash";

struct DraftConfig {
  std::string name;
  int64_t n_layer = 5;
  int64_t n_embd = 0;          // the target's width
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t n_ff = 0;
  float rms_eps = 1e-5f;
  float rope_base = 500000.0f;
  int64_t sliding_window = 0;  // 0: every layer attends to the whole context
  std::vector<bool> is_sliding;  // per layer (only meaningful with a window)
  int64_t block_size = 16;     // tokens per drafted block: the anchor and block_size − 1 masks
  int64_t mask_token_id = -1;  // a token of the target's vocabulary
  std::vector<int64_t> target_layers;  // 0-based target layers whose outputs are the context
  int64_t n_ctx = 131072;

  int64_t n_taps() const { return static_cast<int64_t>(target_layers.size()); }
  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  bool sliding(int64_t layer) const { return sliding_window > 0 && is_sliding[static_cast<size_t>(layer)]; }
  // Throws squeeze::Error naming the config and the first bad field.
  void validate() const;
  // Throws when the drafter cannot serve `target`: a different width, a tap beyond its
  // layers, a mask token outside its vocabulary.
  void check_target(const ModelConfig& target) const;
  // Every tensor in file order.
  std::vector<TensorShape> weight_tensors() const;
  int64_t n_params() const;
};

// A drafter for `target` with the reference recipe: n_layers layers at the target's width,
// the target's head layout and FFN width, the default taps (model/dflash_taps.h), every
// layer sliding with `window` (0: none), the target's RoPE base and RMS eps.
DraftConfig default_draft_config(const ModelConfig& target, int64_t n_layers, int64_t block_size,
                                 int64_t mask_token_id, int64_t window);

// Reads and validates a `dflash` file's metadata and tensor shapes; errors name the file
// and the key or tensor.
DraftConfig draft_config_from_gguf(const gguf::File& file);
void write_draft_config(gguf::Metadata& m, const DraftConfig& c);

}  // namespace squeeze::model
