// convert/hf_arch.cpp — see hf_arch.h.
#include "convert/hf_arch.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "model/tensor_table.h"

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
  // RoPE of one layer kind: its base and scaling. transformers 5 nests both in
  // rope_parameters (per layer kind for Gemma 3); older configs have rope_theta at the top
  // level and the scaling in rope_scaling ("rope_type", or "type" in the oldest).
  struct Rope {
    double theta = 10000.0;
    std::string type = "default";
    double factor = 1.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_context = 8192.0;
    // YaRN's (transformers' defaults); attention_factor 0: derived from the factor.
    double beta_fast = 32.0, beta_slow = 1.0, attention_factor = 0.0;
    bool truncate = true, has_factor = false, has_mscale = false;
  };
  Rope rope(const char* layer_kind, double dflt) const {
    Rope r;
    r.theta = number_or("rope_theta", dflt);
    const json* p = nullptr;
    if (const json* rp = find("rope_parameters")) {
      if (!rp->is_object()) fail(where_, ": \"rope_parameters\" must be an object");
      p = rp;
      if (auto it = rp->find(layer_kind); it != rp->end() && it->is_object()) p = &*it;
    } else if (const json* rs = find("rope_scaling")) {
      if (!rs->is_object()) fail(where_, ": \"rope_scaling\" must be an object");
      p = rs;
    }
    if (p == nullptr) return r;
    const HfConfig params(*p, where_ + " rope parameters");
    r.type = params.string_or("rope_type", params.string_or("type", "default"));
    if (p->contains("rope_theta")) {
      r.theta = params.number_or("rope_theta", r.theta);
      if (!(r.theta > 0)) fail(where_, ": rope_theta must be a positive number");
    }
    r.factor = params.number_or("factor", 1.0);
    r.low_freq_factor = params.number_or("low_freq_factor", 1.0);
    r.high_freq_factor = params.number_or("high_freq_factor", 4.0);
    r.original_context = params.number_or("original_max_position_embeddings", 8192.0);
    r.has_factor = params.find("factor") != nullptr;
    r.beta_fast = params.number_or("beta_fast", 32.0);
    r.beta_slow = params.number_or("beta_slow", 1.0);
    r.attention_factor = params.number_or("attention_factor", 0.0);
    r.truncate = params.boolean_or("truncate", true);
    r.has_mscale = params.find("mscale") != nullptr || params.find("mscale_all_dim") != nullptr;
    return r;
  }
  // The base of an architecture that runs unscaled RoPE only.
  double rope_theta(const char* layer_kind, double dflt) const {
    const Rope r = rope(layer_kind, dflt);
    if (r.type != "default") fail(where_, ": rope_type '", r.type, "' is not supported here (only default RoPE)");
    return r.theta;
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

// The fields every architecture shares. Biases are refused but for Q/K/V where the
// architecture always has them (`qkv_bias`: Qwen2's attention, hard-wired in transformers).
void read_common(const HfConfig& h, model::ModelConfig& c, bool qkv_bias = false) {
  c.n_layer = h.integer("num_hidden_layers");
  // Checked before anything is sized by it (per-layer patterns; validate() bounds it the same).
  if (c.n_layer < 1 || c.n_layer > (1 << 12)) fail(h.where(), ": \"num_hidden_layers\" must be in [1, 4096]");
  c.n_embd = h.integer("hidden_size");
  c.n_head = h.integer("num_attention_heads");
  c.n_head_kv = h.integer_or("num_key_value_heads", c.n_head);
  if (c.n_head <= 0 || c.n_embd <= 0) fail(h.where(), ": hidden_size and num_attention_heads must be positive");
  c.head_dim = h.integer_or("head_dim", c.n_embd / c.n_head);
  c.n_ff = h.integer("intermediate_size");
  c.n_vocab = h.integer("vocab_size");
  c.n_ctx = h.integer_or("max_position_embeddings", 4096);
  if (!qkv_bias) h.require_false("attention_bias");
  h.require_false("mlp_bias");
}

void check_activation(const HfConfig& h, const char* key, const std::string& want, const std::string& alt = "") {
  const std::string act = h.string_or(key, want);
  if (act != want && act != alt) fail(h.where(), ": \"", key, "\" is '", act, "'; squeeze implements '", want, "'");
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
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
    if (t.shape != want)
      fail(ckpt.dir(), ": tensor '", hf, "' has shape ", shape_text(t.shape), ", config.json implies ", shape_text(want));
    used.insert(hf);
    plan.tensors.push_back({.gguf_name = gguf_name, .dims = std::move(dims), .hf_name = hf});
    return plan.tensors.back();
  }
  // A stack of E experts {cols, rows, E} from one [rows, cols] tensor per expert; `pattern`
  // holds {} where the expert id goes.
  // A source whose shape differs from the GGUF tensor's (a gather or a repacking).
  TensorPlan& add_shaped(const std::string& gguf_name, std::vector<int64_t> dims, const std::string& hf,
                         const std::vector<int64_t>& source_shape) {
    require_shape(hf, source_shape);
    plan.tensors.push_back({.gguf_name = gguf_name, .dims = std::move(dims), .hf_name = hf});
    return plan.tensors.back();
  }
  void require_shape(const std::string& hf, const std::vector<int64_t>& shape) {
    const safetensors::Tensor& t = source(hf);
    if (t.shape != shape)
      fail(ckpt.dir(), ": tensor '", hf, "' has shape ", shape_text(t.shape), ", config.json implies ", shape_text(shape));
    used.insert(hf);
  }
  void add_experts(const std::string& gguf_name, const std::vector<int64_t>& dims, const std::string& pattern) {
    const size_t at = pattern.find("{}");
    TensorPlan t{.gguf_name = gguf_name, .dims = dims, .hf_name = {}};
    for (int64_t e = 0; e < dims[2]; ++e) {
      const std::string hf = pattern.substr(0, at) + std::to_string(e) + pattern.substr(at + 2);
      const safetensors::Tensor& s = source(hf);
      if (s.shape != std::vector<int64_t>{dims[1], dims[0]})
        fail(ckpt.dir(), ": tensor '", hf, "' has shape ", shape_text(s.shape), ", config.json implies [", dims[1],
             ", ", dims[0], "]");
      used.insert(hf);
      t.expert_sources.push_back(hf);
    }
    t.hf_name = t.expert_sources.front();
    plan.tensors.push_back(std::move(t));
  }
  void synthesise(const std::string& gguf_name, int64_t n, float value) {
    plan.tensors.push_back({.gguf_name = gguf_name, .dims = {n}, .hf_name = {}, .fill = value});
  }
};

