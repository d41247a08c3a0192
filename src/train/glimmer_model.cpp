// train/glimmer_model.cpp — see glimmer_model.h. The forward pass itself is
// train/glimmer_forward.cpp.
#include "train/glimmer_model.h"

#include <cmath>
#include <random>

#include "core/error.h"
#include "gguf/writer.h"
#include "model/gguf_config.h"
#include "model/model.h"
#include "train/glimmer_forward.h"
#include "model/tensor_table.h"

namespace squeeze::train {

GlimmerModel::GlimmerModel(model::ModelConfig config, text::TokenizerData tokenizer)
    : config_(std::move(config)), tokenizer_(std::move(tokenizer)) {
  config_.validate();
  const std::string unsupported = training_support_error(config_);
  SQZ_CHECK(unsupported.empty(), config_.name, ": ", unsupported);
  SQZ_CHECK(static_cast<int64_t>(tokenizer_.tokens.size()) == config_.n_vocab, "the tokenizer has ",
            tokenizer_.tokens.size(), " tokens, the model config ", config_.n_vocab);
  for (const model::TensorShape& s : model::weight_tensors(config_)) {
    Parameter p{.name = s.name, .cols = s.ne0, .rows = s.ne1 * s.ne2, .layer = s.layer};
    p.value.assign(static_cast<size_t>(p.size()), 0.0f);
    p.grad.assign(static_cast<size_t>(p.size()), 0.0f);
    params_.push_back(std::move(p));
  }
}

GlimmerModel GlimmerModel::init(const model::ModelConfig& config, text::TokenizerData tokenizer, const InitParams& ip) {
  GlimmerModel m(config, std::move(tokenizer));
  std::mt19937_64 rng(ip.seed);
  const float depth = 1.0f / std::sqrt(2.0f * static_cast<float>(config.n_layer));
  for (Parameter& p : m.params_) {
    if (p.is_norm()) {
      std::fill(p.value.begin(), p.value.end(), 1.0f);
      continue;
    }
    const bool residual_out = p.name.ends_with("attn_output.weight") || p.name.ends_with("ffn_down.weight");
    std::normal_distribution<float> nd(0.0f, (residual_out ? depth : 1.0f) / std::sqrt(static_cast<float>(p.cols)));
    for (float& v : p.value) v = nd(rng);
  }
  return m;
}

GlimmerModel GlimmerModel::load(const std::string& path) {
  const auto src = model::Model::load(path);
  GlimmerModel m(src->config(), model::tokenizer_data_from_gguf(src->file().metadata()));
  m.config_.name = src->config().name;
  for (Parameter& p : m.params_) {
    const gguf::TensorInfo& t = src->file().tensor(p.name);
    const quant::QMatrix q{.type = t.type, .data = t.data.data(), .rows = t.n_rows(), .cols = t.row_length()};
    for (int64_t r = 0; r < p.rows; ++r) model::dequantize_row(q, r, p.value.data() + r * p.cols);
  }
  return m;
}

Parameter& GlimmerModel::param(std::string_view name) {
  for (Parameter& p : params_)
    if (p.name == name) return p;
  fail("model has no parameter '", name, "'");
}
const Parameter& GlimmerModel::param(std::string_view name) const {
  return const_cast<GlimmerModel*>(this)->param(name);
}

int64_t GlimmerModel::n_params() const {
  int64_t n = 0;
  for (const Parameter& p : params_) n += p.size();
  return n;
}

void GlimmerModel::zero_grad() {
  for (Parameter& p : params_) std::fill(p.grad.begin(), p.grad.end(), 0.0f);
}

Var GlimmerModel::forward(Tape<float>& t, std::span<const int32_t> tokens, int64_t S, bool with_grad) {
  const ParamLeaf leaf = [&](std::string_view name) {
    Parameter& p = param(name);
    return t.leaf(p.value, with_grad ? std::span<float>(p.grad) : std::span<float>(), p.rows, p.cols);
  };
  return record_forward(t, config_, leaf, tokens, S);
}

void GlimmerModel::grow_vocabulary(int64_t n) {
  SQZ_CHECK(n >= 0, "grow_vocabulary: n must be >= 0");
  for (Parameter& p : params_) {
    if (p.name != "token_embd.weight" && p.name != "output.weight") continue;
    p.rows += n;
    p.value.resize(static_cast<size_t>(p.size()), 0.0f);
    p.grad.resize(static_cast<size_t>(p.size()), 0.0f);
  }
  config_.n_vocab += n;
}

void GlimmerModel::export_gguf(const std::string& path, const std::string& name, const std::string& chat_template) const {
  gguf::Writer w(path);
  model::write_config(w.metadata(), config_);
  model::write_tokenizer(w.metadata(), tokenizer_);
  if (!chat_template.empty()) w.metadata().set("tokenizer.chat_template", gguf::Value::string(chat_template));
  w.metadata().set("general.name", gguf::Value::string(name));
  w.metadata().set("general.file_type", gguf::Value::u32(0));  // all F32
  for (const Parameter& p : params_) {
    const std::vector<int64_t> dims = p.is_norm() ? std::vector<int64_t>{p.cols} : std::vector<int64_t>{p.cols, p.rows};
    w.add_tensor({.name = p.name, .type = gguf::GgmlType::F32, .dims = dims},
                 std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(p.value.data()), p.value.size() * sizeof(float)));
  }
  w.finish();
}

}  // namespace squeeze::train
