// model/config.cpp — see config.h.
#include "model/config.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace squeeze::model {

const char* rope_type_name(RopeType t) { return t == RopeType::neox ? "neox" : "normal"; }

const char* norm_placement_name(NormPlacement p) {
  return p == NormPlacement::pre ? "pre" : p == NormPlacement::post ? "post" : "pre+post";
}

const char* ffn_activation_name(FfnActivation a) {
  return a == FfnActivation::silu ? "SwiGLU" : a == FfnActivation::gelu_tanh ? "GeGLU-tanh" : "SwiGLU-OAI (clamped)";
}

void set_arch_defaults(ModelConfig& c, Arch arch) {
  c.arch = arch;
  c.norm_placement = NormPlacement::pre;
  c.qk_norm = false;
  c.ffn_activation = FfnActivation::silu;
  c.embd_scale = 1.0f;
  c.attn_scale = 0.0f;
  c.final_logit_softcap = 0.0f;
  c.rope_type = RopeType::normal;
  c.embd_norm = false;
  c.attn_gate = false;
  c.post_norm_eps = 0.0f;
  c.nope_global = false;
  c.logit_scale = 1.0f;
  c.attn_bias = arch == Arch::qwen2 || arch == Arch::gpt_oss;
  c.attn_output_bias = c.attn_sinks = c.expert_bias = c.ffn_norm_post_attention_name = arch == Arch::gpt_oss;
  c.yarn_truncate = arch != Arch::gpt_oss;  // gpt-oss's config says truncate: false
  if (arch == Arch::gpt_oss) {
    c.rope_type = RopeType::neox;
    c.ffn_activation = FfnActivation::swiglu_oai;
    c.is_local = period_pattern(c.n_layer, arch_info(arch).default_pattern_period);
    return;
  }
  if (arch == Arch::qwen2 || arch == Arch::qwen3 || arch == Arch::qwen3moe) {
    c.rope_type = RopeType::neox;
    c.qk_norm = arch != Arch::qwen2;
    return;
  }
  if (arch == Arch::muse_glimmer) {
    c.norm_placement = NormPlacement::both;
    c.qk_norm = true;
    c.embd_norm = true;
    c.attn_gate = true;
    c.post_norm_eps = 1e-8f;  // fixed in the reference and in llama.cpp's graph, not a config field
    c.nope_global = true;
    c.tied_output = false;
    c.final_logit_softcap = 20.0f;
    c.logit_scale = c.n_embd > 0 ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.n_embd) / 256.0)) : 1.0f;
    c.is_local = period_pattern_from_last(c.n_layer, 4);
    return;
  }
  if (arch != Arch::gemma3) return;
  c.norm_placement = NormPlacement::both;
  c.qk_norm = true;
  c.ffn_activation = FfnActivation::gelu_tanh;
  c.rope_type = RopeType::neox;
  // sqrtf in f32, as llama.cpp scales the embeddings (ggml_scale by sqrtf(n_embd)).
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  // query_pre_attn_scalar: head_dim for every Gemma 3 but the 27B (62 layers), where it
  // is n_embd / n_head; llama.cpp identifies the 27B by its layer count the same way.
  const int64_t pre_attn = c.n_layer == 62 && c.n_head > 0 ? c.n_embd / c.n_head : c.head_dim;
  c.attn_scale = pre_attn > 0 ? 1.0f / std::sqrt(static_cast<float>(pre_attn)) : 0.0f;
  c.rope_base_global = 1000000.0f;
  c.rope_base_local = 10000.0f;  // llama.cpp's rope_freq_base_train_swa for gemma3
  c.tied_output = true;
  c.is_local = period_pattern(c.n_layer, arch_info(arch).default_pattern_period);
}

float ModelConfig::effective_attn_scale() const {
  return attn_scale > 0 ? attn_scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

// transformers' _compute_yarn_parameters: the correction dims of β rotations, the linear
// ramp between them (with 0.001 added to a zero-width range), and the blend of the
// extrapolated and interpolated inverse frequencies, as divisors of θ^(−2i/d).
std::vector<float> ModelConfig::yarn_divisors() const {
  if (yarn_factor <= 0) return {};
  const double d = static_cast<double>(head_dim), base = rope_base_global;
  const auto corr = [&](double rotations) {
    return d * std::log(static_cast<double>(yarn_original_context) / (rotations * 2.0 * M_PI)) / (2.0 * std::log(base));
  };
  double low = corr(yarn_beta_fast), high = corr(yarn_beta_slow);
  if (yarn_truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, d - 1);
  if (low == high) high += 0.001;
  std::vector<float> out;
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    // inv_freq = extrapolated·(1 − ramp) + extrapolated/factor·ramp.
    out.push_back(static_cast<float>(1.0 / ((1.0 - ramp) + ramp / yarn_factor)));
  }
  return out;
}

