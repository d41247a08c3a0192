// model/gguf_config.cpp
#include "model/gguf_config.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "core/error.h"
#include "model/draft_config.h"
#include "model/tensor_table.h"

namespace squeeze::model {

using gguf::Value;

namespace {

std::string key(std::string_view arch, const char* suffix) { return std::string(arch) + "." + suffix; }

int64_t positive(const gguf::Metadata& m, const std::string& k, int64_t v) {
  if (v <= 0) m.fail_key(k, "must be positive, got " + std::to_string(v));
  return v;
}

// Whether a config uses only the layouts its architecture's keys describe: attention
// layers, dense FFNs — or, for qwen3moe, expert FFNs (separate or fused gate/up) — and none
// of the biases, fused Q/K/V, sinks or shared experts the later families add keys for.
bool layout_has_keys(const ModelConfig& c) {
  if (c.arch == Arch::gpt_oss)  // its options are the architecture's own (set_arch_defaults)
    return std::all_of(c.layer_kinds.begin(), c.layer_kinds.end(),
                       [](const LayerKind& k) { return k == LayerKind{.ffn = Ffn::moe}; }) &&
           !c.layer_kinds.empty() && !c.fused_qkv && c.n_ff_shexp == 0;
  const bool experts = c.arch == Arch::qwen3moe;
  const bool kinds_ok = std::all_of(c.layer_kinds.begin(), c.layer_kinds.end(), [&](const LayerKind& k) {
    return k.mixer == Mixer::attention && (k.ffn == Ffn::dense || experts);
  });
  return kinds_ok && !c.attn_output_bias && !c.fused_qkv && !c.attn_sinks && c.n_ff_shexp == 0 &&
         (experts || (c.n_expert == 0 && !c.fused_gate_up_exps));
}

// Qwen3-MoE's experts: count, top-k, expert FFN size and whether the gates are
// renormalised. A layer is an expert layer when it holds a router (ffn_gate_inp): llama.cpp's
// qwen3moe has no key for dense layers among expert ones (Hugging Face's mlp_only_layers,
// decoder_sparse_step), so squeeze's files say it by the tensors, and the shape check then
// finds every tensor each kind of layer needs. Fused gate/up experts likewise by the tensor.
void read_experts(const gguf::File& file, std::string_view a, ModelConfig& c) {
  const gguf::Metadata& m = file.metadata();
  const std::string count_key = key(a, "expert_count"), used_key = key(a, "expert_used_count");
  c.n_expert = positive(m, count_key, m.get_i64(count_key));
  if (c.n_expert > 4096) m.fail_key(count_key, "is implausibly large (" + std::to_string(c.n_expert) + ")");
  c.n_expert_used = positive(m, used_key, m.get_i64(used_key));
  if (c.n_expert_used > c.n_expert)
    m.fail_key(used_key, "(" + std::to_string(c.n_expert_used) + ") exceeds " + count_key + " (" +
                             std::to_string(c.n_expert) + ")");
  const std::string ff_key = key(a, "expert_feed_forward_length");
  c.n_ff_exp = positive(m, ff_key, m.get_i64(ff_key));
  c.expert_weights_norm = m.get_bool_or(key(a, "expert_weights_norm"), true);
  c.layer_kinds.assign(static_cast<size_t>(c.n_layer), LayerKind{});
  bool first = true;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    if (file.find_tensor(tensor_name(TensorId::ffn_gate_inp, il)) == nullptr) continue;
    c.layer_kinds[static_cast<size_t>(il)].ffn = Ffn::moe;
    if (first) c.fused_gate_up_exps = file.find_tensor(tensor_name(TensorId::ffn_gate_up_exps, il)) != nullptr;
    first = false;
  }
}

// YaRN: factor, original context and β's as llama.cpp's converter writes them. GGUF has no
// key for transformers' `truncate`: gpt-oss's config says false, every other model's
// default is true (set_arch_defaults), which is also what llama.cpp always does.
void read_yarn(const gguf::File& file, std::string_view a, ModelConfig& c) {
  const gguf::Metadata& m = file.metadata();
  const std::string factor_key = key(a, "rope.scaling.factor"), orig_key = key(a, "rope.scaling.original_context_length");
  c.yarn_factor = m.get_f32(factor_key);
  if (!(c.yarn_factor >= 1.0f) || !std::isfinite(c.yarn_factor))
    m.fail_key(factor_key, "must be at least 1 (a context extension)");
  c.yarn_original_context = positive(m, orig_key, m.get_i64(orig_key));
  const auto beta = [&](const char* suffix, float fallback) {
    const std::string k = key(a, suffix);
    const float v = m.get_f32_or(k, fallback);
    if (!(v > 0) || !std::isfinite(v)) m.fail_key(k, "must be positive");
    return v;
  };
  c.yarn_beta_fast = beta("rope.scaling.yarn_beta_fast", 32.0f);
  c.yarn_beta_slow = beta("rope.scaling.yarn_beta_slow", 1.0f);
  const std::string attn_key = key(a, "rope.scaling.yarn_attn_factor");
  c.yarn_attn_factor = m.get_f32_or(attn_key, 0.0f);
  if (!(c.yarn_attn_factor >= 0) || !std::isfinite(c.yarn_attn_factor)) m.fail_key(attn_key, "must be positive");
  if (file.find_tensor(tensor_name(TensorId::rope_freqs)) != nullptr)
    fail(file.path(), ": tensor 'rope_freqs.weight' beside YaRN scaling (squeeze runs one or the other)");
}

// RoPE scaling as llama.cpp reads it: `rope.scaling.factor` (or the older
// `rope.scale_linear`) divides positions whatever the type says, `rope.scaling.type` names
// the method; the Llama 3.x divisors come as the `rope_freqs` tensor.
void read_rope_scaling(const gguf::File& file, std::string_view a, ModelConfig& c) {
  const gguf::Metadata& m = file.metadata();
  const std::string type_key = key(a, "rope.scaling.type");
  const std::string type = m.get_string_or(type_key, "none");
  if (type == "longrope") m.fail_key(type_key, "is 'longrope', which squeeze does not implement yet (none, linear, yarn)");
  if (type != "none" && type != "linear" && type != "yarn")
    m.fail_key(type_key, "is '" + type + "', an unknown RoPE scaling (none, linear, yarn)");
  if (type == "yarn") {
    read_yarn(file, a, c);
    return;
  }
  std::string factor_key = key(a, "rope.scaling.factor");
  std::optional<float> factor = m.get_f32_opt(factor_key);
  if (!factor) {
    factor_key = key(a, "rope.scale_linear");
    factor = m.get_f32_opt(factor_key);
  }
  if (factor && *factor != 0.0f) {
    if (!(*factor >= 1.0f) || !std::isfinite(*factor)) m.fail_key(factor_key, "must be at least 1 (a context extension)");
    c.rope_freq_scale = 1.0f / *factor;
  } else if (type == "linear") {
    m.fail_key(type_key, "is 'linear' without " + key(a, "rope.scaling.factor"));
  }
  c.rope_freq_factors = file.find_tensor(tensor_name(TensorId::rope_freqs)) != nullptr;
}

}  // namespace

