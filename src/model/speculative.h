// model/speculative.h — speculative decoding around a target Session: a draft source
// proposes the next few tokens, the target runs [anchor, drafts…] as one forward step, and
// the caller's sampler walks the verified rows, keeping drafts while they are what the
// target itself picks (sample-and-match: each emitted token is drawn from the target's
// distribution given exactly the emitted prefix, so the output is the target's
// distribution whatever the drafts are). The Speculator then rolls the target's KV cache
// back to the tokens that stay and feeds them to the draft source.
//
// Lossless, bit for bit: with a batch-invariant target session (SessionParams::
// batch_invariant) every verified row is computed exactly as a one-token decode step would
// compute it, so greedy speculative output equals plain greedy output token for token, and
// seeded sampling draws the same tokens too.
//
// Sources: a DFlash drafter (model/drafter.h; needs the target's tapped hidden states) and
// prompt lookup (n-gram match in the sequence so far, no model). A run-time controller
// picks how many tokens to draft from the acceptance and verify cost it measures, down to
// none (plain decoding) when drafting does not pay.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/drafter.h"
#include "model/session.h"

namespace squeeze::model {

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // Target layers whose hidden states commit() needs (empty: none).
  virtual std::vector<int64_t> tap_layers() const { return {}; }
  // The target now holds `tokens` at positions [size(), size() + n); `taps` are their tap
  // rows ([n, n_taps · E]) when tap_layers() is not empty.
  virtual void commit(std::span<const int32_t> tokens, const float* taps) = 0;
  // Positions committed so far.
  virtual int64_t size() const = 0;
  // Up to max_tokens tokens to follow `anchor` (which sits at position size()); fewer or none
  // when the source has nothing.
  virtual std::vector<int32_t> propose(int32_t anchor, int64_t max_tokens) = 0;
  virtual void truncate(int64_t pos) = 0;
  // The most tokens one proposal can hold.
  virtual int64_t max_proposal() const = 0;
};

// DFlash: greedy drafts from one block pass of the drafter. Committed rows wait as taps
// and are fused into the drafter's context together when the next proposal needs them
// (one product over many rows; nothing at all while plain steps run).
class DFlashSource final : public DraftSource {
 public:
  explicit DFlashSource(const Drafter& drafter, ThreadPool* pool = nullptr);
  std::vector<int64_t> tap_layers() const override { return drafter_.config().target_layers; }
  void commit(std::span<const int32_t> tokens, const float* taps) override;
  int64_t size() const override { return context_.size() + pending_rows_; }
  std::vector<int32_t> propose(int32_t anchor, int64_t max_tokens) override;
  // Past what a sliding drafter still holds, the context restarts at pos.
  void truncate(int64_t pos) override;
  int64_t max_proposal() const override { return drafter_.config().block_size - 1; }

 private:
  void ingest();
  const Drafter& drafter_;
  DraftContext context_;
  std::vector<float> pending_;  // taps of the rows committed since the last ingest
  int64_t pending_rows_ = 0;
};

// Prompt lookup: the longest suffix of the sequence (anchor included) of ngram_max down to
// ngram_min tokens that occurred earlier; proposes what followed its latest earlier
// occurrence.
class PromptLookupSource final : public DraftSource {
 public:
  PromptLookupSource(int64_t max_tokens = 15, int64_t ngram_min = 1, int64_t ngram_max = 4);
  void commit(std::span<const int32_t> tokens, const float*) override;
  int64_t size() const override { return static_cast<int64_t>(history_.size()); }
  std::vector<int32_t> propose(int32_t anchor, int64_t max_tokens) override;
  void truncate(int64_t pos) override;
  int64_t max_proposal() const override { return max_tokens_; }

 private:
  int64_t max_tokens_, ngram_min_, ngram_max_;
  std::vector<int32_t> history_;
};

