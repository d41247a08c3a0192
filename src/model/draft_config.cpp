// model/draft_config.cpp
#include "model/draft_config.h"

#include <cmath>

#include "core/error.h"
#include "model/dflash_taps.h"
#include "model/gguf_config.h"

namespace squeeze::model {

using gguf::Value;

namespace {

std::string key(const char* suffix) { return std::string(kDraftArch) + "." + suffix; }

}  // namespace

void DraftConfig::validate() const {
  const std::string who = name.empty() ? std::string("drafter") : name;
  SQZ_CHECK(n_layer >= 1 && n_layer <= 256, who, ": block_count must be 1..256 (got ", n_layer, ")");
  SQZ_CHECK(n_embd > 0 && n_head > 0 && n_head_kv > 0 && head_dim > 0 && n_ff > 0, who,
            ": width, heads, head_dim and FFN width must be positive");
  SQZ_CHECK(n_head % n_head_kv == 0, who, ": head_count_kv (", n_head_kv, ") does not divide head_count (", n_head, ")");
  SQZ_CHECK(head_dim % 2 == 0, who, ": head_dim must be even for RoPE (got ", head_dim, ")");
  SQZ_CHECK(rms_eps > 0 && std::isfinite(rms_eps), who, ": RMS eps must be positive");
  SQZ_CHECK(rope_base > 0 && std::isfinite(rope_base), who, ": RoPE base must be positive");
  SQZ_CHECK(sliding_window >= 0, who, ": sliding window must not be negative");
  SQZ_CHECK(static_cast<int64_t>(is_sliding.size()) == n_layer, who, ": the sliding pattern has ", is_sliding.size(),
            " entries for ", n_layer, " layers");
  SQZ_CHECK(block_size >= 2 && block_size <= 64, who, ": block_size must be 2..64 (got ", block_size, ")");
  SQZ_CHECK(mask_token_id >= 0, who, ": no mask token id");
  SQZ_CHECK(!target_layers.empty() && target_layers.size() <= 64, who, ": 1..64 target layers are needed (got ",
            target_layers.size(), ")");
  for (int64_t id : target_layers) SQZ_CHECK(id >= 0, who, ": target layer ", id, " is negative");
  SQZ_CHECK(n_ctx > 0, who, ": context length must be positive");
}

void DraftConfig::check_target(const ModelConfig& t) const {
  const std::string who = name.empty() ? std::string("drafter") : name;
  SQZ_CHECK(n_embd == t.n_embd, who, ": width ", n_embd, " differs from the target's ", t.n_embd,
            " (a drafter is trained for one target)");
  for (int64_t id : target_layers)
    SQZ_CHECK(id < t.n_layer, who, ": taps target layer ", id, ", but the target has ", t.n_layer, " layers");
  SQZ_CHECK(mask_token_id < t.n_vocab, who, ": mask token id ", mask_token_id, " is outside the target's vocabulary [0, ",
            t.n_vocab, ")");
}

std::vector<TensorShape> DraftConfig::weight_tensors() const {
  const int64_t E = n_embd;
  std::vector<TensorShape> t;
  t.push_back({"fc.weight", n_taps() * E, E, -1});
  t.push_back({"enc.output_norm.weight", E, 1, -1});
  for (int64_t i = 0; i < n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    t.push_back({b + "attn_norm.weight", E, 1, i});
    t.push_back({b + "attn_q.weight", E, q_dim(), i});
    t.push_back({b + "attn_k.weight", E, kv_dim(), i});
    t.push_back({b + "attn_v.weight", E, kv_dim(), i});
    t.push_back({b + "attn_q_norm.weight", head_dim, 1, i});
    t.push_back({b + "attn_k_norm.weight", head_dim, 1, i});
    t.push_back({b + "attn_output.weight", q_dim(), E, i});
    t.push_back({b + "ffn_norm.weight", E, 1, i});
    t.push_back({b + "ffn_gate.weight", E, n_ff, i});
    t.push_back({b + "ffn_up.weight", E, n_ff, i});
    t.push_back({b + "ffn_down.weight", n_ff, E, i});
  }
  t.push_back({"output_norm.weight", E, 1, -1});
  return t;
}

int64_t DraftConfig::n_params() const {
  int64_t n = 0;
  for (const TensorShape& s : weight_tensors()) n += s.elements();
  return n;
}

DraftConfig default_draft_config(const ModelConfig& target, int64_t n_layers, int64_t block_size, int64_t mask_token_id,
                                 int64_t window) {
  DraftConfig d;
  d.name = "dflash drafter for " + target.name;
  d.n_layer = n_layers;
  d.n_embd = target.n_embd;
  d.n_head = target.n_head;
  d.n_head_kv = target.n_head_kv;
  d.head_dim = target.head_dim;
  d.n_ff = target.n_ff;
  d.rms_eps = target.rms_eps;
  d.rope_base = target.rope_base_global;
  d.sliding_window = window;
  d.is_sliding.assign(static_cast<size_t>(n_layers), window > 0);
  d.block_size = block_size;
  d.mask_token_id = mask_token_id;
  d.target_layers = dflash_target_layer_ids(target.n_layer, n_layers);
  d.n_ctx = target.n_ctx;
  d.validate();
  d.check_target(target);
  return d;
}

DraftConfig draft_config_from_gguf(const gguf::File& file) {
  const gguf::Metadata& m = file.metadata();
  const std::string arch = m.get_string("general.architecture");
  if (arch != kDraftArch)
    fail(file.path(), ": architecture '", arch, "' is not a DFlash drafter (expected '", kDraftArch, "')");
  const auto positive = [&](const std::string& k, int64_t v) {
    if (v <= 0) m.fail_key(k, "must be positive, got " + std::to_string(v));
    return v;
  };
  DraftConfig c;
  c.name = file.path();
  c.n_layer = positive(key("block_count"), m.get_i64(key("block_count")));
  if (c.n_layer > 256) m.fail_key(key("block_count"), "is implausibly large (" + std::to_string(c.n_layer) + ")");
  c.n_embd = positive(key("embedding_length"), m.get_i64(key("embedding_length")));
  c.n_ff = positive(key("feed_forward_length"), m.get_i64(key("feed_forward_length")));
  c.n_head = positive(key("attention.head_count"), m.get_i64(key("attention.head_count")));
  c.n_head_kv = positive(key("attention.head_count_kv"), m.get_i64_or(key("attention.head_count_kv"), c.n_head));
  c.head_dim = positive(key("attention.key_length"), m.get_i64_or(key("attention.key_length"), c.n_embd / c.n_head));
  c.rms_eps = m.get_f32_or(key("attention.layer_norm_rms_epsilon"), c.rms_eps);
  c.rope_base = m.get_f32_or(key("rope.freq_base"), c.rope_base);
  c.n_ctx = m.get_i64_or(key("context_length"), c.n_ctx);
  c.sliding_window = m.get_i64_or(key("attention.sliding_window"), 0);
  if (c.sliding_window < 0) m.fail_key(key("attention.sliding_window"), "must not be negative");
  // The reference's default layer_types: every layer sliding.
  c.is_sliding.assign(static_cast<size_t>(c.n_layer), true);
  if (m.has(key("attention.sliding_window_pattern"))) {
    const auto flags = m.get_bool_array(key("attention.sliding_window_pattern"));
    if (static_cast<int64_t>(flags.size()) != c.n_layer)
      m.fail_key(key("attention.sliding_window_pattern"),
                 "has " + std::to_string(flags.size()) + " entries for " + std::to_string(c.n_layer) + " layers");
    c.is_sliding.assign(flags.begin(), flags.end());
  }
  c.block_size = m.get_i64_or(key("block_size"), 16);
  if (!m.has(key("mask_token_id"))) m.fail_key(key("mask_token_id"), "is missing (the drafter's masked positions need it)");
  c.mask_token_id = m.get_i64(key("mask_token_id"));
  if (!m.has(key("target_layers"))) m.fail_key(key("target_layers"), "is missing (which target layers to tap)");
  for (int64_t stored : m.get_i64_array(key("target_layers"))) {
    if (stored < 1) m.fail_key(key("target_layers"), "holds " + std::to_string(stored) + " (layer index + 1 expected, ≥ 1)");
    c.target_layers.push_back(stored - 1);
  }
  try {
    c.validate();
  } catch (const Error& e) {
    throw e.with_context(file.path());
  }
  check_tensor_shapes(file, c.weight_tensors(), "a dflash drafter");
  return c;
}

void write_draft_config(gguf::Metadata& m, const DraftConfig& c) {
  c.validate();
  const auto u32 = [](int64_t v) { return Value::u32(static_cast<uint32_t>(v)); };
  m.set("general.architecture", Value::string(kDraftArch));
  m.set(key("block_count"), u32(c.n_layer));
  m.set(key("context_length"), u32(c.n_ctx));
  m.set(key("embedding_length"), u32(c.n_embd));
  m.set(key("feed_forward_length"), u32(c.n_ff));
  m.set(key("attention.head_count"), u32(c.n_head));
  m.set(key("attention.head_count_kv"), u32(c.n_head_kv));
  m.set(key("attention.key_length"), u32(c.head_dim));
  m.set(key("attention.value_length"), u32(c.head_dim));
  m.set(key("attention.layer_norm_rms_epsilon"), Value::f32(c.rms_eps));
  m.set(key("rope.freq_base"), Value::f32(c.rope_base));
  if (c.sliding_window > 0) {
    m.set(key("attention.sliding_window"), u32(c.sliding_window));
    std::vector<Value> flags;
    for (bool s : c.is_sliding) flags.push_back(Value::boolean(s));
    m.set(key("attention.sliding_window_pattern"), Value::array(gguf::ValueType::Bool, std::move(flags)));
  }
  m.set(key("block_size"), u32(c.block_size));
  m.set(key("mask_token_id"), u32(c.mask_token_id));
  std::vector<Value> layers;
  for (int64_t id : c.target_layers) layers.push_back(u32(id + 1));
  m.set(key("target_layers"), Value::array(gguf::ValueType::U32, std::move(layers)));
}

}  // namespace squeeze::model