ModelConfig config_from_gguf(const gguf::File& file) {
  const gguf::Metadata& m = file.metadata();
  ModelConfig c;
  c.name = file.path();
  const std::string arch_value = m.get_string("general.architecture");
  const std::optional<Arch> arch = parse_arch(arch_value);
  if (!arch)
    fail(file.path(), ": unsupported architecture '", arch_value, "' (supported: ", supported_archs(), ")",
         arch_value == kDraftArch ? "; it is a DFlash drafter: pass it with --draft" : "");
  const std::string a = arch_value;
  const Arch A = *arch;
  c.n_layer = positive(m, key(a, "block_count"), m.get_i64(key(a, "block_count")));
  if (c.n_layer > 4096) m.fail_key(key(a, "block_count"), "is implausibly large (" + std::to_string(c.n_layer) + ")");
  c.n_embd = positive(m, key(a, "embedding_length"), m.get_i64(key(a, "embedding_length")));
  c.n_head = positive(m, key(a, "attention.head_count"), m.get_i64(key(a, "attention.head_count")));
  c.n_head_kv =
      positive(m, key(a, "attention.head_count_kv"), m.get_i64_or(key(a, "attention.head_count_kv"), c.n_head));
  if (c.n_head % c.n_head_kv != 0)
    m.fail_key(key(a, "attention.head_count_kv"),
               "(" + std::to_string(c.n_head_kv) + ") does not divide head_count (" + std::to_string(c.n_head) + ")");
  c.head_dim = m.get_i64_or(key(a, "attention.key_length"), c.n_embd / c.n_head);
  positive(m, key(a, "attention.key_length"), c.head_dim);
  if (auto vlen = m.get_i64_opt(key(a, "attention.value_length")); vlen && *vlen != c.head_dim)
    m.fail_key(key(a, "attention.value_length"), "differs from key_length (unsupported)");
  c.n_ff = positive(m, key(a, "feed_forward_length"), m.get_i64(key(a, "feed_forward_length")));
  // The architecture's options and defaults (RoPE type, norms, activation, scales) follow
  // from general.architecture alone, as in llama.cpp; keys below refine them.
  set_arch_defaults(c, A);
  if (A == Arch::qwen3moe || A == Arch::gpt_oss) read_experts(file, a, c);
  c.rms_eps = m.get_f32_or(key(a, "attention.layer_norm_rms_epsilon"), 1e-5f);
  c.rope_base_global = m.get_f32_or(key(a, "rope.freq_base"), c.rope_base_global);
  // muse-glimmer's local layers use the one base unless the file gives them their own (llama.cpp).
  if (A == Arch::muse_glimmer || A == Arch::gpt_oss) c.rope_base_local = c.rope_base_global;
  c.rope_base_local = m.get_f32_or(key(a, "rope.freq_base_swa"), c.rope_base_local);
  if (auto rd = m.get_i64_opt(key(a, "rope.dimension_count")); rd && *rd != c.head_dim)
    m.fail_key(key(a, "rope.dimension_count"), "partial rotary dimensions are not supported");
  read_rope_scaling(file, a, c);
  if (auto s = m.get_f32_opt(key(a, "attention.scale"))) {
    if (!(*s > 0) || !std::isfinite(*s)) m.fail_key(key(a, "attention.scale"), "must be positive");
    c.attn_scale = *s;
  }
  if (auto cap = m.get_f32_opt(key(a, "final_logit_softcapping"))) {
    if (!(*cap > 0) || !std::isfinite(*cap)) m.fail_key(key(a, "final_logit_softcapping"), "must be positive");
    c.final_logit_softcap = *cap;
  } else if (A == Arch::muse_glimmer) {
    c.final_logit_softcap = 30.0f;  // llama.cpp's default when the key is absent (its converter always writes it)
  }
  if (A == Arch::muse_glimmer) {  // required, as llama.cpp requires it
    const float s = m.get_f32(key(a, "logit_scale"));
    if (!(s > 0) || !std::isfinite(s)) m.fail_key(key(a, "logit_scale"), "must be positive");
    c.logit_scale = s;
  }
  c.n_ctx = m.get_i64_or(key(a, "context_length"), 4096);
  const gguf::TensorInfo& embd = file.tensor(tensor_name(TensorId::token_embd));
  c.n_vocab = m.get_i64_or(key(a, "vocab_size"), embd.n_dims >= 2 ? embd.ne[1] : 0);
  // muse-glimmer's head is never tied: without output.weight the tensor check below names it.
  c.tied_output = A != Arch::muse_glimmer && file.find_tensor(tensor_name(TensorId::output)) == nullptr;

  // Local layers: glimmer's window is optional (0: all global); gemma3 and muse-glimmer
  // always have one, as llama.cpp requires the key. llama files never have local layers.
  const std::string window_key = key(a, "attention.sliding_window");
  const WindowKey window = arch_info(A).window;
  const bool window_required = window == WindowKey::required;
  c.sliding_window = window_required                 ? m.get_i64(window_key)
                     : window == WindowKey::optional ? m.get_i64_or(window_key, 0)
                                                     : 0;
  if (c.sliding_window < 0) m.fail_key(window_key, "is negative");
  if (window_required && c.sliding_window == 0) m.fail_key(window_key, "is 0 (" + a + " has sliding-window layers)");
  const std::string pattern_key = key(a, "attention.sliding_window_pattern");
  const gguf::Value* explicit_pattern = m.find(pattern_key);
  if (c.sliding_window == 0) {
    c.is_local = all_global_pattern(c.n_layer);
  } else if (explicit_pattern && explicit_pattern->array_if()) {
    const auto flags = m.get_bool_array(pattern_key);
    if (static_cast<int64_t>(flags.size()) != c.n_layer)
      m.fail_key(pattern_key,
                 "has " + std::to_string(flags.size()) + " entries for " + std::to_string(c.n_layer) + " layers");
    c.is_local.assign(flags.begin(), flags.end());
  } else if (explicit_pattern) {
    const int64_t period = m.get_i64(pattern_key);
    // llama.cpp reads a period of 0 as "every layer local"; either way there is no global layer.
    if (period <= 0) m.fail_key(pattern_key, "must be a positive period (got " + std::to_string(period) + ")");
    c.is_local = period_pattern(c.n_layer, period);
  } else {
    c.is_local = period_pattern(c.n_layer, arch_info(A).default_pattern_period);
  }
  // A gemma3 pattern the file states must leave some layer global: with none, no layer
  // would see past the window, which Gemma never does. (glimmer files may: a model cut
  // to fewer layers than one [L L L G] period is all local, and such files exist.)
  if (A == Arch::gemma3 && explicit_pattern && c.n_global_layers() == 0)
    m.fail_key(pattern_key, "marks every layer local (no global layer)");
  try {
    c.validate();
  } catch (const Error& e) {
    throw e.with_context(file.path());
  }

  // Every tensor the architecture needs, with the shape it implies.
  check_tensor_shapes(file, weight_tensors(c), a);
  return c;
}

