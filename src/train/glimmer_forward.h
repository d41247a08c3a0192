// train/glimmer_forward.h — the training forward pass of the Glimmer family, as a function of
// the config and of where the parameters come from, for any scalar type: GlimmerModel::forward
// runs it in float over the model's weights; the whole-model gradient check runs it in double
// (tests/train), so the same code is what both see.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "model/config.h"
#include "train/tape.h"

namespace squeeze::train {

// Puts the parameter of that tensor name (model::weight_tensors) on the tape.
using ParamLeaf = std::function<Var(std::string_view name)>;

// Records the forward of B = tokens.size() / seq_len sequences (row b·seq_len + s is token
// s of sequence b, at position s) and returns the logits [B·seq_len, n_vocab], mirroring
// model/forward.cpp step for step: embed (× embd_scale, RMS-normalised?) → per layer
// [pre-norm?, Q/K/V, QK-norm?, RoPE unless a NoPE global layer, attention (windowed on local
// layers), × sigmoid(gate)?, output projection, post-norm?, residual, the same around the
// SwiGLU FFN] → final norm → head → × logit scale → soft-cap?
// The config must pass training_support_error().
// With `ffn` set, layer il's feed-forward product (what sits between its FFN norms) is
// ffn(t, normed input, il) instead of the dense SwiGLU: the MoE language model's experts.
template <typename T>
using FfnOverride = std::function<Var(Tape<T>& t, Var in, int64_t layer)>;
template <typename T>
Var record_forward(Tape<T>& t, const model::ModelConfig& c, const ParamLeaf& leaf, std::span<const int32_t> tokens,
                   int64_t seq_len, const FfnOverride<T>* ffn = nullptr);

// Empty when the training forward implements every option of `c`, else what it lacks
// (NeoX RoPE and GeGLU: gemma3's).
std::string training_support_error(const model::ModelConfig& c);

}  // namespace squeeze::train