float ModelConfig::yarn_mscale() const {
  if (yarn_factor <= 0) return 1.0f;
  if (yarn_attn_factor > 0) return yarn_attn_factor;
  return yarn_factor <= 1 ? 1.0f : static_cast<float>(0.1 * std::log(static_cast<double>(yarn_factor)) + 1.0);
}

bool ModelConfig::has_llama_options() const {
  return norm_placement == NormPlacement::pre && !qk_norm && ffn_activation == FfnActivation::silu &&
         embd_scale == 1.0f && attn_scale == 0.0f && final_logit_softcap == 0.0f && !embd_norm && !attn_gate &&
         !nope_global && logit_scale == 1.0f;
}

int64_t ModelConfig::n_local_layers() const { return std::count(is_local.begin(), is_local.end(), true); }

bool ModelConfig::has_layer_kind(Mixer m) const {
  if (layer_kinds.empty()) return m == Mixer::attention && n_layer > 0;
  return std::any_of(layer_kinds.begin(), layer_kinds.end(), [m](const LayerKind& k) { return k.mixer == m; });
}

bool ModelConfig::has_layer_kind(Ffn f) const {
  if (layer_kinds.empty()) return f == Ffn::dense && n_layer > 0;
  return std::any_of(layer_kinds.begin(), layer_kinds.end(), [f](const LayerKind& k) { return k.ffn == f; });
}

