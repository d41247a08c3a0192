// convert/hf_arch.cpp — see hf_arch.h.
#include "convert/hf_arch.h"

#include <cmath>
#include <set>

#include "core/error.h"

namespace squeeze::convert {

namespace {

using nlohmann::json;

// config.json (or its text_config), read with errors naming the file and the field.
class HfConfig {
 public:
  HfConfig(const json& j, std::string where) : j_(j), where_(std::move(where)) {}

  const json* find(const char* k) const {
    auto it = j_.find(k);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  int64_t integer(const char* k) const {
    const json* v = find(k);
    if (v == nullptr) fail(where_, ": \"", k, "\" is missing");
    return as_int(*v, k);
  }
  int64_t integer_or(const char* k, int64_t dflt) const {
    const json* v = find(k);
    return v ? as_int(*v, k) : dflt;
  }
  double number_or(const char* k, double dflt) const {
    const json* v = find(k);
    if (v == nullptr) return dflt;
    if (!v->is_number()) fail(where_, ": \"", k, "\" must be a number");
    const double d = v->get<double>();
    if (!std::isfinite(d)) fail(where_, ": \"", k, "\" must be finite");
    return d;
  }
  bool boolean_or(const char* k, bool dflt) const {
    const json* v = find(k);
    if (v == nullptr) return dflt;
    if (!v->is_boolean()) fail(where_, ": \"", k, "\" must be true or false");
    return v->get<bool>();
  }
  std::string string_or(const char* k, const std::string& dflt) const {
    const json* v = find(k);
    if (v == nullptr) return dflt;
    if (!v->is_string()) fail(where_, ": \"", k, "\" must be a string");
    return v->get<std::string>();
  }
  // Options squeeze does not implement must be absent or at their neutral value.
  void require_false(const char* k) const {
    if (boolean_or(k, false)) fail(where_, ": \"", k, "\" is true, which squeeze does not support");
  }
  void require_null(const char* k) const {
    if (find(k) != nullptr) fail(where_, ": \"", k, "\" is set, which squeeze does not support");
  }
  // RoPE base of one layer kind: transformers 5 nests it in rope_parameters (per layer
  // kind for Gemma 3), older configs have rope_theta at the top level.
  double rope_theta(const char* layer_kind, double dflt) const {
    double theta = number_or("rope_theta", dflt);
    if (const json* rp = find("rope_parameters")) {
      if (!rp->is_object()) fail(where_, ": \"rope_parameters\" must be an object");
      const json* p = rp;
      if (auto it = rp->find(layer_kind); it != rp->end() && it->is_object()) p = &*it;
      if (auto t = p->find("rope_type"); t != p->end() && !(t->is_string() && *t == "default"))
        fail(where_, ": rope_type ", t->dump(), " is not supported (only default RoPE)");
      if (auto t = p->find("rope_theta"); t != p->end()) {
        if (!t->is_number() || !std::isfinite(t->get<double>()) || t->get<double>() <= 0)
          fail(where_, ": rope_theta must be a positive number");
        theta = t->get<double>();
      }
    }
    if (const json* rs = find("rope_scaling")) {
      const bool neutral = rs->is_object() && rs->value("rope_type", rs->value("type", std::string("default"))) == "default";
      if (!neutral) fail(where_, ": rope_scaling ", rs->dump(), " is not supported");
    }
    return theta;
  }
  // "layer_types": ["sliding_attention" | "full_attention", ...] as is_local flags.
  std::optional<std::vector<bool>> layer_types(int64_t n_layer) const {
    const json* v = find("layer_types");
    if (v == nullptr) return std::nullopt;
    if (!v->is_array() || static_cast<int64_t>(v->size()) != n_layer)
      fail(where_, ": \"layer_types\" must be an array of ", n_layer, " entries");
    std::vector<bool> local;
    for (const json& t : *v) {
      if (t == "sliding_attention") {
        local.push_back(true);
      } else if (t == "full_attention") {
        local.push_back(false);
      } else {
        fail(where_, ": layer type ", t.dump(), " is not supported (sliding_attention or full_attention)");
      }
    }
    return local;
  }
  const std::string& where() const { return where_; }

 private:
  int64_t as_int(const json& v, const char* k) const {
    if (!v.is_number_integer()) fail(where_, ": \"", k, "\" must be an integer");
    return v.get<int64_t>();
  }
  const json& j_;
  std::string where_;
};

// The fields every architecture shares.
void read_common(const HfConfig& h, model::ModelConfig& c) {
  c.n_layer = h.integer("num_hidden_layers");
  c.n_embd = h.integer("hidden_size");
  c.n_head = h.integer("num_attention_heads");
  c.n_head_kv = h.integer_or("num_key_value_heads", c.n_head);
  if (c.n_head <= 0 || c.n_embd <= 0) fail(h.where(), ": hidden_size and num_attention_heads must be positive");
  c.head_dim = h.integer_or("head_dim", c.n_embd / c.n_head);
  c.n_ff = h.integer("intermediate_size");
  c.n_vocab = h.integer("vocab_size");
  c.n_ctx = h.integer_or("max_position_embeddings", 4096);
  h.require_false("attention_bias");
  h.require_false("mlp_bias");
}

void check_activation(const HfConfig& h, const char* key, const std::string& want, const std::string& alt = "") {
  const std::string act = h.string_or(key, want);
  if (act != want && act != alt) fail(h.where(), ": \"", key, "\" is '", act, "'; squeeze implements '", want, "'");
}

struct Builder {
  ConvertPlan& plan;
  const safetensors::Checkpoint& ckpt;
  std::set<std::string> used;

