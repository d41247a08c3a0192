// quantize/imatrix_collect.h — collects an importance matrix by running a model over
// calibration tokens: every matmul's input rows (the forward pass's named intermediates,
// model/session.h DumpFn) are squared and summed per column under the name of each
// weight that consumes them:
//   blk.N.attn_norm → blk.N.attn_q/attn_k/attn_v.weight   blk.N.attn_out → blk.N.attn_output.weight
//   blk.N.ffn_norm  → blk.N.ffn_gate/ffn_up.weight         blk.N.ffn_act  → blk.N.ffn_down.weight
//   result_norm     → output.weight (token_embd.weight when the output is tied)
// Unlike llama-imatrix's default, the output head is collected too: the dynamic planner
// weighs it like every other matrix.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/model.h"
#include "quant/imatrix.h"

namespace squeeze::quantize {

struct CollectParams {
  int64_t chunk = 512;      // tokens per chunk; each chunk starts a fresh context
  int64_t max_chunks = 0;   // 0: every full chunk of the text
  int64_t batch = 64;       // prefill micro-batch
  ThreadPool* pool = nullptr;
  bool progress = true;
};

struct CollectStats {
  int64_t chunks = 0;
  int64_t tokens = 0;
  double perplexity = 0;    // of each chunk's next-token predictions, over all chunks
};

// The weight tensors whose input is the named intermediate (empty for other names).
std::vector<std::string> consumers_of(const std::string& intermediate, bool tied_output);

quant::ImportanceMatrix collect_imatrix(const model::Model& m, std::span<const int32_t> tokens, const CollectParams& p,
                                        CollectStats* stats = nullptr);

}  // namespace squeeze::quantize