void check_tensor_shapes(const gguf::File& file, const std::vector<TensorShape>& want, const std::string& who) {
  for (const TensorShape& w : want) {
    const gguf::TensorInfo* t = file.find_tensor(w.name);
    if (t == nullptr) fail(file.path(), ": tensor '", w.name, "' is missing (", who, " needs it)");
    const int64_t ne1 = t->n_dims >= 2 ? t->ne[1] : 1, ne2 = t->n_dims >= 3 ? t->ne[2] : 1;
    if (t->ne[0] != w.ne0 || ne1 != w.ne1 || ne2 != w.ne2 || t->n_dims > 3) {
      std::string need;
      for (int64_t d : w.dims()) need += (need.empty() ? "" : ", ") + std::to_string(d);
      fail(file.path(), ": tensor '", w.name, "' has shape ", t->shape_string(), ", the config needs [", need, "]");
    }
  }
}

void write_config(gguf::Metadata& m, const ModelConfig& c) {
  c.validate();
  const std::string a(arch_name(c.arch));
  const Arch A = c.arch;
  // Options without a GGUF key of their own must be the architecture's, or the file
  // would read back as a different model.
  ModelConfig d = c;
  set_arch_defaults(d, A);
  SQZ_CHECK(c.norm_placement == d.norm_placement && c.qk_norm == d.qk_norm && c.ffn_activation == d.ffn_activation &&
                c.embd_scale == d.embd_scale && c.rope_type == d.rope_type && c.embd_norm == d.embd_norm &&
                c.attn_gate == d.attn_gate && c.post_norm_eps == d.post_norm_eps && c.nope_global == d.nope_global,
            c.name, ": norm placement, QK-norm, activation, embedding scale and norm, attention gate, post-norm eps, ",
            "NoPE layers and RoPE type must be arch ", a, "'s to be stored in GGUF");
  SQZ_CHECK(c.attn_bias == d.attn_bias, c.name, ": Q/K/V biases must be arch ", a, "'s to be stored in GGUF");
  SQZ_CHECK(layout_has_keys(c), c.name,
            ": layer kinds, experts, output biases, fused tensors and sinks have no GGUF keys for arch ", a, " yet");
  SQZ_CHECK(A != Arch::qwen3moe || c.has_layer_kind(Ffn::moe), c.name, ": a qwen3moe model needs expert layers");
  SQZ_CHECK(c.yarn_factor == 0 || c.yarn_truncate == d.yarn_truncate, c.name,
            ": YaRN's truncation must be arch ", a, "'s to be stored in GGUF");
  SQZ_CHECK(A == Arch::muse_glimmer || c.logit_scale == 1.0f, c.name,
            ": a logit scale needs the muse-glimmer architecture");
  SQZ_CHECK(A != Arch::muse_glimmer || !c.tied_output, c.name, ": muse-glimmer has an untied output head");
  m.set("general.architecture", Value::string(a));
  m.set(key(a, "block_count"), Value::u32(static_cast<uint32_t>(c.n_layer)));
  m.set(key(a, "context_length"), Value::u32(static_cast<uint32_t>(c.n_ctx)));
  m.set(key(a, "embedding_length"), Value::u32(static_cast<uint32_t>(c.n_embd)));
  m.set(key(a, "feed_forward_length"), Value::u32(static_cast<uint32_t>(c.n_ff)));
  m.set(key(a, "attention.head_count"), Value::u32(static_cast<uint32_t>(c.n_head)));
  m.set(key(a, "attention.head_count_kv"), Value::u32(static_cast<uint32_t>(c.n_head_kv)));
  m.set(key(a, "attention.key_length"), Value::u32(static_cast<uint32_t>(c.head_dim)));
  m.set(key(a, "attention.value_length"), Value::u32(static_cast<uint32_t>(c.head_dim)));
  m.set(key(a, "attention.layer_norm_rms_epsilon"), Value::f32(c.rms_eps));
  m.set(key(a, "rope.freq_base"), Value::f32(c.rope_base_global));
  m.set(key(a, "rope.dimension_count"), Value::u32(static_cast<uint32_t>(c.head_dim)));
  if (c.rope_freq_scale != 1.0f) {  // the divisors (rope_freq_factors) travel as a tensor
    m.set(key(a, "rope.scaling.type"), Value::string("linear"));
    m.set(key(a, "rope.scaling.factor"), Value::f32(1.0f / c.rope_freq_scale));
  }
  if (c.yarn_factor > 0) {
    m.set(key(a, "rope.scaling.type"), Value::string("yarn"));
    m.set(key(a, "rope.scaling.factor"), Value::f32(c.yarn_factor));
    m.set(key(a, "rope.scaling.original_context_length"), Value::u32(static_cast<uint32_t>(c.yarn_original_context)));
    m.set(key(a, "rope.scaling.yarn_beta_fast"), Value::f32(c.yarn_beta_fast));
    m.set(key(a, "rope.scaling.yarn_beta_slow"), Value::f32(c.yarn_beta_slow));
    if (c.yarn_attn_factor > 0) m.set(key(a, "rope.scaling.yarn_attn_factor"), Value::f32(c.yarn_attn_factor));
  }
  m.set(key(a, "vocab_size"), Value::u32(static_cast<uint32_t>(c.n_vocab)));
  if (A == Arch::qwen3moe || A == Arch::gpt_oss) {  // which layers have experts, the tensors say (read_experts)
    m.set(key(a, "expert_count"), Value::u32(static_cast<uint32_t>(c.n_expert)));
    m.set(key(a, "expert_used_count"), Value::u32(static_cast<uint32_t>(c.n_expert_used)));
    m.set(key(a, "expert_feed_forward_length"), Value::u32(static_cast<uint32_t>(c.n_ff_exp)));
    // gpt-oss's softmax over the chosen k is a renormalisation; llama.cpp has no key for it.
    if (A == Arch::qwen3moe) {
      m.set(key(a, "expert_weights_norm"), Value::boolean(c.expert_weights_norm));
    } else {
      SQZ_CHECK(c.expert_weights_norm, c.name, ": gpt-oss renormalises its experts' gates");
    }
  }
  if (c.attn_scale != d.attn_scale) m.set(key(a, "attention.scale"), Value::f32(c.effective_attn_scale()));
  if (c.final_logit_softcap > 0) m.set(key(a, "final_logit_softcapping"), Value::f32(c.final_logit_softcap));
  auto bool_pattern = [&] {
    std::vector<gguf::Value> flags;
    for (bool l : c.is_local) flags.push_back(Value::boolean(l));
    m.set(key(a, "attention.sliding_window_pattern"), Value::array(gguf::ValueType::Bool, std::move(flags)));
  };
  if (A == Arch::glimmer && c.sliding_window > 0) {
    m.set(key(a, "attention.sliding_window"), Value::u32(static_cast<uint32_t>(c.sliding_window)));
    m.set(key(a, "rope.freq_base_swa"), Value::f32(c.rope_base_local));
    bool_pattern();
  } else if (A == Arch::gemma3 && c.sliding_window > 0) {
    // As llama.cpp's converter writes gemma3: the window only; the base of local layers
    // and the pattern are written when they differ from what readers assume.
    m.set(key(a, "attention.sliding_window"), Value::u32(static_cast<uint32_t>(c.sliding_window)));
    if (c.rope_base_local != d.rope_base_local) m.set(key(a, "rope.freq_base_swa"), Value::f32(c.rope_base_local));
    if (c.is_local != d.is_local) bool_pattern();
  } else if (A == Arch::muse_glimmer && c.sliding_window > 0) {
    // As llama.cpp's converter writes muse-glimmer: window, per-layer pattern, logit scale
    // (the soft-cap is written above); a base of its own for local layers only when set.
    m.set(key(a, "attention.sliding_window"), Value::u32(static_cast<uint32_t>(c.sliding_window)));
    bool_pattern();
    m.set(key(a, "logit_scale"), Value::f32(c.logit_scale));
    if (c.rope_base_local != c.rope_base_global) m.set(key(a, "rope.freq_base_swa"), Value::f32(c.rope_base_local));
  } else if (A == Arch::gpt_oss && c.sliding_window > 0) {
    // As llama.cpp's converter writes gpt-oss: the window only; the [L G] pattern is implied.
    m.set(key(a, "attention.sliding_window"), Value::u32(static_cast<uint32_t>(c.sliding_window)));
    if (c.is_local != d.is_local) bool_pattern();
  } else if (arch_info(A).window == WindowKey::required) {
    fail(c.name, ": ", a, " needs a sliding window (llama.cpp requires ", key(a, "attention.sliding_window"), ")");
  } else if (c.n_local_layers() > 0) {
    fail(c.name, ": local layers need the glimmer or gemma3 architecture");
  }
}

