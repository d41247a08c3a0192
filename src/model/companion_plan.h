// model/companion_plan.h — the files that travel with a Muse Glimmer text model and share
// its device: the vision projector (ViT encoder + adapter + projection into the text
// width, llama.cpp's "mmproj" file) and the DFlash drafter. Parameter counts from their
// shapes, as transformers' MuseGlimmerVisionModel / MuseGlimmerAssistantModel build them.
#pragma once

#include <cstdint>

namespace squeeze::model {

struct VisionShape {
  int64_t layers = 0, width = 0, mlp = 0;  // encoder blocks: LayerNorm, QKV + proj (biased), LayerNorm, fc1/fc2 (biased)
  int64_t patch = 0, temporal = 0;         // patch embedding: width × (temporal · 3 · patch²), no bias
  int64_t pos_grid = 0;                    // learned positions: pos_grid² × width
  int64_t merge = 0;                       // merge × merge pixel shuffle → merge² · width features
  int64_t adapter_hidden = 0;              // adapter fc1 (merge²·width → hidden), fc2 (hidden → hidden), no biases
  int64_t text_width = 0;                  // projection hidden → text width, no bias
};

struct DrafterShape {
  int64_t layers = 0, width = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0;
  int64_t target_layers = 0;  // target hidden states concatenated into its input (fc: target_layers · width → width)
};

// The released Muse Glimmer 30B's (transformers' MuseGlimmerConfig defaults): 50 × 1536 (MLP 8960), patch 14 × 2
// temporal slabs, 32 × 32 positions, 2 × 2 merge, adapter 6144 → 4096 → 4096 → 6656;
// drafter 5 layers at 6656, 32 / 8 heads × 128, FFN 19968, 5 target layers.
VisionShape released_muse_glimmer_vision();
DrafterShape released_muse_glimmer_drafter();

// 1,921,845,760 for the released vision shape; 2,555,985,152 for the released drafter
// (it shares the target's embedding and output head, so has neither).
int64_t vision_params(const VisionShape& v);
int64_t drafter_params(const DrafterShape& d);

// What the encoder computes for one still image of grid_h × grid_w patches (both multiples
// of the merge), as the reference runs it: full attention over the image on every 4th
// block and the last, attention inside windows of pos_grid × pos_grid patches elsewhere;
// the patch embedding over one summed temporal slab (what an engine computes for a still).
// FLOPs count a multiply-add as 2.
struct VisionImageCost {
  int64_t patches = 0, tokens = 0;  // tokens: after the merge
  int64_t full_layers = 0, window_layers = 0;
  double embed_flops = 0;      // patch embedding
  double matmul_flops = 0;     // the blocks' q, k, v, proj, fc1, fc2
  double attention_flops = 0;  // QKᵀ and AV
  double adapter_flops = 0;    // adapter and projection into the text width
  int64_t activation_bytes = 0;  // f32 per block: residual, norm, q, k, v, attention out, MLP hidden
  double total_flops() const { return embed_flops + matmul_flops + attention_flops + adapter_flops; }
};
VisionImageCost vision_image_cost(const VisionShape& v, int64_t grid_h, int64_t grid_w);

}  // namespace squeeze::model
