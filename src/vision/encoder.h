// vision/encoder.h — Muse Glimmer's vision tower, adapter and projection: patches of a
// still image in, one embedding per image token (2 × 2 patches) in the text width out.
//
// Read from a projector GGUF with llama.cpp's `clip.*` keys and `v.*` / `mm.*` tensors for
// projector type "muse-glimmer" (the reference: transformers 5.25's MuseGlimmerVisionModel,
// MuseGlimmerVisionAdapter, vision_projection and perception_emb_norm):
//   - patch embedding (the two temporal slabs summed: one [D, 3, p, p] conv for stills) plus
//     the learned pos_grid × pos_grid positions resampled bilinearly (zero padding,
//     half-pixel centres) to the grid, read as the reference reads them (its lookup decodes
//     the flat patch index with the grid's sides exchanged), then pre-LayerNorm;
//   - blocks of LayerNorm → attention (biased q, k, v, out; axial 2-D RoPE: the first half
//     of each rotary half turns with column + 1, the second with row + 1) → LayerNorm → MLP
//     (biased, erf-GELU), each residual; attention over the whole image on the blocks of
//     `clip.vision.fullatt_block_indexes`, inside windows of window_size / patch patches
//     elsewhere (windows tile the grid from its top-left corner);
//   - post-LayerNorm, the 2 × 2 pixel shuffle (features interleaved: feature j of the four
//     patches at 4j .. 4j + 3), the adapter (mm.0, GELU, mm.1, GELU), the projection (mm.2)
//     and an RMSNorm without scale.
// Q and K rows are stored interleaved per head, as llama.cpp's converter writes them (the
// reference's rotary pair (i, i + d/2) at rows 2i, 2i + 1); they are put back at load.
// Weights are held in f32.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vision/preprocess.h"

namespace squeeze {
class ThreadPool;
}

namespace squeeze::vision {

struct EncoderConfig {
  int64_t layers = 0, width = 0, mlp = 0, heads = 0;
  int64_t patch = 0, pos_grid = 0, merge = 0, window = 0;  // window in patches
  int64_t adapter_hidden = 0, text_width = 0;
  float layer_norm_eps = 1e-5f, projector_rms_eps = 1e-5f, rope_theta = 10000.0f;
  std::vector<bool> full_attention;  // per block
  int64_t head_dim() const { return width / heads; }
};

// A small tower of the released architecture (4 blocks of width 64, the last with full
// attention; windows of 8 × 8 patches) projecting into `text_width`: tests, the agent
// replay, and the starting point of the small vision-language model.
EncoderConfig small_encoder_config(int64_t text_width);

struct EncoderOutput {
  int64_t tokens = 0;
  std::vector<float> merged;    // [tokens, merge² · width]: the tower after the pixel shuffle
  std::vector<float> features;  // [tokens, text_width]: what enters the text model
};

class VisionEncoder {
 public:
  // Throws squeeze::Error naming the file and the key or tensor at fault.
  static VisionEncoder load(const std::string& path);
  // Random weights (normal, scaled by 1 / sqrt(fan-in), rounded to bf16) of a given shape:
  // for benchmarks of shapes whose weights are not at hand (the released tower).
  static VisionEncoder random(const EncoderConfig& config, uint64_t seed);
  VisionEncoder(VisionEncoder&&) noexcept;
  ~VisionEncoder();

  const EncoderConfig& config() const;
  // Writes the weights as a projector GGUF that load() (and llama.cpp's layout) reads: f32
  // tensors, Q and K rows interleaved per head again. Refuses to replace an input file.
  void save(const std::string& path, const std::string& name) const;
  // Patches from preprocess() with this encoder's patch size; grid sides multiples of the
  // merge. Products are spread over `pool` when given.
  EncoderOutput encode(const PixelPatches& patches, ThreadPool* pool = nullptr) const;

 private:
  struct Weights;
  explicit VisionEncoder(std::unique_ptr<Weights> w);
  std::unique_ptr<Weights> w_;
};

}  // namespace squeeze::vision
