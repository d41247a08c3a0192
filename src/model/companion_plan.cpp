// model/companion_plan.cpp — see companion_plan.h.
#include "model/companion_plan.h"

namespace squeeze::model {

VisionShape released_muse_glimmer_vision() {
  return {.layers = 50, .width = 1536, .mlp = 8960, .patch = 14, .temporal = 2, .pos_grid = 32, .merge = 2,
          .adapter_hidden = 4096, .text_width = 6656};
}

DrafterShape released_muse_glimmer_drafter() {
  return {.layers = 5, .width = 6656, .heads = 32, .kv_heads = 8, .head_dim = 128, .ffn = 19968, .target_layers = 5};
}

int64_t vision_params(const VisionShape& v) {
  const int64_t w = v.width;
  const int64_t block = 4 * (w * w + w)           // q, k, v, proj with biases
                        + 2 * w * v.mlp + v.mlp + w  // fc1, fc2 with biases
                        + 2 * 2 * w;               // two LayerNorms (weight, bias)
  const int64_t embed = w * v.temporal * 3 * v.patch * v.patch + v.pos_grid * v.pos_grid * w + 2 * 2 * w;  // + ln_pre, ln_post
  const int64_t merged = v.merge * v.merge * w;
  const int64_t adapter = merged * v.adapter_hidden + v.adapter_hidden * v.adapter_hidden + v.adapter_hidden * v.text_width;
  return v.layers * block + embed + adapter;
}

int64_t drafter_params(const DrafterShape& d) {
  const int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim, w = d.width;
  const int64_t block = w * q + 2 * w * kv + q * w  // q, k, v, o
                        + 2 * d.head_dim           // q-norm, k-norm
                        + 3 * w * d.ffn            // gate, up, down
                        + 2 * w;                   // input and post-attention norms
  return d.layers * block + w                        // final norm
         + d.target_layers * w * w + w;              // fc over the concatenated target states, and its norm
}

}  // namespace squeeze::model