text::TokenizerData tokenizer_data_from_gguf(const gguf::Metadata& m) {
  text::TokenizerData t;
  t.model = m.get_string("tokenizer.ggml.model");
  if (t.model != "gpt2" && t.model != "llama")
    m.fail_key("tokenizer.ggml.model",
               "is '" + t.model + "'; supported: byte-level BPE ('gpt2') and SentencePiece ('llama')");
  t.pre = m.get_string_or("tokenizer.ggml.pre", "default");
  t.tokens = m.get_string_array("tokenizer.ggml.tokens");
  t.merges = m.get_string_array_opt("tokenizer.ggml.merges").value_or(std::vector<std::string>{});
  t.token_types = m.get_i32_array_opt("tokenizer.ggml.token_type").value_or(std::vector<int32_t>{});
  t.scores = m.get_f32_array_opt("tokenizer.ggml.scores").value_or(std::vector<float>{});
  // llama.cpp's default when the key is absent: SentencePiece prefixes a space.
  t.add_space_prefix = m.get_bool_or("tokenizer.ggml.add_space_prefix", true);
  if (m.has("tokenizer.ggml.token_type")) {
    if (t.token_types.size() != t.tokens.size())
      m.fail_key("tokenizer.ggml.token_type", "has " + std::to_string(t.token_types.size()) + " entries for " +
                                                  std::to_string(t.tokens.size()) + " tokens");
    for (size_t i = 0; i < t.token_types.size(); ++i)  // llama_token_type: 0 (undefined) .. 6 (byte)
      if (t.token_types[i] < 0 || t.token_types[i] > 6)
        m.fail_key("tokenizer.ggml.token_type",
                   "gives token " + std::to_string(i) + " the unknown type " + std::to_string(t.token_types[i]));
  }
  // A token id must name a token: checked here, as int64, so that an id beyond int32
  // cannot wrap into the vocabulary, and the error names the key. Absent means -1 (none).
  const auto n_tokens = static_cast<int64_t>(t.tokens.size());
  auto id = [&](const char* k) {
    const int64_t v = m.get_i64_or(k, -1);
    if (m.has(k) && (v < 0 || v >= n_tokens))
      m.fail_key(k, "is " + std::to_string(v) + ", outside the vocabulary of " + std::to_string(n_tokens) + " tokens");
    return static_cast<int32_t>(v);
  };
  t.bos_id = id("tokenizer.ggml.bos_token_id");
  t.eos_id = id("tokenizer.ggml.eos_token_id");
  t.pad_id = id("tokenizer.ggml.padding_token_id");
  t.unk_id = id("tokenizer.ggml.unknown_token_id");
  t.add_bos = m.get_bool_or("tokenizer.ggml.add_bos_token", false);
  t.add_eos = m.get_bool_or("tokenizer.ggml.add_eos_token", false);
  t.normalizer = m.get_string_array_opt("squeeze.tokenizer.normalizer").value_or(std::vector<std::string>{});
  return t;
}

