// model/speculative.cpp — draft sources, verification bookkeeping and the draft-length
// controller.
#include "model/speculative.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace squeeze::model {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Weight of older observations per new one: acceptance and costs follow the text and the
// machine's load as they change.
constexpr double kDecay = 0.97;
// Draft lengths the controller considers (0: a plain step).
constexpr int64_t kLengths[] = {0, 1, 2, 3, 4, 5, 7, 9, 11, 15, 23, 31, 47, 63};
// After this many plain steps in a row, one short draft re-measures acceptance; the gap
// doubles while drafting keeps not paying, up to kProbeEveryMax.
constexpr int64_t kProbeEvery = 16, kProbeEveryMax = 256;
// Drafting is chosen over a plain step only when its expected tokens per second are this
// much higher.
constexpr double kMargin = 1.05;
// The cost of one more row of a step, in one-token steps, before any step of that size ran.
constexpr double kUnmeasuredRowCost = 0.5;

}  // namespace

// ---- DFlash ----------------------------------------------------------------------------

DFlashSource::DFlashSource(const Drafter& drafter, ThreadPool* pool) : drafter_(drafter), context_(drafter, pool) {}

void DFlashSource::commit(std::span<const int32_t> tokens, const float* taps) {
  SQZ_CHECK(taps != nullptr || tokens.empty(), "DFlash: committed tokens without their target hidden states");
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t width = drafter_.config().n_taps() * drafter_.config().n_embd;
  pending_.insert(pending_.end(), taps, taps + n * width);
  pending_rows_ += n;
}

void DFlashSource::ingest() {
  if (pending_rows_ == 0) return;
  context_.append(pending_.data(), pending_rows_);
  pending_.clear();
  pending_rows_ = 0;
}

void DFlashSource::truncate(int64_t pos) {
  SQZ_CHECK(pos >= 0 && pos <= size(), "DFlash: cannot truncate to ", pos, " (holds up to ", size(), ")");
  if (pos >= context_.size()) {  // only waiting rows go
    const int64_t keep = pos - context_.size();
    pending_.resize(static_cast<size_t>(keep * drafter_.config().n_taps() * drafter_.config().n_embd));
    pending_rows_ = keep;
    return;
  }
  pending_.clear();
  pending_rows_ = 0;
  if (pos >= context_.min_truncate_position() || pos == 0) context_.truncate(pos);
  else context_.restart_at(pos);
}

std::vector<int32_t> DFlashSource::propose(int32_t anchor, int64_t max_tokens) {
  const int64_t k = std::min(max_tokens, max_proposal());
  if (k <= 0) return {};
  ingest();
  const auto logits = context_.propose(anchor, k + 1);
  const int64_t V = drafter_.target().config().n_vocab;
  std::vector<int32_t> drafts(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) {
    const float* row = logits.data() + j * V;
    drafts[static_cast<size_t>(j)] = static_cast<int32_t>(std::max_element(row, row + V) - row);
  }
  return drafts;
}

// ---- prompt lookup ---------------------------------------------------------------------

PromptLookupSource::PromptLookupSource(int64_t max_tokens, int64_t ngram_min, int64_t ngram_max)
    : max_tokens_(max_tokens), ngram_min_(ngram_min), ngram_max_(ngram_max) {
  SQZ_CHECK(max_tokens >= 1 && ngram_min >= 1 && ngram_max >= ngram_min, "prompt lookup: bad sizes (tokens ",
            max_tokens, ", n-gram ", ngram_min, "..", ngram_max, ")");
}

void PromptLookupSource::commit(std::span<const int32_t> tokens, const float*) {
  history_.insert(history_.end(), tokens.begin(), tokens.end());
}

void PromptLookupSource::truncate(int64_t pos) {
  SQZ_CHECK(pos >= 0 && pos <= size(), "prompt lookup: cannot truncate to ", pos);
  history_.resize(static_cast<size_t>(pos));
}

std::vector<int32_t> PromptLookupSource::propose(int32_t anchor, int64_t max_tokens) {
  const int64_t k = std::min(max_tokens, max_tokens_);
  if (k <= 0) return {};
  std::vector<int32_t> seq = history_;
  seq.push_back(anchor);
  const int64_t n = static_cast<int64_t>(seq.size());
  for (int64_t g = std::min(ngram_max_, n - 1); g >= ngram_min_; --g) {
    const int32_t* suffix = seq.data() + n - g;
    // latest earlier occurrence that has at least one token after it
    for (int64_t start = n - g - 1; start >= 0; --start) {
      if (!std::equal(suffix, suffix + g, seq.data() + start)) continue;
      const int64_t from = start + g, take = std::min(k, n - from);
      return {seq.begin() + from, seq.begin() + from + take};
    }
  }
  return {};
}