void ModelConfig::validate() const {
  const std::string who = "model config '" + name + "'";
  auto positive = [&](int64_t v, const char* field, int64_t max) {
    SQZ_CHECK(v > 0 && v <= max, who, ": ", field, " must be in [1, ", max, "] (got ", v, ")");
  };
  // Caps keep every derived size far from int64 overflow (and reject garbage metadata).
  positive(n_layer, "n_layer", 1 << 12);
  positive(n_embd, "n_embd", 1 << 20);
  positive(n_head, "n_head", 1 << 12);
  positive(n_head_kv, "n_head_kv", 1 << 12);
  positive(head_dim, "head_dim", 1 << 12);
  positive(n_ff, "n_ff", 1 << 22);
  positive(n_vocab, "n_vocab", 1 << 24);
  positive(n_ctx, "n_ctx", int64_t{1} << 24);
  SQZ_CHECK(n_head % n_head_kv == 0, who, ": n_head_kv (", n_head_kv, ") must divide n_head (", n_head, ")");
  SQZ_CHECK(head_dim % 2 == 0, who, ": head_dim (", head_dim, ") must be even for RoPE");
  SQZ_CHECK(std::isfinite(rms_eps) && rms_eps > 0, who, ": rms_eps must be positive (got ", rms_eps, ")");
  SQZ_CHECK(std::isfinite(rope_base_global) && rope_base_global > 0, who, ": rope_base_global must be positive (got ",
            rope_base_global, ")");
  SQZ_CHECK(std::isfinite(rope_base_local) && rope_base_local > 0, who, ": rope_base_local must be positive (got ",
            rope_base_local, ")");
  SQZ_CHECK(std::isfinite(rope_freq_scale) && rope_freq_scale > 0 && rope_freq_scale <= 1, who,
            ": rope_freq_scale must be in (0, 1] (got ", rope_freq_scale, ")");
  SQZ_CHECK(!ffn_norm_post_attention_name || norm_placement == NormPlacement::pre, who,
            ": a pre-FFN norm named post_attention_norm needs the pre-norm placement");
  if (yarn_factor != 0) {
    SQZ_CHECK(std::isfinite(yarn_factor) && yarn_factor >= 1, who, ": the YaRN factor must be at least 1 (got ",
              yarn_factor, ")");
    SQZ_CHECK(yarn_original_context > 0 && yarn_original_context <= (int64_t{1} << 24), who,
              ": YaRN needs the original context length (got ", yarn_original_context, ")");
    SQZ_CHECK(std::isfinite(yarn_beta_fast) && std::isfinite(yarn_beta_slow) && yarn_beta_fast > 0 &&
                  yarn_beta_slow > 0,
              who, ": YaRN's beta_fast and beta_slow must be positive");
    SQZ_CHECK(std::isfinite(yarn_attn_factor) && yarn_attn_factor >= 0, who,
              ": the YaRN attention factor must be >= 0 (got ", yarn_attn_factor, ")");
    SQZ_CHECK(!rope_freq_factors && rope_freq_scale == 1.0f, who,
              ": YaRN cannot be combined with linear RoPE scaling or rope_freqs divisors");
  }
  SQZ_CHECK(sliding_window >= 0 && sliding_window <= (int64_t{1} << 24), who,
            ": sliding_window must be in [0, 2^24] (got ", sliding_window, ")");
  SQZ_CHECK(static_cast<int64_t>(is_local.size()) == n_layer, who, ": is_local has ", is_local.size(),
            " entries for n_layer ", n_layer);
  const int64_t local = n_local_layers();
  SQZ_CHECK(local == 0 || sliding_window > 0, who, ": is_local marks ", local, " local layers but sliding_window is 0");
  SQZ_CHECK(arch_info(arch).window != WindowKey::none || local == 0, who, ": arch ", arch_name(arch),
            " has no local layers (is_local marks ", local, ")");
  SQZ_CHECK(std::isfinite(embd_scale) && embd_scale > 0, who, ": embd_scale must be positive (got ", embd_scale, ")");
  SQZ_CHECK(std::isfinite(attn_scale) && attn_scale >= 0, who, ": attn_scale must be >= 0 (got ", attn_scale, ")");
  SQZ_CHECK(std::isfinite(final_logit_softcap) && final_logit_softcap >= 0, who,
            ": final_logit_softcap must be >= 0 (got ", final_logit_softcap, ")");
  SQZ_CHECK(std::isfinite(post_norm_eps) && post_norm_eps >= 0, who, ": post_norm_eps must be >= 0 (got ",
            post_norm_eps, ")");
  SQZ_CHECK(std::isfinite(logit_scale) && logit_scale > 0, who, ": logit_scale must be positive (got ", logit_scale,
            ")");
  SQZ_CHECK(layer_kinds.empty() || static_cast<int64_t>(layer_kinds.size()) == n_layer, who, ": layer_kinds has ",
            layer_kinds.size(), " entries for n_layer ", n_layer);
  if (has_layer_kind(Ffn::moe)) {
    positive(n_expert, "n_expert", 1 << 12);
    positive(n_expert_used, "n_expert_used", n_expert);
    positive(n_ff_exp, "n_ff_exp", 1 << 22);
  }
  SQZ_CHECK(n_ff_shexp >= 0 && n_ff_shexp <= (1 << 22), who, ": n_ff_shexp must be in [0, 2^22] (got ", n_ff_shexp,
            ")");
  if (has_layer_kind(Mixer::linear_attention)) {
    positive(ssm_conv_kernel, "ssm_conv_kernel", 64);
    positive(ssm_state_size, "ssm_state_size", 1 << 12);
    positive(ssm_group_count, "ssm_group_count", 1 << 12);
    positive(ssm_time_step_rank, "ssm_time_step_rank", 1 << 12);
    SQZ_CHECK(ssm_time_step_rank % ssm_group_count == 0, who, ": ssm_group_count (", ssm_group_count,
              ") must divide ssm_time_step_rank (", ssm_time_step_rank, ")");
  }
}

std::vector<bool> period_pattern(int64_t n_layer, int64_t period) {
  SQZ_CHECK(n_layer >= 0 && period >= 0, "layer pattern: n_layer ", n_layer, " and period ", period,
            " must not be negative");
  std::vector<bool> out(static_cast<size_t>(n_layer), false);
  if (period <= 1) return out;
  for (int64_t i = 0; i < n_layer; ++i) out[i] = i % period != period - 1;
  return out;
}

std::vector<bool> all_global_pattern(int64_t n_layer) { return period_pattern(n_layer, 0); }

std::vector<bool> period_pattern_from_last(int64_t n_layer, int64_t period) {
  SQZ_CHECK(n_layer >= 0 && period >= 0, "layer pattern: n_layer ", n_layer, " and period ", period,
            " must not be negative");
  std::vector<bool> out(static_cast<size_t>(n_layer), false);
  if (period <= 1) return out;
  for (int64_t i = 0; i < n_layer; ++i) out[i] = (n_layer - 1 - i) % period != 0;
  return out;
}