// Where a tensor of the table comes from in the checkpoint: a tensor under the model
// prefix (per layer: under "layers.N."), or lm_head; or a synthesised constant.
struct HfSource {
  std::string name;          // relative to the prefix; empty: synthesised
  bool under_prefix = true;  // false: the name is absolute (lm_head)
  float shift = 0.0f;        // norm weights stored as 1 + w
  bool rope_rows = false;    // rows regrouped rotate-half → interleaved pairs (RoPE normal)
  float fill = 0.0f;         // a synthesised tensor's value
  bool computed = false;     // synthesised from the config (the RoPE divisors), not a constant
  // Stacked experts: the fused checkpoint tensor is `name` ([E, rows, cols], transformers
  // 5's in-memory layout, saved with save_original_format=False); the published layout has
  // one tensor per expert, `per_expert` with {} for the expert id.
  std::string per_expert = {};
};

// The checkpoint name of each tensor the architecture has, with the transformation
// llama.cpp's converter applies (hf_arch.h).
HfSource hf_source(const model::ModelConfig& c, model::TensorId id, float qk_scale) {
  using model::Arch;
  using model::TensorId;
  const bool gemma = c.arch == Arch::gemma3, muse = c.arch == Arch::muse_glimmer;
  const float layer_norm_shift = gemma || muse ? 1.0f : 0.0f;
  const bool permute = c.rope_type == model::RopeType::normal;
  switch (id) {
    case TensorId::token_embd: return {.name = "embed_tokens.weight"};
    case TensorId::attn_norm: return {.name = "input_layernorm.weight", .shift = layer_norm_shift};
    case TensorId::attn_q: return {.name = "self_attn.q_proj.weight", .rope_rows = permute};
    case TensorId::attn_k: return {.name = "self_attn.k_proj.weight", .rope_rows = permute};
    case TensorId::attn_v: return {.name = "self_attn.v_proj.weight"};
    case TensorId::attn_q_bias: return {.name = "self_attn.q_proj.bias"};
    case TensorId::attn_k_bias: return {.name = "self_attn.k_proj.bias"};
    case TensorId::attn_v_bias: return {.name = "self_attn.v_proj.bias"};
    // Muse Glimmer's scale-less QK-norm: q carries the scale, k a unit weight. Gemma's
    // QK-norms scale by 1 + w, Qwen3's by w.
    case TensorId::attn_q_norm:
      return muse ? HfSource{.name = {}, .fill = qk_scale}
                  : HfSource{.name = "self_attn.q_norm.weight", .shift = layer_norm_shift};
    case TensorId::attn_k_norm:
      return muse ? HfSource{.name = {}, .fill = 1.0f}
                  : HfSource{.name = "self_attn.k_norm.weight", .shift = layer_norm_shift};
    case TensorId::attn_gate: return {.name = "self_attn.gate_proj.weight"};
    case TensorId::attn_output: return {.name = "self_attn.o_proj.weight"};
    case TensorId::post_attention_norm: return {.name = "post_attention_layernorm.weight", .shift = layer_norm_shift};
    // llama names its FFN pre-norm post_attention_layernorm; the sandwich-norm models have both.
    case TensorId::ffn_norm:
      return {.name = gemma || muse ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight",
              .shift = layer_norm_shift};
    case TensorId::ffn_gate: return {.name = "mlp.gate_proj.weight"};
    case TensorId::ffn_up: return {.name = "mlp.up_proj.weight"};
    case TensorId::ffn_down: return {.name = "mlp.down_proj.weight"};
    case TensorId::post_ffw_norm: return {.name = "post_feedforward_layernorm.weight", .shift = layer_norm_shift};
    // Gemma's final norm scales by 1 + w like its others; Muse Glimmer's is a plain scale.
    case TensorId::output_norm: return {.name = "norm.weight", .shift = gemma ? 1.0f : 0.0f};
    case TensorId::output: return {.name = "lm_head.weight", .under_prefix = false};
    case TensorId::rope_freqs: return {.name = {}, .computed = true};  // HfModel::rope_freqs
    // Qwen3-MoE: the router, and experts stacked in expert-id order (as llama.cpp's converter).
    case TensorId::ffn_gate_inp: return {.name = c.arch == Arch::gpt_oss ? "mlp.router.weight" : "mlp.gate.weight"};
    case TensorId::ffn_gate_exps: return {.name = {}, .per_expert = "mlp.experts.{}.gate_proj.weight"};
    case TensorId::ffn_up_exps: return {.name = {}, .per_expert = "mlp.experts.{}.up_proj.weight"};
    case TensorId::ffn_gate_up_exps: return {.name = "mlp.experts.gate_up_proj"};
    case TensorId::ffn_down_exps: return {.name = "mlp.experts.down_proj", .per_expert = "mlp.experts.{}.down_proj.weight"};
    // gpt-oss (the tensors only it has; its experts are mapped by map_gpt_oss_experts)
    case TensorId::attn_output_bias: return {.name = "self_attn.o_proj.bias"};
    case TensorId::attn_sinks: return {.name = "self_attn.sinks"};
    case TensorId::ffn_norm_post_attention_name: return {.name = "post_attention_layernorm.weight"};
    case TensorId::ffn_gate_inp_bias: return {.name = "mlp.router.bias"};
    default: break;
  }
  fail("convert: tensor ", model::tensor_name(id), " of ", model::arch_name(c.arch), " has no checkpoint mapping");
}

