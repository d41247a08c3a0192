// model/companion_plan.cpp — see companion_plan.h.
#include "model/companion_plan.h"

#include <algorithm>

#include "core/error.h"

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

VisionImageCost vision_image_cost(const VisionShape& v, int64_t grid_h, int64_t grid_w) {
  SQZ_CHECK(grid_h > 0 && grid_w > 0 && grid_h % v.merge == 0 && grid_w % v.merge == 0, "vision cost: a grid of ",
            grid_h, " x ", grid_w, " patches (each side a positive multiple of the merge ", v.merge, ")");
  VisionImageCost c;
  const double n = double(grid_h * grid_w), w = double(v.width);
  c.patches = grid_h * grid_w;
  c.tokens = c.patches / (v.merge * v.merge);
  for (int64_t i = 0; i < v.layers; ++i) ((i + 1) % 4 == 0 || i == v.layers - 1 ? c.full_layers : c.window_layers) += 1;
  c.embed_flops = 2.0 * n * double(3 * v.patch * v.patch) * w;
  c.matmul_flops = double(v.layers) * 2.0 * n * (4.0 * w * w + 2.0 * w * double(v.mlp));
  // Σ over windows of (rows · cols)²: windows tile the grid from its top-left corner.
  const auto sum_sq = [](int64_t len, int64_t win) {
    double s = 0;
    for (int64_t at = 0; at < len; at += win) s += double(std::min(win, len - at)) * double(std::min(win, len - at));
    return s;
  };
  const double windowed = sum_sq(grid_h, v.pos_grid) * sum_sq(grid_w, v.pos_grid);
  c.attention_flops = 4.0 * w * (double(c.full_layers) * n * n + double(c.window_layers) * windowed);
  const double merged = double(v.merge * v.merge) * w, a = double(v.adapter_hidden);
  c.adapter_flops = 2.0 * double(c.tokens) * (merged * a + a * a + a * double(v.text_width));
  c.activation_bytes = 4 * c.patches * (6 * v.width + v.mlp);
  return c;
}

}  // namespace squeeze::model
