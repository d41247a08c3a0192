// eval/perplexity.cpp — llama-perplexity's method (see the header).
#include "eval/perplexity.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace squeeze::eval {

void run_chunks(model::Session& session, std::span<const int32_t> tokens, const ChunkPlan& plan, const ChunkFn& on_chunk) {
  const int64_t n_ctx = plan.n_ctx;
  SQZ_CHECK(n_ctx >= 4, "perplexity: the context must be at least 4 tokens");
  SQZ_CHECK(int64_t(tokens.size()) >= n_ctx * plan.n_chunk, "perplexity: fewer tokens than chunks × context");
  SQZ_CHECK(n_ctx - 1 <= session.n_ctx(), "perplexity: a chunk of ", n_ctx, " tokens does not fit the session's context of ",
            session.n_ctx());
  const int64_t first = n_ctx / 2;
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
  for (int32_t c = 0; c < plan.n_chunk; ++c) {
    std::copy_n(tokens.begin() + c * n_ctx, n_ctx, chunk.begin());
    if (plan.bos_id >= 0) chunk[0] = plan.bos_id;
    session.reset();
    // The first half only fills the cache; the last token predicts nothing scored, so it
    // is never run.
    session.forward(std::span<const int32_t>(chunk.data(), first));
    const auto logits = session.forward(std::span<const int32_t>(chunk.data() + first, n_ctx - 1 - first),
                                        /*all_logits=*/true);
    on_chunk(c, logits, std::span<const int32_t>(chunk.data() + first + 1, n_ctx - 1 - first));
  }
}

double token_nll(std::span<const float> logits, int32_t token) {
  double mx = -INFINITY;
  for (float v : logits) mx = std::max(mx, double(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(double(v) - mx);
  return mx + std::log(sum) - logits[static_cast<size_t>(token)];
}

MeanAndError NllStats::mean_nll() const {
  if (n_ == 0) return {};
  const double mean = sum_ / n_;
  const double var = sum2_ / n_ - mean * mean;
  return {mean, var > 0 && n_ > 1 ? std::sqrt(var / double(n_ - 1)) : 0};
}

double NllStats::ppl() const { return std::exp(mean_nll().mean); }
double NllStats::ppl_error() const { return ppl() * mean_nll().error; }

KlPosition compare_to_base(std::span<const float> logits, const LogProbRow& base, int32_t token) {
  KlPosition r;
  size_t top = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[top]) top = i;
  const double mx = logits[top];
  double sum = 0;
  for (float v : logits) sum += std::exp(double(v) - mx);
  const double lse = mx + std::log(sum);  // log p_i = logits_i − lse
  r.nll = lse - logits[static_cast<size_t>(token)];
  r.nll_base = -double(base.log_prob(token));
  // KL(base ‖ model) over the tokens the base file resolves (log p_base > −16), as
  // llama-perplexity sums it; the base's argmax is its first maximal quantized value.
  double kld = 0;
  size_t top_base = 0;
  float best = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float lp_base = base.log_prob(static_cast<int32_t>(i));
    if (i == 0 || lp_base > best) best = lp_base, top_base = i;
    if (lp_base > -16.f) kld += std::exp(double(lp_base)) * (double(lp_base) - (double(logits[i]) - lse));
  }
  r.kld = kld;
  r.same_top = top == top_base;
  r.p_diff = std::exp(-r.nll) - std::exp(-r.nll_base);
  return r;
}

void KlStats::add(const KlPosition& p) {
  nll_.add(p.nll);
  nll_base_.add(p.nll_base);
  kld_.push_back(p.kld);
  sum_kld_ += p.kld;
  sum_kld2_ += p.kld * p.kld;
  sum_p_diff2_ += p.p_diff * p.p_diff;
  same_top_ += p.same_top;
}

double KlStats::ppl() const { return nll_.ppl(); }
double KlStats::ppl_base() const { return nll_base_.ppl(); }

MeanAndError KlStats::mean_kld() const {
  const double n = double(count());
  if (n == 0) return {};
  const double mean = sum_kld_ / n;
  const double var = sum_kld2_ / n - mean * mean;
  return {mean, var > 0 && n > 1 ? std::sqrt(var / (n - 1)) : 0};
}

double KlStats::kld_quantile(double fraction) const {
  if (kld_.empty()) return 0;
  std::vector<double> v = kld_;
  std::sort(v.begin(), v.end());
  if (fraction <= 0) return v.front();
  if (fraction >= 1) return v.back();
  double p = fraction * double(v.size() - 1);
  const size_t i = size_t(p);
  p -= double(i);
  return (1 - p) * v[i] + p * v[std::min(i + 1, v.size() - 1)];
}

double KlStats::rms_p_diff() const { return count() ? std::sqrt(sum_p_diff2_ / double(count())) : 0; }

MeanAndError KlStats::same_top() const {
  const double n = double(count());
  if (n == 0) return {};
  const double p = double(same_top_) / n;
  return {p, n > 1 ? std::sqrt(p * (1 - p) / (n - 1)) : 0};
}

}  // namespace squeeze::eval