int64_t drafts_per_block(const Drafter* drafter, int64_t block) {
  SQZ_CHECK(block == 0 || block >= 2, "--draft-block must be at least 2 (the anchor and one draft)");
  if (!drafter) return (block ? block : 16) - 1;
  const int64_t trained = drafter->config().block_size;
  SQZ_CHECK(block <= trained, "--draft-block ", block, " exceeds the drafter's trained block size ", trained);
  return (block ? block : trained) - 1;
}

// ---- draft length ----------------------------------------------------------------------

DraftLengthController::DraftLengthController(int64_t max_drafts, bool adaptive)
    : max_drafts_(max_drafts), adaptive_(adaptive) {
  SQZ_CHECK(max_drafts >= 1, "speculative decoding needs at least one draft token per step");
  const size_t n = static_cast<size_t>(max_drafts);
  // prior: each draft position kept half the time, seen once
  offered_.assign(n, 1.0);
  kept_.assign(n, 0.5);
  cost_sum_.assign(n + 2, 0.0);
  cost_n_.assign(n + 2, 0.0);
}

void DraftLengthController::record_step(int64_t rows, double seconds) {
  if (rows < 1 || rows >= static_cast<int64_t>(cost_n_.size())) return;
  for (double& c : cost_sum_) c *= kDecay;
  for (double& c : cost_n_) c *= kDecay;
  cost_sum_[static_cast<size_t>(rows)] += seconds;
  cost_n_[static_cast<size_t>(rows)] += 1.0;
}

void DraftLengthController::record_verify(int64_t drafts, int64_t accepted, double draft_seconds) {
  if (drafts <= 0) return;
  draft_seconds_ += draft_seconds;
  ++drafts_made_;
  // a draft position counts as offered only when every earlier one was kept
  for (size_t j = 0; j < offered_.size(); ++j) offered_[j] *= kDecay, kept_[j] *= kDecay;
  for (int64_t j = 0; j <= std::min(accepted, drafts - 1) && j < max_drafts_; ++j) {
    offered_[static_cast<size_t>(j)] += 1.0;
    if (j < accepted) kept_[static_cast<size_t>(j)] += 1.0;
  }
}

double DraftLengthController::step_cost(int64_t rows) const {
  // measured buckets, interpolated; beyond the measured range extrapolated with the
  // nearest two, or, with only one known, assumed to grow by half a one-token step a row
  // (what a CPU's batched rows cost: docs/dflash.md) until a probe measures it
  std::vector<std::pair<int64_t, double>> pts;
  for (size_t r = 1; r < cost_n_.size(); ++r)
    if (cost_n_[r] > 0.05) pts.push_back({static_cast<int64_t>(r), cost_sum_[r] / cost_n_[r]});
  if (pts.empty()) return static_cast<double>(rows);
  if (pts.size() == 1) return pts[0].second * (1.0 + kUnmeasuredRowCost * static_cast<double>(rows - pts[0].first));
  size_t hi = 1;
  while (hi + 1 < pts.size() && pts[hi].first < rows) ++hi;
  const auto [r0, c0] = pts[hi - 1];
  const auto [r1, c1] = pts[hi];
  const double slope = std::max(0.0, (c1 - c0) / static_cast<double>(r1 - r0));
  return std::max(1e-9, c0 + slope * static_cast<double>(rows - r0));
}

int64_t DraftLengthController::choose(int64_t limit) {
  const int64_t cap = std::min(limit, max_drafts_);
  if (cap <= 0) return 0;
  if (!adaptive_) return cap;
  // expected tokens per step with k drafts: 1 + Σ_{j<k} Π_{m≤j} P(keep m | reached m)
  const double draft_cost = drafts_made_ > 0 ? draft_seconds_ / static_cast<double>(drafts_made_) : 0;
  double best_score = 1.0 / step_cost(1), reach = 1.0, expected = 1.0;
  int64_t best = 0, j = 0;
  for (int64_t k : kLengths) {
    if (k == 0) continue;
    if (k > cap) break;
    for (; j < k; ++j) {
      reach *= kept_[static_cast<size_t>(j)] / offered_[static_cast<size_t>(j)];
      expected += reach;
    }
    // drafting must beat a plain step by a margin: the estimates are noisy, and a wrong
    // choice to draft costs more than a wrong choice not to
    const double score = expected / (step_cost(k + 1) + draft_cost);
    if (score > best_score * (best == 0 ? kMargin : 1.0)) best_score = score, best = k;
  }
  if (best > 0) {
    plain_streak_ = 0;
    probe_every_ = kProbeEvery;
    return best;
  }
  if (++plain_streak_ >= probe_every_) {  // keep measuring what drafting would give, ever less often
    plain_streak_ = 0;
    probe_every_ = std::min<int64_t>(probe_every_ * 2, kProbeEveryMax);
    return std::min<int64_t>(cap, 2);
  }
  return 0;
}