// How many tokens to draft next: the length that maximises expected tokens per second,
// from decayed per-position acceptance rates and the measured cost of a forward step by its
// row count (and of drafting); 0 — a plain step — unless some length beats a plain step by
// a margin; while plain steps win, a short probe now and then (ever less often) keeps the
// acceptance estimate current.
class DraftLengthController {
 public:
  DraftLengthController(int64_t max_drafts, bool adaptive);
  // The length for the next step, at most min(limit, max_drafts()).
  int64_t choose(int64_t limit);
  // A forward step that ran `rows` tokens of this sequence took `seconds`.
  void record_step(int64_t rows, double seconds);
  // A verification of `drafts` drafts kept `accepted`; drafting them took `draft_seconds`.
  void record_verify(int64_t drafts, int64_t accepted, double draft_seconds);
  int64_t max_drafts() const { return max_drafts_; }

 private:
  double step_cost(int64_t rows) const;
  int64_t max_drafts_;
  bool adaptive_;
  std::vector<double> offered_, kept_;     // decayed counts per draft position
  std::vector<double> cost_sum_, cost_n_;  // decayed step seconds per row count
  double draft_seconds_ = 0;
  int64_t drafts_made_ = 0;
  int64_t plain_streak_ = 0, probe_every_ = 16;
};

// The most tokens to draft per step for verifications of `block` tokens (the anchor
// included; 0: the drafter's trained block, or 16 without a drafter). Throws, naming
// --draft-block, when the block is under 2 or beyond the drafter's trained block.
int64_t drafts_per_block(const Drafter* drafter, int64_t block);

struct SpeculatorParams {
  int64_t max_drafts = 15;  // cap on tokens drafted per step (≤ the source's max_proposal)
  bool adaptive = true;     // choose the draft length per step from measured acceptance and cost
};

// What a run did, for reports (docs/dflash.md, generate's summary line).
struct SpeculatorStats {
  int64_t steps = 0;            // target forward steps after the prompt (verifies and plain steps)
  int64_t verify_steps = 0;     // of which carried drafts
  int64_t drafted = 0, accepted = 0;
  std::vector<int64_t> proposed_at, accepted_at;  // [j]: steps whose draft j (0-based) was offered / kept
  std::vector<int64_t> accept_length;             // [n]: verify steps that kept n drafts
  double draft_seconds = 0, verify_seconds = 0;
  // Mean accepted length τ: tokens emitted per verify step (kept drafts + the target's own).
  double tau() const { return verify_steps ? 1.0 + static_cast<double>(accepted) / verify_steps : 0.0; }
};

class Speculator {
 public:
  Speculator(Session& target, DraftSource& source, SpeculatorParams params = {});

  // Runs the prompt through the target (capturing taps) and commits it to the source;
  // returns the last position's logits.
  std::span<const float> prefill(std::span<const int32_t> prompt);
  // Drafts to follow `anchor`, at most `limit` (the caller's room: tokens left to generate,
  // context left); empty when the controller chooses a plain step.
  std::vector<int32_t> draft(int32_t anchor, int64_t limit);
  // Runs [anchor, drafts…] through the target; returns the logits of every row ([1 + k, V]).
  // With no drafts this is a plain decode step.
  std::span<const float> verify(int32_t anchor, std::span<const int32_t> drafts);
  // After verify(): the first `kept` rows' tokens (the anchor and kept − 1 drafts) stay in
  // the target and go to the source; the rest is rolled back.
  void commit(int64_t kept);

  // Rolls the target and the source back to `pos` (0: both emptied). False, changing
  // nothing, when the source cannot go back that far (a drafter context trimmed to its
  // window; the target's local rings) — the caller then starts over from 0.
  bool rewind(int64_t pos);

  const SpeculatorStats& stats() const { return stats_; }
  Session& target() { return target_; }

 private:

  Session& target_;
  DraftSource& source_;
  SpeculatorParams params_;
  SpeculatorStats stats_;
  DraftLengthController controller_;
  std::vector<int32_t> pending_;  // the tokens of the last verify
  int64_t pending_pos_ = 0;
  double last_draft_seconds_ = 0;
};

}  // namespace squeeze::model