  const safetensors::Tensor& source(const std::string& name) {
    const safetensors::Tensor* t = ckpt.find(name);
    if (t == nullptr) fail(ckpt.dir(), ": tensor '", name, "' is missing (", plan.hf_arch, " needs it)");
    return *t;
  }
  // A tensor copied from `hf` (shape checked against GGUF dims, i.e. reversed).
  TensorPlan& add(const std::string& gguf_name, std::vector<int64_t> dims, const std::string& hf) {
    const safetensors::Tensor& t = source(hf);
    std::vector<int64_t> want(dims.rbegin(), dims.rend());
    if (t.shape != want) {
      std::string got, need;
      for (int64_t d : t.shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
      for (int64_t d : want) need += (need.empty() ? "" : ", ") + std::to_string(d);
      fail(ckpt.dir(), ": tensor '", hf, "' has shape [", got, "], config.json implies [", need, "]");
    }
    used.insert(hf);
    plan.tensors.push_back({.gguf_name = gguf_name, .dims = std::move(dims), .hf_name = hf});
    return plan.tensors.back();
  }
  void synthesise(const std::string& gguf_name, int64_t n, float value) {
    plan.tensors.push_back({.gguf_name = gguf_name, .dims = {n}, .hf_name = {}, .fill = value});
  }
};

// The decoder layers and embeddings of the three architectures, under `prefix`
// ("model." or "model.language_model.").
void map_tensors(Builder& b, const std::string& prefix, float qk_scale) {
  const model::ModelConfig& c = b.plan.config;
  const bool gemma = c.arch == "gemma3", muse = c.arch == "muse-glimmer";
  const float layer_norm_shift = gemma || muse ? 1.0f : 0.0f;
  const int64_t E = c.n_embd;
  b.add("token_embd.weight", {E, c.n_vocab}, prefix + "embed_tokens.weight");
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string hf = prefix + "layers." + std::to_string(i) + ".";
    const std::string g = "blk." + std::to_string(i) + ".";
    auto norm = [&](const std::string& gguf, const std::string& src) {
      b.add(g + gguf, {E}, hf + src).shift = layer_norm_shift;
    };
    norm("attn_norm.weight", "input_layernorm.weight");
    const int64_t rope_q = c.rope_type == model::RopeType::normal ? c.n_head : 0;
    const int64_t rope_k = c.rope_type == model::RopeType::normal ? c.n_head_kv : 0;
    b.add(g + "attn_q.weight", {E, c.q_dim()}, hf + "self_attn.q_proj.weight").rope_heads = rope_q;
    b.add(g + "attn_k.weight", {E, c.kv_dim()}, hf + "self_attn.k_proj.weight").rope_heads = rope_k;
    b.add(g + "attn_v.weight", {E, c.kv_dim()}, hf + "self_attn.v_proj.weight");
    if (gemma) {
      b.add(g + "attn_q_norm.weight", {c.head_dim}, hf + "self_attn.q_norm.weight").shift = 1.0f;
      b.add(g + "attn_k_norm.weight", {c.head_dim}, hf + "self_attn.k_norm.weight").shift = 1.0f;
    }
    if (muse) {
      b.synthesise(g + "attn_q_norm.weight", c.head_dim, qk_scale);
      b.synthesise(g + "attn_k_norm.weight", c.head_dim, 1.0f);
      b.add(g + "attn_gate.weight", {E, c.q_dim()}, hf + "self_attn.gate_proj.weight");
    }
    b.add(g + "attn_output.weight", {c.q_dim(), E}, hf + "self_attn.o_proj.weight");
    if (gemma || muse) {
      norm("post_attention_norm.weight", "post_attention_layernorm.weight");
      norm("ffn_norm.weight", "pre_feedforward_layernorm.weight");
    } else {
      norm("ffn_norm.weight", "post_attention_layernorm.weight");  // llama's name for its FFN pre-norm
    }
    b.add(g + "ffn_gate.weight", {E, c.n_ff}, hf + "mlp.gate_proj.weight");
    b.add(g + "ffn_up.weight", {E, c.n_ff}, hf + "mlp.up_proj.weight");
    b.add(g + "ffn_down.weight", {c.n_ff, E}, hf + "mlp.down_proj.weight");
    if (gemma || muse) norm("post_ffw_norm.weight", "post_feedforward_layernorm.weight");
  }
  // Gemma's final norm scales by 1 + w like its others; Muse Glimmer's is a plain scale.
  b.add("output_norm.weight", {E}, prefix + "norm.weight").shift = gemma ? 1.0f : 0.0f;
  if (!c.tied_output) b.add("output.weight", {E, c.n_vocab}, "lm_head.weight");
}

void plan_llama(const HfConfig& h, ConvertPlan& p) {
  model::ModelConfig& c = p.config;
  read_common(h, c);
  model::set_arch_defaults(c, "llama");
  check_activation(h, "hidden_act", "silu");
  c.rms_eps = static_cast<float>(h.number_or("rms_norm_eps", 1e-6));
  c.rope_base_global = c.rope_base_local = static_cast<float>(h.rope_theta("full_attention", 10000.0));
  c.is_local = model::all_global_pattern(c.n_layer);
  c.tied_output = h.boolean_or("tie_word_embeddings", false);
}

void plan_gemma3(const HfConfig& h, ConvertPlan& p) {
  model::ModelConfig& c = p.config;
  read_common(h, c);
  if (h.find("head_dim") == nullptr) c.head_dim = 256;  // Gemma3TextConfig's default
  model::set_arch_defaults(c, "gemma3");
  check_activation(h, "hidden_activation", "gelu_pytorch_tanh");
  h.require_null("attn_logit_softcapping");
  c.rms_eps = static_cast<float>(h.number_or("rms_norm_eps", 1e-6));
  c.rope_base_global = static_cast<float>(h.rope_theta("full_attention", 1000000.0));
  c.rope_base_local = static_cast<float>(h.number_or("rope_local_base_freq", 10000.0));
  if (h.find("rope_parameters") && h.find("rope_parameters")->contains("sliding_attention"))
    c.rope_base_local = static_cast<float>(h.rope_theta("sliding_attention", 10000.0));
  const double qpas = h.number_or("query_pre_attn_scalar", static_cast<double>(c.head_dim));
  if (!(qpas > 0)) fail(h.where(), ": \"query_pre_attn_scalar\" must be positive");
  c.attn_scale = static_cast<float>(1.0 / std::sqrt(qpas));
  c.final_logit_softcap = static_cast<float>(h.number_or("final_logit_softcapping", 0.0));
  c.sliding_window = h.integer("sliding_window");
  if (auto lt = h.layer_types(c.n_layer)) {
    c.is_local = *lt;
  } else {
    c.is_local = model::period_pattern(c.n_layer, h.integer_or("sliding_window_pattern", 6));
  }
  c.tied_output = h.boolean_or("tie_word_embeddings", true);
}

void plan_muse_glimmer(const HfConfig& h, ConvertPlan& p, float& qk_scale) {
  model::ModelConfig& c = p.config;
  read_common(h, c);
  model::set_arch_defaults(c, "muse-glimmer");
  check_activation(h, "hidden_activation", "silu");
  if (h.boolean_or("tie_word_embeddings", false)) fail(h.where(), ": tie_word_embeddings is true; muse-glimmer's head is untied");
  c.rms_eps = static_cast<float>(h.number_or("rms_norm_eps", 1e-5));
  c.post_norm_eps = static_cast<float>(h.number_or("post_norm_eps", 1e-8));
  if (c.post_norm_eps != 1e-8f)  // llama.cpp's graph fixes it; a file cannot say otherwise
    fail(h.where(), ": post_norm_eps ", c.post_norm_eps, " differs from 1e-8, which GGUF readers assume");
  c.final_logit_softcap = static_cast<float>(h.number_or("final_logit_softcapping", 20.0));
  c.logit_scale = static_cast<float>(h.number_or("output_multiplier", 0.19611613513818404));
  c.sliding_window = h.integer("sliding_window");
  c.is_local = h.layer_types(c.n_layer).value_or(model::period_pattern_from_last(c.n_layer, 4));
  const double theta = h.rope_theta("sliding_attention", 500000.0);
  c.rope_base_global = c.rope_base_local = static_cast<float>(theta);
  // layer_rope_theta: transformers only tests each entry for 0 (NoPE) and otherwise uses
  // the one rope_theta, so its zeros must be exactly the global layers (what GGUF can say);
  // other values are ignored there and here.
  if (const nlohmann::json* lrt = h.find("layer_rope_theta")) {
    if (!lrt->is_array() || static_cast<int64_t>(lrt->size()) != c.n_layer)
      fail(h.where(), ": \"layer_rope_theta\" must be an array of ", c.n_layer, " numbers");
    for (int64_t i = 0; i < c.n_layer; ++i) {
      const nlohmann::json& v = (*lrt)[static_cast<size_t>(i)];
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
        fail(h.where(), ": layer_rope_theta[", i, "] must be a number >= 0");
      const double t = v.get<double>();
      if ((t == 0) == c.is_local[static_cast<size_t>(i)])
        fail(h.where(), ": layer_rope_theta[", i, "] is ", t, " on a ", c.is_local[static_cast<size_t>(i)] ? "sliding" : "full",
             " layer; squeeze runs RoPE on exactly the sliding layers");
    }
  }
  qk_scale = static_cast<float>(h.number_or("qk_scale_factor", 3.87));
  if (!(qk_scale > 0)) fail(h.where(), ": \"qk_scale_factor\" must be positive");
}

}  // namespace

std::string supported_hf_archs() {
  return "LlamaForCausalLM, Gemma3ForCausalLM, MuseGlimmerForConditionalGeneration";
}

HfModel read_hf_config(const nlohmann::json& root, const std::string& where) {
  HfModel out;
  const json* archs = root.is_object() && root.contains("architectures") ? &root["architectures"] : nullptr;
  if (archs == nullptr || !archs->is_array() || archs->empty() || !(*archs)[0].is_string())
    fail(where, ": \"architectures\" must name the model class (one of ", supported_hf_archs(), ")");
  out.hf_arch = (*archs)[0].get<std::string>();
  ConvertPlan p;
  p.hf_arch = out.hf_arch;
  if (out.hf_arch == "LlamaForCausalLM") {
    plan_llama(HfConfig(root, where), p);
  } else if (out.hf_arch == "Gemma3ForCausalLM") {
    plan_gemma3(HfConfig(root, where), p);
  } else if (out.hf_arch == "MuseGlimmerForConditionalGeneration") {
    if (!root.contains("text_config") || !root["text_config"].is_object())
      fail(where, ": \"text_config\" must be an object");
    plan_muse_glimmer(HfConfig(root["text_config"], where + " text_config"), p, out.qk_scale);
    out.tensor_prefix = "model.language_model.";
  } else {
    fail(where, ": architecture '", out.hf_arch, "' is not supported (", supported_hf_archs(), ")");
  }
  out.config = std::move(p.config);
  out.config.name = where;
  try {
    out.config.validate();
  } catch (const Error& e) {
    throw e.with_context(where);
  }
  return out;
}

ConvertPlan plan_conversion(const safetensors::Checkpoint& ckpt) {
  HfModel hf = read_hf_config(ckpt.config(), ckpt.dir() + "/config.json");
  ConvertPlan p;
  p.hf_arch = hf.hf_arch;
  p.config = std::move(hf.config);
  p.config.name = ckpt.dir();
  Builder b{p, ckpt, {}};
  map_tensors(b, hf.tensor_prefix, hf.qk_scale);
  for (const auto& e : ckpt.tensors())
    if (!b.used.count(e.tensor->name)) p.skipped.push_back(e.tensor->name);
  return p;
}

int64_t source_row(const TensorPlan& t, int64_t r) {
  if (t.rope_heads <= 0) return r;
  const int64_t rows = t.dims.size() > 1 ? t.dims[1] : 1;
  const int64_t d = rows / t.rope_heads, half = d / 2;
  const int64_t head = r / d, j = r % d;
  // Interleaved row j = 2i + k holds rotate-half row k·D/2 + i of the same head.
  return head * d + (j % 2) * half + j / 2;
}

}  // namespace squeeze::convert
