// model/config.h — the architecture of a Glimmer- or llama-family model: shapes, RoPE,
// the local/global layer pattern; validation, parameter counts, tensor shapes, and the
// built-in named configs (glimmer-30b is the published Glimmer-30B shape).
//
// The GGUF loader fills a ModelConfig from metadata (`glimmer.*` / `llama.*` keys) and
// checks each tensor against weight_tensors(); the planner sizes memory from it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace squeeze::model {

// RoPE pairing: `normal` rotates adjacent pairs (x0,x1) (llama GGUFs), `neox` rotates
// (x_i, x_{i+d/2}) (GPT-NeoX, Gemma, Qwen).
enum class RopeType { normal, neox };
const char* rope_type_name(RopeType t);

struct ModelConfig {
  std::string name;              // for messages: "glimmer-30b", a file name, ...
  std::string arch = "glimmer";  // "glimmer" or "llama"
  int64_t n_layer = 0;
  int64_t n_embd = 0;            // hidden size
  int64_t n_head = 0;            // query heads
  int64_t n_head_kv = 0;         // key/value heads (GQA: divides n_head)
  int64_t head_dim = 0;          // need not equal n_embd / n_head
  int64_t n_ff = 0;              // SwiGLU intermediate size
  int64_t n_vocab = 0;
  float rms_eps = 1e-5f;
  float rope_base_global = 10000.0f;
  float rope_base_local = 10000.0f;  // local (sliding-window) layers
  RopeType rope_type = RopeType::normal;
  int64_t sliding_window = 0;    // tokens a local layer sees; 0 = no local layers
  std::vector<bool> is_local;    // per layer; size n_layer
  bool tied_output = false;      // output head shares token_embd
  int64_t n_ctx = 0;             // context length the model supports

  int64_t n_local_layers() const;
  int64_t n_global_layers() const { return n_layer - n_local_layers(); }
  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }

  // Throws squeeze::Error naming the config and the first bad field.
  void validate() const;
};

// Layer patterns. period_pattern(n, p): layer i is local unless it is the last of its
// period (i % p == p - 1), e.g. p = 4 gives [L L L G] repeated. p = 1 (or 0): all global.
std::vector<bool> period_pattern(int64_t n_layer, int64_t period);
std::vector<bool> all_global_pattern(int64_t n_layer);
// "LLLG LLLG ..." compressed as "[L L L G] x 13" when periodic; for messages.
std::string describe_pattern(const std::vector<bool>& is_local);

// One weight tensor as GGUF stores it: ne0 is the row length (input features).
struct TensorShape {
  std::string name;   // "token_embd.weight", "blk.3.attn_q.weight", ...
  int64_t ne0 = 0;    // row length
  int64_t ne1 = 1;    // rows (1 for vectors)
  int64_t layer = -1; // block index, -1 for non-block tensors
  int64_t elements() const { return ne0 * ne1; }
};
// Every tensor of the model in file order (no "output.weight" when tied).
std::vector<TensorShape> weight_tensors(const ModelConfig& c);

struct ParamCount {
  int64_t embedding = 0;         // token_embd
  int64_t output = 0;            // output head (0 when tied)
  int64_t attention_per_layer = 0;  // Wq, Wk, Wv, Wo
  int64_t ffn_per_layer = 0;     // gate, up, down
  int64_t norms = 0;             // all RMSNorm weights
  int64_t total = 0;
};
ParamCount count_params(const ModelConfig& c);

// Built-in configs: "glimmer-30b" (the published shape), "glimmer-1b", "glimmer-tiny" (tests:
// window 16 < typical prompts, GQA 2), "llama-1b" (TinyLlama-1.1B's shape, all global).
ModelConfig builtin_config(std::string_view name);  // error listing the names if unknown
std::vector<std::string> builtin_config_names();

}  // namespace squeeze::model