std::string describe_pattern(const std::vector<bool>& is_local) {
  const size_t n = is_local.size();
  std::string letters;
  for (bool l : is_local) letters += l ? 'L' : 'G';
  // Shortest period that tiles the pattern exactly.
  for (size_t p = 1; p <= n / 2; ++p) {
    if (n % p != 0) continue;
    bool ok = true;
    for (size_t i = p; i < n && ok; ++i) ok = letters[i] == letters[i - p];
    if (!ok) continue;
    std::string unit;
    for (size_t i = 0; i < p; ++i) unit += (i ? " " : "") + std::string(1, letters[i]);
    return "[" + unit + "] x " + std::to_string(n / p);
  }
  return letters;
}

namespace {

ModelConfig glimmer(std::string name, int64_t n_layer, int64_t n_embd, int64_t n_head, int64_t n_head_kv,
                    int64_t head_dim, int64_t n_ff, int64_t n_vocab, int64_t window, int64_t n_ctx) {
  ModelConfig c;
  c.name = std::move(name);
  c.arch = Arch::glimmer;
  c.n_layer = n_layer, c.n_embd = n_embd, c.n_head = n_head, c.n_head_kv = n_head_kv;
  c.head_dim = head_dim, c.n_ff = n_ff, c.n_vocab = n_vocab;
  c.rms_eps = 1e-6f;
  c.rope_base_global = 1000000.0f;  // long-context global layers, as Gemma 3
  c.rope_base_local = 10000.0f;
  c.rope_type = RopeType::normal;
  c.sliding_window = window;
  c.is_local = period_pattern(n_layer, 4);  // [local, local, local, global]
  c.n_ctx = n_ctx;
  return c;
}

}  // namespace

std::vector<std::string> builtin_config_names() {
  return {"glimmer-30b",  "glimmer-1b",  "glimmer-tiny", "llama-1b",         "kjv-teacher",      "glimmer-kjv",
          "smollm2-135m", "gemma3-270m", "gemma3-tiny",  "muse-glimmer-30b", "muse-glimmer-tiny",
          "llama3.2-1b",  "qwen3-4b",    "qwen3-30b-a3b", "qwen3moe-tiny",    "gpt-oss-20b",      "gpt-oss-tiny"};
}