// ---- speculator ------------------------------------------------------------------------

namespace {

int64_t usable_drafts(const Session& target, const DraftSource& source, int64_t wanted) {
  // verify rows must fit one forward chunk, where each row is computed as a decode step
  const int64_t n = std::min({wanted, source.max_proposal(), target.cache().max_chunk() - 1});
  SQZ_CHECK(n >= 1, "speculative decoding: no room for a draft (the cache takes chunks of ", target.cache().max_chunk(),
            ", the source proposes ", source.max_proposal(), ")");
  return n;
}

}  // namespace

Speculator::Speculator(Session& target, DraftSource& source, SpeculatorParams params)
    : target_(target),
      source_(source),
      params_(params),
      controller_(usable_drafts(target, source, params.max_drafts), params.adaptive) {
  params_.max_drafts = controller_.max_drafts();
  const size_t n = static_cast<size_t>(params_.max_drafts);
  stats_.proposed_at.assign(n, 0);
  stats_.accepted_at.assign(n, 0);
  stats_.accept_length.assign(n + 1, 0);
  target_.set_taps(source.tap_layers());
}

std::span<const float> Speculator::prefill(std::span<const int32_t> prompt) {
  SQZ_CHECK(source_.size() == target_.position(), "speculative prefill: the draft source holds ", source_.size(),
            " positions, the target ", target_.position());
  const auto logits = target_.forward(prompt);
  const auto taps = target_.taps();
  source_.commit(prompt, taps.empty() ? nullptr : taps.data());
  return logits;
}

bool Speculator::rewind(int64_t pos) {
  if (pos == 0) {
    target_.reset();
    source_.truncate(0);
    return true;
  }
  if (pos > target_.position() || pos < target_.cache().min_truncate_position()) return false;
  try {
    source_.truncate(pos);
  } catch (const Error&) {
    return false;
  }
  target_.truncate(pos);
  return true;
}

std::vector<int32_t> Speculator::draft(int32_t anchor, int64_t limit) {
  last_draft_seconds_ = 0;
  const int64_t k = controller_.choose(limit);
  if (k == 0) return {};
  const auto t0 = Clock::now();
  std::vector<int32_t> drafts = source_.propose(anchor, k);
  last_draft_seconds_ = seconds_since(t0);
  stats_.draft_seconds += last_draft_seconds_;
  return drafts;
}

std::span<const float> Speculator::verify(int32_t anchor, std::span<const int32_t> drafts) {
  SQZ_CHECK(static_cast<int64_t>(drafts.size()) <= params_.max_drafts, "verify: ", drafts.size(), " drafts, at most ",
            params_.max_drafts);
  pending_.assign(1, anchor);
  pending_.insert(pending_.end(), drafts.begin(), drafts.end());
  pending_pos_ = target_.position();
  const auto t0 = Clock::now();
  std::span<const float> logits;
  if (drafts.empty()) {  // a plain step, exactly as plain decoding runs it
    logits = target_.forward(pending_);
  } else {
    // each row exactly as a one-token step computes it (the session's prefill may use the
    // faster, batch-dependent products: the prompt is the same either way)
    const bool invariant = target_.batch_invariant();
    target_.set_batch_invariant(true);
    try {
      logits = target_.forward(pending_, /*all_logits=*/true);
    } catch (...) {
      target_.set_batch_invariant(invariant);
      throw;
    }
    target_.set_batch_invariant(invariant);
  }
  const double seconds = seconds_since(t0);
  controller_.record_step(static_cast<int64_t>(pending_.size()), seconds);
  if (!drafts.empty()) stats_.verify_seconds += seconds;
  return logits;
}

void Speculator::commit(int64_t kept) {
  const int64_t rows = static_cast<int64_t>(pending_.size());
  SQZ_CHECK(kept >= 1 && kept <= rows, "commit: ", kept, " of ", rows, " verified tokens");
  const int64_t drafts = rows - 1, accepted = kept - 1;
  ++stats_.steps;
  if (drafts > 0) {
    ++stats_.verify_steps;
    stats_.drafted += drafts;
    stats_.accepted += accepted;
    ++stats_.accept_length[static_cast<size_t>(accepted)];
    for (int64_t j = 0; j < drafts; ++j) {
      ++stats_.proposed_at[static_cast<size_t>(j)];
      if (j < accepted) ++stats_.accepted_at[static_cast<size_t>(j)];
    }
    controller_.record_verify(drafts, accepted, last_draft_seconds_);
  }
  target_.truncate(pending_pos_ + kept);
  const auto taps = target_.taps();
  source_.commit(std::span<const int32_t>(pending_.data(), static_cast<size_t>(kept)), taps.empty() ? nullptr : taps.data());
}

}  // namespace squeeze::model