// gpt-oss's expert tensors (model-families.md §5-6): `mlp.experts.gate_up_proj` [E, d, 2I]
// and `down_proj` [E, I, d] stored x·W, gate and up interleaved (even, odd) along the
// output; biases [E, 2I] and [E, d]. Or, in OpenAI's MXFP4 checkpoints, `*_blocks` and
// `*_scales` in [E, out, in] order (gate and up interleaved by rows), passed through.
// Returns false for the tensors it does not handle.
bool map_gpt_oss_experts(Builder& b, const model::TensorShape& t, const std::string& layer_prefix) {
  using model::TensorId;
  const model::ModelConfig& c = b.plan.config;
  const int64_t E = c.n_embd, I = c.n_ff_exp, X = c.n_expert;
  const std::string experts = layer_prefix + "mlp.experts.";
  const bool gate = t.id == TensorId::ffn_gate_exps || t.id == TensorId::ffn_gate_exps_bias;
  switch (t.id) {
    case TensorId::ffn_gate_exps:
    case TensorId::ffn_up_exps:
    case TensorId::ffn_down_exps: {
      const bool down = t.id == TensorId::ffn_down_exps;
      const std::string base = experts + (down ? "down_proj" : "gate_up_proj");
      if (b.ckpt.find(base + "_blocks") != nullptr) {
        const int64_t out = down ? E : 2 * I, in = down ? I : E;
        if (in % 32 != 0) fail(b.ckpt.dir(), ": '", base, "_blocks' rows of ", in, " are not whole MXFP4 blocks of 32");
        TensorPlan& p = b.add_shaped(t.name, t.dims(), base + "_blocks", {X, out, in / 32, 16});
        b.require_shape(base + "_scales", {X, out, in / 32});
        p.mxfp4_scales = base + "_scales";
        p.mxfp4_row_offset = down ? 0 : (gate ? 0 : 1);
        p.mxfp4_row_step = down ? 1 : 2;
        return true;
      }
      if (down) {  // [X, I, E]: GGUF row r (of E) is column r
        b.add_shaped(t.name, t.dims(), base, {X, I, E}).gather = {.slab = I * E, .offset = 0, .row_step = 1, .col_step = E};
      } else {  // [X, E, 2I]: gate row r is column 2r, up row r column 2r + 1
        b.add_shaped(t.name, t.dims(), base, {X, E, 2 * I}).gather = {
            .slab = E * 2 * I, .offset = gate ? 0 : 1, .row_step = 2, .col_step = 2 * I};
      }
      return true;
    }
    case TensorId::ffn_gate_exps_bias:
    case TensorId::ffn_up_exps_bias:  // [X, 2I]: expert e's gate biases at even, up at odd
      b.add_shaped(t.name, t.dims(), experts + "gate_up_proj_bias", {X, 2 * I}).gather = {
          .slab = 2 * I, .offset = gate ? 0 : 1, .row_step = 0, .col_step = 2};
      return true;
    case TensorId::ffn_down_exps_bias: b.add(t.name, t.dims(), experts + "down_proj_bias"); return true;
    default: return false;
  }
}

