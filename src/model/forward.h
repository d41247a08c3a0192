// model/forward.h — one forward step over chunks of one or more sequences, each with its
// own KV cache: the rows of every chunk go through the weight products together (each
// weight matrix is read once per step, however many sequences ride in it), while KV
// append, RoPE positions and attention stay per sequence. Session (model/session.h)
// runs one sequence through it; the server's scheduler runs every active sequence's next
// token plus a prompt chunk as one step.
#pragma once

#include <array>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace squeeze::model {

// Called with every named intermediate of a forward pass ("blk.3.attn_q", "logits", ...):
// rows = tokens of the step (all chunks, in order), cols = features. For debugging and
// reference comparison.
using DumpFn = std::function<void(const std::string& name, const float* data, int64_t rows, int64_t cols)>;

struct SequenceChunk {
  KvCache* cache = nullptr;       // the sequence's cache; the chunk goes at cache->size()
  const int32_t* tokens = nullptr;
  int64_t n = 0;                  // 1 ≤ n ≤ cache->max_chunk()
  bool all_logits = false;        // logits of every token of the chunk, else of its last
  // Per token, null or n_embd floats that enter the first layer instead of the token's
  // embedding (an image token's features from the vision encoder), taken as they are:
  // no embedding scale or norm. Null: every row is its token's embedding.
  const float* const* embeddings = nullptr;
};

// Wall time of forward steps by kind of work (squeeze bench --profile): two clock reads
// around each op of each layer, only when a profile is attached.
enum class StepOp {
  embed, norm, qkv, rope, attention, out_proj, ffn_up, ffn_act, ffn_down, moe_route, residual, head, count
};
inline constexpr size_t kStepOps = static_cast<size_t>(StepOp::count);
const char* step_op_name(StepOp op);

struct StepProfile {
  std::array<double, kStepOps> seconds{};
  int64_t steps = 0;
  void clear() { *this = {}; }
};

struct ForwardOptions {
  // Weight products through the quantized dot tile for every batch size
  // (quant::GemmParams::batch_invariant): a sequence's logits are then bit-identical
  // whichever other sequences share the step. Attention is per sequence, so a sequence
  // fed the same chunks gets the same bits alone or batched.
  bool batch_invariant = false;
  const DumpFn* dump = nullptr;
  StepProfile* profile = nullptr;  // accumulates this step's op times when set
  // Hidden states after each listed layer (0-based; a DFlash drafter's context), written
  // for every row of the step: taps[row · n · E + t · E ...] is layer tap_layers[t]'s
  // output for that row (n = tap_layers->size()). Both or neither.
  const std::vector<int64_t>* tap_layers = nullptr;
  float* taps = nullptr;
  // The final norm's output (what the head reads) for every row of the step, [rows, n_embd]:
  // embeddings. With it, forward_step's logits_out may be null, and the head is skipped.
  float* hidden_out = nullptr;
};

class StepRunner;  // forward.cpp: the named blocks of one forward step

// Activations of one step, for at most max_rows tokens over all chunks.
class ForwardScratch {
 public:
  ForwardScratch(const ModelConfig& c, int64_t max_rows);
  int64_t max_rows() const { return max_rows_; }

 private:
  friend class StepRunner;
  int64_t max_rows_;
  std::vector<float> x, h, q, k, v, attn, attn_gate, proj, gate, up;
  // Expert layers: router logits [rows, n_expert], the selection [rows, n_expert_used], and
  // one expert's gathered rows (x, gate, up, out) — an expert gets at most every row once.
  std::vector<float> moe_logits, moe_gates, moe_x, moe_gate, moe_up, moe_out;
  std::vector<int32_t> moe_experts, moe_order;
};

// Empty when forward_step runs every layer kind and option of `c`; otherwise the list of
// what it does not implement yet (the tensor table describes more than the forward pass
// runs), for a one-line refusal at load.
std::string forward_support_error(const ModelConfig& c);

// Logit rows a step writes: Σ over chunks of (all_logits ? n : 1).
int64_t logit_rows(std::span<const SequenceChunk> chunks);

// Runs the chunks and writes their logits to logits_out ([logit_rows(chunks), n_vocab],
// chunk by chunk in order; null with options.hidden_out: no logits). Each chunk's K/V is appended to its cache. Throws on a token
// outside the vocabulary, more rows than the scratch holds, or a chunk its cache cannot
// take (past the context limit, longer than max_chunk()).
void forward_step(const Model& model, ThreadPool& pool, ForwardScratch& scratch, std::span<const SequenceChunk> chunks,
                  float* logits_out, const ForwardOptions& options = {});

}  // namespace squeeze::model