ModelConfig builtin_config(std::string_view name) {
  if (name == "glimmer-30b") {
    // Glimmer-30B as published: 52 layers, 6656 hidden, 32/2 heads of 128, window 2048, 128K context;
    // assumed there: SwiGLU 24576, vocabulary 131072, untied output (30.28B parameters).
    return glimmer("glimmer-30b", 52, 6656, 32, 2, 128, 24576, 131072, 2048, 131072);
  }
  if (name == "glimmer-1b") return glimmer("glimmer-1b", 16, 2048, 16, 2, 128, 7168, 32768, 1024, 32768);
  if (name == "glimmer-tiny") {
    ModelConfig c = glimmer("glimmer-tiny", 8, 64, 4, 2, 16, 160, 512, 16, 512);
    c.tied_output = true;
    return c;
  }
  // The shipped models (models/README.md), trained on the KJV corpus with a 4096-token BPE
  // vocabulary: an all-global teacher sized to train in under an hour on 2 cores, and a
  // Glimmer student of about a third of its parameters (two [L L L G] periods, 8/2 heads,
  // a 64-token window against 256 tokens of training context). Every row length is a
  // multiple of 256, so each K-quant applies to every matrix.
  if (name == "kjv-teacher") {
    ModelConfig c = glimmer("kjv-teacher", 6, 512, 8, 2, 64, 1024, 4096, 0, 256);
    c.arch = Arch::llama;
    c.rope_base_global = c.rope_base_local = 10000.0f;
    c.is_local = all_global_pattern(c.n_layer);
    c.tied_output = true;
    return c;
  }
  if (name == "glimmer-kjv") {
    ModelConfig c = glimmer("glimmer-kjv", 8, 256, 8, 2, 32, 512, 4096, 64, 256);
    c.rope_base_global = 10000.0f;  // trained at 256 tokens: no long-context base
    c.tied_output = true;
    return c;
  }
  if (name == "llama-1b") {
    ModelConfig c;
    c.name = "llama-1b";
    c.arch = Arch::llama;
    c.n_layer = 22, c.n_embd = 2048, c.n_head = 32, c.n_head_kv = 4, c.head_dim = 64;
    c.n_ff = 5632, c.n_vocab = 32000, c.n_ctx = 2048;
    c.rms_eps = 1e-5f;
    c.rope_base_global = c.rope_base_local = 10000.0f;
    c.is_local = all_global_pattern(c.n_layer);
    return c;
  }
  if (name == "smollm2-135m") {
    // SmolLM2-135M(-Instruct) as its GGUF describes it: llama, tied embeddings.
    ModelConfig c;
    c.name = "smollm2-135m";
    c.n_layer = 30, c.n_embd = 576, c.n_head = 9, c.n_head_kv = 3, c.head_dim = 64;
    c.n_ff = 1536, c.n_vocab = 49152, c.n_ctx = 8192;
    set_arch_defaults(c, Arch::llama);
    c.rms_eps = 1e-5f;
    c.rope_base_global = c.rope_base_local = 100000.0f;
    c.is_local = all_global_pattern(c.n_layer);
    c.tied_output = true;
    return c;
  }
  if (name == "llama3.2-1b") {
    // Llama 3.2 1B as its GGUF describes it: 16 layers, 2048 wide, 32/8 heads of 64, FFN
    // 8192, vocabulary 128256, RoPE base 500000 with Llama 3's divisors (rope_freqs), tied.
    ModelConfig c;
    c.name = "llama3.2-1b";
    c.n_layer = 16, c.n_embd = 2048, c.n_head = 32, c.n_head_kv = 8, c.head_dim = 64;
    c.n_ff = 8192, c.n_vocab = 128256, c.n_ctx = 131072;
    set_arch_defaults(c, Arch::llama);
    c.rms_eps = 1e-5f;
    c.rope_base_global = c.rope_base_local = 500000.0f;
    c.rope_freq_factors = true;
    c.is_local = all_global_pattern(c.n_layer);
    c.tied_output = true;
    return c;
  }
  if (name == "qwen3-4b") {
    // Qwen3-4B (model-families.md §1): 36 layers, 2560 wide, 32/8 heads of 128, FFN 9728,
    // vocabulary 151936, RoPE base 1e6, QK-norm, tied.
    ModelConfig c;
    c.name = "qwen3-4b";
    c.n_layer = 36, c.n_embd = 2560, c.n_head = 32, c.n_head_kv = 8, c.head_dim = 128;
    c.n_ff = 9728, c.n_vocab = 151936, c.n_ctx = 40960;
    set_arch_defaults(c, Arch::qwen3);
    c.rms_eps = 1e-6f;
    c.rope_base_global = c.rope_base_local = 1000000.0f;
    c.is_local = all_global_pattern(c.n_layer);
    c.tied_output = true;
    return c;
  }
  if (name == "qwen3-30b-a3b" || name == "qwen3moe-tiny") {
    // qwen3-30b-a3b: Qwen3-30B-A3B (model-families.md §1): 48 layers, 2048 wide, 32/4 heads
    // of 128, every layer 128 experts of FFN 768 with 8 routed per token, gates
    // renormalised, vocabulary 151936, RoPE base 1e6, untied. qwen3moe-tiny: the same options
    // at test size, with 6 experts (not a power of two), 3 per token and a dense layer (2).
    const bool tiny = name == "qwen3moe-tiny";
    ModelConfig c;
    c.name = std::string(name);
    if (tiny) {
      c.n_layer = 4, c.n_embd = 64, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 16;
      c.n_ff = 96, c.n_vocab = 512, c.n_ctx = 512;
      c.n_expert = 6, c.n_expert_used = 3, c.n_ff_exp = 32;
    } else {
      c.n_layer = 48, c.n_embd = 2048, c.n_head = 32, c.n_head_kv = 4, c.head_dim = 128;
      c.n_ff = 6144, c.n_vocab = 151936, c.n_ctx = 40960;
      c.n_expert = 128, c.n_expert_used = 8, c.n_ff_exp = 768;
    }
    set_arch_defaults(c, Arch::qwen3moe);
    c.rms_eps = 1e-6f;
    c.rope_base_global = c.rope_base_local = 1000000.0f;
    c.is_local = all_global_pattern(c.n_layer);
    c.layer_kinds.assign(static_cast<size_t>(c.n_layer), LayerKind{.ffn = Ffn::moe});
    if (tiny) c.layer_kinds[2].ffn = Ffn::dense;
    return c;
  }
  if (name == "gpt-oss-20b" || name == "gpt-oss-tiny") {
    // gpt-oss-20b (model-families.md §1, §5): 24 layers [L G], 2880 wide, 64/8 heads of 64,
    // 32 experts of FFN 2880 with 4 routed per token, window 128, YaRN factor 32 over 4096
    // positions (untruncated), RoPE base 150000, vocabulary 201088, untied. gpt-oss-tiny: the
    // same options at test size, a window of 8 so that prompts wrap the local rings.
    const bool tiny = name == "gpt-oss-tiny";
    ModelConfig c;
    c.name = std::string(name);
    if (tiny) {
      c.n_layer = 4, c.n_embd = 64, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 16;
      c.n_ff = 32, c.n_vocab = 512, c.n_ctx = 512, c.sliding_window = 8;
      c.n_expert = 5, c.n_expert_used = 2, c.n_ff_exp = 32;
    } else {
      c.n_layer = 24, c.n_embd = 2880, c.n_head = 64, c.n_head_kv = 8, c.head_dim = 64;
      c.n_ff = 2880, c.n_vocab = 201088, c.n_ctx = 131072, c.sliding_window = 128;
      c.n_expert = 32, c.n_expert_used = 4, c.n_ff_exp = 2880;
    }
    set_arch_defaults(c, Arch::gpt_oss);
    c.rms_eps = 1e-5f;
    c.rope_base_global = c.rope_base_local = 150000.0f;
    c.yarn_factor = 32.0f, c.yarn_original_context = 4096;
    c.layer_kinds.assign(static_cast<size_t>(c.n_layer), LayerKind{.ffn = Ffn::moe});
    return c;
  }
  if (name == "gemma3-270m" || name == "gemma3-tiny") {
    // gemma3-270m: Gemma 3 270M as its GGUF describes it (18 layers [L×5 G]×3, window 512,
    // 4 / 1 heads of 256, vocabulary 262144). gemma3-tiny: the same options at test size,
    // two periods so a prompt of a few dozen tokens wraps the local rings.
    const bool tiny = name == "gemma3-tiny";
    ModelConfig c;
    c.name = std::string(name);
    if (tiny) {
      c.n_layer = 12, c.n_embd = 64, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 32;
      c.n_ff = 160, c.n_vocab = 512, c.n_ctx = 512, c.sliding_window = 16;
    } else {
      c.n_layer = 18, c.n_embd = 640, c.n_head = 4, c.n_head_kv = 1, c.head_dim = 256;
      c.n_ff = 2048, c.n_vocab = 262144, c.n_ctx = 32768, c.sliding_window = 512;
    }
    set_arch_defaults(c, Arch::gemma3);
    c.rms_eps = 1e-6f;
    return c;
  }
  if (name == "muse-glimmer-30b" || name == "muse-glimmer-tiny") {
    // muse-glimmer-30b: the released text config (transformers' MuseGlimmerTextConfig
    // defaults). muse-glimmer-tiny: the same options at test size, a window of
    // 8 so a prompt of a few dozen tokens wraps the local rings, globals at layers 1 and 5.
    const bool tiny = name == "muse-glimmer-tiny";
    ModelConfig c;
    c.name = std::string(name);
    if (tiny) {
      c.n_layer = 6, c.n_embd = 64, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 16;
      c.n_ff = 128, c.n_vocab = 512, c.n_ctx = 512, c.sliding_window = 8;
    } else {
      c.n_layer = 52, c.n_embd = 6656, c.n_head = 32, c.n_head_kv = 2, c.head_dim = 128;
      c.n_ff = 19968, c.n_vocab = 202048, c.n_ctx = 131072, c.sliding_window = 2048;
    }
    set_arch_defaults(c, Arch::muse_glimmer);
    c.rms_eps = 1e-5f;
    c.rope_base_global = c.rope_base_local = tiny ? 10000.0f : 500000.0f;
    return c;
  }
  std::string known;
  for (const auto& n : builtin_config_names()) known += (known.empty() ? "" : ", ") + n;
  fail("unknown model config '", name, "' (built-in: ", known, ")");
}

}  // namespace squeeze::model