// Every tensor of the table the config has, from the checkpoint under `prefix`
// ("model." or "model.language_model.").
void map_tensors(Builder& b, const std::string& prefix, float qk_scale) {
  const model::ModelConfig& c = b.plan.config;
  for (const model::TensorShape& t : model::weight_tensors(c)) {
    if (c.arch == model::Arch::gpt_oss && t.layer >= 0 &&
        map_gpt_oss_experts(b, t, prefix + "layers." + std::to_string(t.layer) + "."))
      continue;
    const HfSource src = hf_source(c, t.id, qk_scale);
    if (src.computed) {
      SQZ_CHECK(static_cast<int64_t>(b.plan.rope_freqs.size()) == t.ne0, "convert: ", t.name, " needs ", t.ne0,
                " values, the config gave ", b.plan.rope_freqs.size());
      b.synthesise(t.name, t.ne0, 0.0f);
      b.plan.tensors.back().values = b.plan.rope_freqs;
      continue;
    }
    if (src.name.empty() && src.per_expert.empty()) {
      b.synthesise(t.name, t.ne0, src.fill);
      continue;
    }
    std::string hf = src.under_prefix ? prefix : std::string();
    if (t.layer >= 0) hf += "layers." + std::to_string(t.layer) + ".";
    if (!src.per_expert.empty() && (src.name.empty() || b.ckpt.find(hf + src.name) == nullptr)) {
      b.add_experts(t.name, t.dims(), hf + src.per_expert);
      continue;
    }
    TensorPlan& p = b.add(t.name, t.dims(), hf + src.name);
    p.shift = src.shift;
    // Rows per head: the interleaving regroups each head's rows.
    if (src.rope_rows) p.rope_heads = t.ne1 / c.head_dim;
  }
}

