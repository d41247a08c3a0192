// quantize/imatrix_collect.cpp — importance matrix collection over calibration tokens.
#include "quantize/imatrix_collect.h"

#include <cmath>
#include <optional>

#include "core/error.h"
#include "core/progress.h"
#include "model/session.h"

namespace squeeze::quantize {

std::vector<std::string> consumers_of(const std::string& name, bool tied_output) {
  if (name == "result_norm") return {tied_output ? "token_embd.weight" : "output.weight"};
  const auto dot = name.rfind('.');
  if (!name.starts_with("blk.") || dot == std::string::npos) return {};
  const std::string block = name.substr(0, dot + 1), what = name.substr(dot + 1);
  if (what == "attn_norm") return {block + "attn_q.weight", block + "attn_k.weight", block + "attn_v.weight"};
  if (what == "attn_out") return {block + "attn_output.weight"};
  if (what == "ffn_norm") return {block + "ffn_gate.weight", block + "ffn_up.weight"};
  if (what == "ffn_act") return {block + "ffn_down.weight"};
  return {};
}

quant::ImportanceMatrix collect_imatrix(const model::Model& m, std::span<const int32_t> tokens, const CollectParams& p,
                                        CollectStats* stats) {
  const auto& cfg = m.config();
  SQZ_CHECK(p.chunk >= 2, "--chunk must be at least 2 tokens");
  SQZ_CHECK(p.chunk <= cfg.n_ctx, "--chunk ", p.chunk, " exceeds the model's context length ", cfg.n_ctx);
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  SQZ_CHECK(n_tokens >= 2, "the calibration text has ", n_tokens, " tokens; at least 2 are needed");
  // Whole chunks only (each one a full context), or the text as one chunk if shorter.
  const int64_t chunk = std::min(p.chunk, n_tokens);
  int64_t n_chunks = n_tokens / chunk;
  if (p.max_chunks > 0) n_chunks = std::min(n_chunks, p.max_chunks);

  quant::ImportanceMatrix im;
  im.chunk_size = chunk;
  model::Session session(m, {.n_ctx = chunk, .batch = p.batch, .pool = p.pool});
  session.set_dump([&](const std::string& name, const float* data, int64_t rows, int64_t cols) {
    for (const auto& w : consumers_of(name, cfg.tied_output)) im.add(w, data, rows, cols);
  });
  double nll = 0;
  int64_t scored = 0;
  std::optional<Progress> progress;
  if (p.progress) progress.emplace("imatrix", n_chunks);
  for (int64_t c = 0; c < n_chunks; ++c) {
    session.reset();
    const auto chunk_tokens = tokens.subspan(static_cast<size_t>(c * chunk), static_cast<size_t>(chunk));
    const auto logits = session.forward(chunk_tokens, /*all_logits=*/true);  // every row feeds the output head
    // Perplexity of the chunk's next-token predictions, as llama-imatrix reports it.
    for (int64_t i = 0; i + 1 < chunk; ++i) {
      const float* row = logits.data() + i * cfg.n_vocab;
      float mx = row[0];
      for (int64_t v = 1; v < cfg.n_vocab; ++v) mx = std::max(mx, row[v]);
      double z = 0;
      for (int64_t v = 0; v < cfg.n_vocab; ++v) z += std::exp(static_cast<double>(row[v] - mx));
      nll += std::log(z) + mx - row[chunk_tokens[static_cast<size_t>(i + 1)]];
      ++scored;
    }
    ++im.chunk_count;
    if (progress) {
      char status[48];
      std::snprintf(status, sizeof status, "ppl %.3f", std::exp(nll / static_cast<double>(std::max<int64_t>(1, scored))));
      progress->advance(1, status);
    }
  }
  if (progress) progress->finish();
  if (stats) {
    stats->chunks = n_chunks;
    stats->tokens = n_chunks * chunk;
    stats->perplexity = scored ? std::exp(nll / static_cast<double>(scored)) : 0;
  }
  return im;
}

}  // namespace squeeze::quantize
