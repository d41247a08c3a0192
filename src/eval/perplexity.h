// eval/perplexity.h — perplexity by llama-perplexity's method, so squeeze's figures and
// llama.cpp's can be compared directly:
//   - the text is tokenized once, with BOS when the vocabulary adds one;
//   - it is cut into n_chunk = n_tokens / n_ctx chunks of n_ctx tokens, each run from an
//     empty cache, the first token of each chunk replaced by BOS when the vocabulary adds
//     one;
//   - in each chunk only the second half is scored: the logits at positions
//     n_ctx/2 … n_ctx−2 predict the tokens after them (n_ctx − 1 − n_ctx/2 per chunk);
//   - PPL = exp(mean NLL), with the standard error of the mean NLL carried through.
// Against a base log-probability file (eval/logits_file.h) it adds llama-perplexity's
// KL-divergence statistics: KL(base ‖ model), same-top-token rate, Δp.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "eval/logits_file.h"
#include "model/session.h"

namespace squeeze::eval {

struct ChunkPlan {
  int32_t n_ctx = 0;
  int32_t n_chunk = 0;
  int32_t bos_id = -1;  // ≥ 0: replaces the first token of every chunk
};

// Runs every chunk of `tokens` (at least plan.n_chunk · plan.n_ctx of them) through
// `session` and calls on_chunk(chunk, logits, targets) with the logits of the scored
// positions (scored_per_chunk rows × n_vocab) and the token each row predicts.
using ChunkFn = std::function<void(int32_t chunk, std::span<const float> logits, std::span<const int32_t> targets)>;
void run_chunks(model::Session& session, std::span<const int32_t> tokens, const ChunkPlan& plan, const ChunkFn& on_chunk);

// The negative log-likelihood of `token` under softmax(logits), in double.
double token_nll(std::span<const float> logits, int32_t token);

struct MeanAndError {
  double mean = 0, error = 0;
};

class NllStats {
 public:
  void add(double nll) { sum_ += nll, sum2_ += nll * nll, ++n_; }
  int64_t count() const { return n_; }
  MeanAndError mean_nll() const;
  double ppl() const;
  double ppl_error() const;  // ppl × standard error of the mean NLL

 private:
  double sum_ = 0, sum2_ = 0;
  int64_t n_ = 0;
};

// One scored position against a base row.
struct KlPosition {
  double nll = 0, nll_base = 0;
  double kld = 0;       // KL(base ‖ model), over the tokens whose base log-prob exceeds −16
  double p_diff = 0;    // p(token) − p_base(token)
  bool same_top = false;
};
KlPosition compare_to_base(std::span<const float> logits, const LogProbRow& base, int32_t token);

class KlStats {
 public:
  void add(const KlPosition& p);
  int64_t count() const { return static_cast<int64_t>(kld_.size()); }
  double ppl() const;
  double ppl_base() const;
  MeanAndError mean_kld() const;
  double kld_quantile(double fraction) const;  // linear interpolation, as llama-perplexity
  double rms_p_diff() const;
  MeanAndError same_top() const;  // fraction of positions with the same argmax

 private:
  NllStats nll_, nll_base_;
  std::vector<double> kld_;
  double sum_kld_ = 0, sum_kld2_ = 0, sum_p_diff2_ = 0;
  int64_t same_top_ = 0;
};

}  // namespace squeeze::eval