// Llama 3.x's RoPE scaling as per-pair divisors of the frequency (what llama.cpp's converter
// stores as rope_freqs): 1 for wavelengths shorter than original / high_freq_factor,
// `factor` for those longer than original / low_freq_factor, a smooth blend between
// (transformers' _compute_llama3_parameters).
std::vector<float> llama3_rope_divisors(const HfConfig& h, const HfConfig::Rope& r, int64_t head_dim) {
  if (!(r.factor >= 1) || !(r.low_freq_factor > 0) || !(r.high_freq_factor > r.low_freq_factor) ||
      !(r.original_context > 0))
    fail(h.where(), ": llama3 RoPE scaling needs factor >= 1, 0 < low_freq_factor < high_freq_factor and a positive "
                    "original_max_position_embeddings");
  const double low_wavelen = r.original_context / r.low_freq_factor, high_wavelen = r.original_context / r.high_freq_factor;
  std::vector<float> out;
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const double inv_freq = std::pow(r.theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
    const double wavelen = 2.0 * M_PI / inv_freq;
    double divisor = 1.0;
    if (wavelen > low_wavelen) {
      divisor = r.factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (r.original_context / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      divisor = 1.0 / ((1.0 - smooth) / r.factor + smooth);
    }
    out.push_back(static_cast<float>(divisor));
  }
  return out;
}

// RoPE base and scaling of an all-global model (llama, qwen2, qwen3): default, linear, or
// Llama 3's; anything else is refused by name.
void read_global_rope(const HfConfig& h, ConvertPlan& p, double default_theta) {
  model::ModelConfig& c = p.config;
  const HfConfig::Rope r = h.rope("full_attention", default_theta);
  c.rope_base_global = c.rope_base_local = static_cast<float>(r.theta);
  if (r.type == "linear") {
    if (!(r.factor >= 1)) fail(h.where(), ": linear RoPE scaling needs factor >= 1");
    c.rope_freq_scale = static_cast<float>(1.0 / r.factor);
  } else if (r.type == "llama3") {
    p.rope_freqs = llama3_rope_divisors(h, r, c.head_dim);
    c.rope_freq_factors = true;
  } else if (r.type != "default") {
    fail(h.where(), ": rope_type '", r.type, "' is not supported (default, linear, llama3)");
  }
}

// llama and the Qwen dense families: pre-norm SwiGLU blocks, every layer global.
void plan_dense(const HfConfig& h, ConvertPlan& p, model::Arch arch, double default_eps) {
  model::ModelConfig& c = p.config;
  read_common(h, c, /*qkv_bias=*/arch == model::Arch::qwen2);
  model::set_arch_defaults(c, arch);
  check_activation(h, "hidden_act", "silu");
  c.rms_eps = static_cast<float>(h.number_or("rms_norm_eps", default_eps));
  read_global_rope(h, p, 10000.0);
  // Qwen's sliding window is off in every release (and llama.cpp has none for these).
  h.require_false("use_sliding_window");
  c.is_local = model::all_global_pattern(c.n_layer);
  c.tied_output = h.boolean_or("tie_word_embeddings", false);
}

void plan_llama(const HfConfig& h, ConvertPlan& p, float&) { plan_dense(h, p, model::Arch::llama, 1e-6); }
void plan_qwen2(const HfConfig& h, ConvertPlan& p, float&) { plan_dense(h, p, model::Arch::qwen2, 1e-6); }
void plan_qwen3(const HfConfig& h, ConvertPlan& p, float&) { plan_dense(h, p, model::Arch::qwen3, 1e-6); }

// Qwen3-MoE: Qwen3's attention; a layer has experts unless it is in mlp_only_layers or
// (i + 1) is not a multiple of decoder_sparse_step (transformers' Qwen3MoeDecoderLayer).
void plan_qwen3moe(const HfConfig& h, ConvertPlan& p, float&) {
  plan_dense(h, p, model::Arch::qwen3moe, 1e-6);
  model::ModelConfig& c = p.config;
  // Qwen's checkpoints say num_experts; transformers 5 writes its attribute, num_local_experts.
  c.n_expert = h.find("num_experts") ? h.integer("num_experts") : h.integer("num_local_experts");
  c.n_expert_used = h.integer("num_experts_per_tok");
  c.n_ff_exp = h.integer("moe_intermediate_size");
  c.expert_weights_norm = h.boolean_or("norm_topk_prob", false);  // transformers' default
  const int64_t step = h.integer_or("decoder_sparse_step", 1);
  if (step < 1) fail(h.where(), ": \"decoder_sparse_step\" must be at least 1");
  std::vector<bool> dense_only(static_cast<size_t>(c.n_layer), false);
  if (const nlohmann::json* mlp_only = h.find("mlp_only_layers")) {
    if (!mlp_only->is_array()) fail(h.where(), ": \"mlp_only_layers\" must be an array of layer indices");
    for (const nlohmann::json& v : *mlp_only) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= c.n_layer)
        fail(h.where(), ": \"mlp_only_layers\" holds ", v.dump(), ", not a layer index below ", c.n_layer);
      dense_only[static_cast<size_t>(v.get<int64_t>())] = true;
    }
  }
  c.layer_kinds.assign(dense_only.size(), model::LayerKind{});
  for (size_t i = 0; i < dense_only.size(); ++i)
    if (!dense_only[i] && (static_cast<int64_t>(i) + 1) % step == 0) c.layer_kinds[i].ffn = model::Ffn::moe;
  if (!c.has_layer_kind(model::Ffn::moe))
    fail(h.where(), ": no layer has experts (mlp_only_layers and decoder_sparse_step leave none)");
}

