// train/glimmer_model.h — a model of the Glimmer family (glimmer, llama, muse-glimmer: every
// architecture option but gemma3's NeoX RoPE and GeGLU) held in f32 for training: the same
// parameterisation and tensor names as the inference model (model::weight_tensors), a
// forward pass recorded on the autograd tape (train/glimmer_forward.h), and export to a GGUF
// that `squeeze generate` loads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "text/tokenizer.h"
#include "train/tape.h"

namespace squeeze::train {

// One weight tensor: `rows` rows of `cols` values (GGUF ne1 × ne0), with its gradient.
struct Parameter {
  std::string name;
  int64_t cols = 0, rows = 1;
  int64_t layer = -1;
  std::vector<float> value = {}, grad = {};
  int64_t size() const { return rows * cols; }
  bool is_norm() const { return rows == 1; }
};

struct InitParams {
  uint64_t seed = 1;
};

class GlimmerModel {
 public:
  // Fresh weights: matrices N(0, 1/cols) (unit-scale activations; Muse Glimmer's attention
  // gate too, so sigmoid(gate) starts spread around 1/2), the two projections that write
  // into the residual stream further scaled by 1/sqrt(2·n_layer) (GPT-2's depth scaling;
  // with post-norms it only scales their gradients), every norm weight 1 — the QK-norm
  // weights included: unit-RMS q and k give scores of O(1) at 1/sqrt(D), and the released
  // model's extra Q scale (≈ 3.87, folded into its q-norm weights) is left to be learnt.
  static GlimmerModel init(const model::ModelConfig& config, text::TokenizerData tokenizer, const InitParams& p);
  // Every tensor of a GGUF model (any type squeeze computes with), dequantized to f32.
  static GlimmerModel load(const std::string& path);

  const model::ModelConfig& config() const { return config_; }
  const text::TokenizerData& tokenizer() const { return tokenizer_; }
  std::vector<Parameter>& params() { return params_; }
  const std::vector<Parameter>& params() const { return params_; }
  Parameter& param(std::string_view name);
  const Parameter& param(std::string_view name) const;
  int64_t n_params() const;
  void zero_grad();

  // Records the forward pass of B = tokens.size() / seq_len sequences (row b·seq_len + s
  // is token s of sequence b, at position s) and returns the logits [B·seq_len, n_vocab].
  // Parameters enter the tape as leaves over this model's value/grad buffers, so
  // t.backward() adds into param().grad. With with_grad = false the parameters are
  // constants (a frozen teacher): nothing is recorded for backward.
  Var forward(Tape<float>& t, std::span<const int32_t> tokens, int64_t seq_len, bool with_grad = true);

  // For vocabulary edits before export (train/muse_specials.h): the tokenizer, and n more
  // vocabulary rows (zeros) in token_embd and an untied output head.
  text::TokenizerData& tokenizer_mut() { return tokenizer_; }
  void grow_vocabulary(int64_t n);

  // Writes config, tokenizer and every weight as F32 (GGUF, atomically), and the chat
  // template as tokenizer.chat_template when one is given.
  void export_gguf(const std::string& path, const std::string& name, const std::string& chat_template = {}) const;

 private:
  GlimmerModel(model::ModelConfig config, text::TokenizerData tokenizer);
  model::ModelConfig config_;
  text::TokenizerData tokenizer_;
  std::vector<Parameter> params_;  // in model::weight_tensors order
};

}  // namespace squeeze::train