void write_tokenizer(gguf::Metadata& m, const text::TokenizerData& t) {
  m.set("tokenizer.ggml.model", Value::string(t.model));
  m.set("tokenizer.ggml.pre", Value::string(t.pre));
  m.set("tokenizer.ggml.tokens", Value::string_array(t.tokens));
  m.set("tokenizer.ggml.merges", Value::string_array(t.merges));
  if (!t.token_types.empty()) m.set("tokenizer.ggml.token_type", Value::i32_array(t.token_types));
  if (!t.scores.empty()) m.set("tokenizer.ggml.scores", Value::f32_array(t.scores));
  if (t.model == "llama") m.set("tokenizer.ggml.add_space_prefix", Value::boolean(t.add_space_prefix));
  if (!t.normalizer.empty()) m.set("squeeze.tokenizer.normalizer", Value::string_array(t.normalizer));
  auto set_id = [&](const char* k, int32_t v) {
    if (v >= 0) m.set(k, Value::u32(static_cast<uint32_t>(v)));
  };
  set_id("tokenizer.ggml.bos_token_id", t.bos_id);
  set_id("tokenizer.ggml.eos_token_id", t.eos_id);
  set_id("tokenizer.ggml.padding_token_id", t.pad_id);
  set_id("tokenizer.ggml.unknown_token_id", t.unk_id);
  m.set("tokenizer.ggml.add_bos_token", Value::boolean(t.add_bos));
  m.set("tokenizer.ggml.add_eos_token", Value::boolean(t.add_eos));
}

}  // namespace squeeze::model