// gpt-oss: attention with biases and sinks, [L G] layers of window sliding_window, YaRN,
// every layer 32 (or 128) experts with biases and the clamped SwiGLU.
void plan_gpt_oss(const HfConfig& h, ConvertPlan& p, float&) {
  model::ModelConfig& c = p.config;
  read_common(h, c, /*qkv_bias=*/true);
  if (!h.boolean_or("attention_bias", true)) fail(h.where(), ": \"attention_bias\" is false; gpt-oss has biases");
  model::set_arch_defaults(c, model::Arch::gpt_oss);
  // GGUF has no keys for the SwiGLU's constants: llama.cpp hard-codes them, so must a file.
  if (h.number_or("swiglu_limit", 7.0) != 7.0 || h.number_or("swiglu_alpha", 1.702) != 1.702)
    fail(h.where(), ": swiglu_limit / swiglu_alpha differ from gpt-oss's 7 / 1.702, which GGUF readers assume");
  c.rms_eps = static_cast<float>(h.number_or("rms_norm_eps", 1e-5));
  c.n_expert = h.integer("num_local_experts");
  c.n_expert_used = h.integer("num_experts_per_tok");
  c.n_ff_exp = c.n_ff;
  c.expert_weights_norm = true;  // a softmax over the chosen k
  c.layer_kinds.assign(static_cast<size_t>(c.n_layer), model::LayerKind{.ffn = model::Ffn::moe});
  c.sliding_window = h.integer("sliding_window");
  c.is_local = h.layer_types(c.n_layer).value_or(model::period_pattern(c.n_layer, 2));
  const HfConfig::Rope r = h.rope("full_attention", 150000.0);
  c.rope_base_global = c.rope_base_local = static_cast<float>(r.theta);
  if (r.type == "yarn") {
    if (r.has_mscale) fail(h.where(), ": YaRN's mscale / mscale_all_dim are not supported");
    c.yarn_original_context = static_cast<int64_t>(r.original_context);
    c.yarn_factor = static_cast<float>(r.has_factor ? r.factor : static_cast<double>(c.n_ctx) / r.original_context);
    c.yarn_beta_fast = static_cast<float>(r.beta_fast);
    c.yarn_beta_slow = static_cast<float>(r.beta_slow);
    c.yarn_attn_factor = static_cast<float>(r.attention_factor);
    if (r.truncate != c.yarn_truncate)
      fail(h.where(), ": YaRN truncate is ", r.truncate ? "true" : "false", "; a gpt-oss GGUF can only say ",
           c.yarn_truncate ? "true" : "false");
  } else if (r.type != "default") {
    fail(h.where(), ": rope_type '", r.type, "' is not supported for gpt-oss (yarn, default)");
  }
  if (h.boolean_or("tie_word_embeddings", false)) fail(h.where(), ": tie_word_embeddings is true; gpt-oss has an untied head");
  c.tied_output = false;
}

void plan_gemma3(const HfConfig& h, ConvertPlan& p, float&) {
  model::ModelConfig& c = p.config;
  read_common(h, c);
  if (h.find("head_dim") == nullptr) c.head_dim = 256;  // Gemma3TextConfig's default
  model::set_arch_defaults(c, model::Arch::gemma3);
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
  model::set_arch_defaults(c, model::Arch::muse_glimmer);
  check_activation(h, "hidden_activation", "silu");
  if (h.boolean_or("tie_word_embeddings", false))
    fail(h.where(), ": tie_word_embeddings is true; muse-glimmer's head is untied");
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
        fail(h.where(), ": layer_rope_theta[", i, "] is ", t, " on a ",
             c.is_local[static_cast<size_t>(i)] ? "sliding" : "full",
             " layer; squeeze runs RoPE on exactly the sliding layers");
    }
  }
  qk_scale = static_cast<float>(h.number_or("qk_scale_factor", 3.87));
  if (!(qk_scale > 0)) fail(h.where(), ": \"qk_scale_factor\" must be positive");
}

// The Hugging Face model classes convert reads: config.json's "architectures"[0], where
// the text model's config and tensors live, and the reader of that config.
struct HfClass {
  std::string_view name;
  const char* text_config;  // the sub-object holding the text model's config; null: the root
  const char* tensor_prefix;
  void (*plan)(const HfConfig&, ConvertPlan&, float& qk_scale);
};

constexpr HfClass kHfClasses[] = {
    {"LlamaForCausalLM", nullptr, "model.", plan_llama},
    {"Qwen2ForCausalLM", nullptr, "model.", plan_qwen2},
    {"Qwen3ForCausalLM", nullptr, "model.", plan_qwen3},
    {"Qwen3MoeForCausalLM", nullptr, "model.", plan_qwen3moe},
    {"GptOssForCausalLM", nullptr, "model.", plan_gpt_oss},
    {"Gemma3ForCausalLM", nullptr, "model.", plan_gemma3},
    {"MuseGlimmerForConditionalGeneration", "text_config", "model.language_model.", plan_muse_glimmer},
};

}  // namespace

std::string supported_hf_archs() {
  std::string out;
  for (const HfClass& k : kHfClasses) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

HfModel read_hf_config(const nlohmann::json& root, const std::string& where) {
  HfModel out;
  const json* archs = root.is_object() && root.contains("architectures") ? &root["architectures"] : nullptr;
  if (archs == nullptr || !archs->is_array() || archs->empty() || !(*archs)[0].is_string())
    fail(where, ": \"architectures\" must name the model class (one of ", supported_hf_archs(), ")");
  out.hf_arch = (*archs)[0].get<std::string>();
  const HfClass* cls = nullptr;
  for (const HfClass& k : kHfClasses)
    if (k.name == out.hf_arch) cls = &k;
  if (cls == nullptr) fail(where, ": architecture '", out.hf_arch, "' is not supported (", supported_hf_archs(), ")");
  ConvertPlan p;
  p.hf_arch = out.hf_arch;
  if (cls->text_config) {
    if (!root.contains(cls->text_config) || !root[cls->text_config].is_object())
      fail(where, ": \"", cls->text_config, "\" must be an object");
    cls->plan(HfConfig(root[cls->text_config], where + " " + cls->text_config), p, out.qk_scale);
  } else {
    cls->plan(HfConfig(root, where), p, out.qk_scale);
  }
  out.tensor_prefix = cls->tensor_prefix;
  out.rope_freqs = std::move(p.rope_freqs);
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
  p.rope_freqs = std::move(hf.rope_freqs);
  // A tied head reads the embedding; a separate lm_head.weight beside it would be silently
  // dropped, so it must be the embedding's copy (some exports save both).
  if (p.config.tied_output) {
    const safetensors::Tensor* head = ckpt.find("lm_head.weight");
    const safetensors::Tensor* embd = ckpt.find(hf.tensor_prefix + "embed_tokens.weight");
    if (head && (!embd || head->dtype != embd->dtype || head->shape != embd->shape ||
                 !std::equal(head->data.begin(), head->data.end(), embd->data.begin(), embd->data.end())))
      fail(ckpt.dir(), ": config.json ties the output head to the embedding (tie_word_embeddings), but the checkpoint "
                       "has a different lm_head.weight");
  }
  // Experts saved in transformers 5's fused layout keep their gate/up tensor fused
  // (ffn_gate_up_exps, gate rows first, as llama.cpp reads it).
  for (int64_t il = 0; il < p.config.n_layer && p.config.arch != model::Arch::gpt_oss; ++il)
    if (p.config.layer_kind(il).ffn == model::Ffn::moe) {
      p.config.fused_gate_up_exps =
          ckpt.find(hf.tensor_prefix + "layers." + std::to_string(il) + ".mlp.experts.gate_up_proj") != nullptr;
      break;
    }
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
