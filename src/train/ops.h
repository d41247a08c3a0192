// train/ops.h — the differentiable ops of the Glimmer family, each a forward computation
// plus a hand-written backward recorded on the Tape. Shapes in comments: n = tokens of
// the batch (B sequences × S positions, row b·S + s), E = width, V = vocabulary.
// All ops exist for float (training) and double (finite-difference tests).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "train/tape.h"

namespace squeeze::train {

// y[n, E] = table[ids[i], :]. ids must lie in [0, table.rows).
template <typename T> Var embedding(Tape<T>& t, Var table, std::span<const int32_t> ids);
// y[n, N] = x[n, K] · w[N, K]ᵀ (a GGUF projection: w holds N rows of K inputs).
template <typename T> Var matmul_nt(Tape<T>& t, Var x, Var w);
// y = a + b (same shape).
template <typename T> Var add(Tape<T>& t, Var a, Var b);
// y = s · x (mixing losses: distillation's KL with the hard-label cross-entropy).
template <typename T> Var scale(Tape<T>& t, Var x, double s);
// Per row: y = x / sqrt(mean(x²) + eps) · w, w [1, E].
template <typename T> Var rmsnorm(Tape<T>& t, Var x, Var w, float eps);
// Per row without a weight: y = x / sqrt(mean(x²) + eps) (Muse Glimmer's embedding norm).
template <typename T> Var rmsnorm_unweighted(Tape<T>& t, Var x, float eps);
// Per head (QK-norm): x [n, H·D] normalised over each head's D values, every head scaled
// by the same w [1, D].
template <typename T> Var rmsnorm_heads(Tape<T>& t, Var x, Var w, float eps);
// y = silu(gate) · up, elementwise.
template <typename T> Var swiglu(Tape<T>& t, Var gate, Var up);
// y = x ⊙ sigmoid(gate), elementwise (Muse Glimmer's attention output gate).
template <typename T> Var sigmoid_gate(Tape<T>& t, Var x, Var gate);
// y = cap · tanh(x / cap), elementwise (the final logit soft-cap); cap > 0.
template <typename T> Var softcap(Tape<T>& t, Var x, float cap);

// RoPE with normal (adjacent) pairing on rows of n_heads × head_dim values: pair i of a
// head at position p rotates by p · base^(-2i/head_dim), the angle computed in double and,
// for float, rounded to float exactly as kernels/cpu's rope (so training matches inference).
struct RopeSpec {
  int64_t n_heads = 0;
  int64_t head_dim = 0;
  int64_t seq_len = 0;   // row r is at position r % seq_len (unless `positions`)
  float freq_base = 10000.0f;
  bool neox = false;     // pairs (i, i + D/2) instead of (2i, 2i + 1) (the DFlash drafter)
  const std::vector<int64_t>* positions = nullptr;  // row r at (*positions)[r]; seq_len unused
};
template <typename T> Var rope(Tape<T>& t, Var x, const RopeSpec& spec);

// Causal grouped-query attention over B sequences of seq_len tokens with materialised
// scores: q [n, H·D], k and v [n, Hk·D] → out [n, H·D]. Query head h reads KV head
// h / (H / Hk); position i sees keys j ≤ i, and with window > 0 only j > i - window
// (kernels/cpu/attention.h's convention). Scores are scaled by `scale`, 1/sqrt(D) when 0.
struct AttentionSpec {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t seq_len = 0;
  int64_t window = 0;  // 0: global
  float scale = 0;     // 0: 1/sqrt(head_dim)
};
template <typename T> Var attention(Tape<T>& t, Var q, Var k, Var v, const AttentionSpec& spec);

// Grouped-query attention of nq query rows over nk key rows with an arbitrary visibility:
// query i sees the key rows in visible[i] = {lo0, hi0, lo1, hi1}, the union of
// [lo0, hi0) and [lo1, hi1) (empty ranges allowed; each query must see at least one
// key). The DFlash drafter's training mask: a block's queries see the context keys
// before its anchor and every key of their own block. Scale 1/sqrt(D) when 0.
struct MaskedAttentionSpec {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 0;
};
template <typename T>
Var masked_attention(Tape<T>& t, Var q, Var k, Var v, const MaskedAttentionSpec& spec,
                     std::span<const std::array<int64_t, 4>> visible);

// y = [a; b]: b's rows after a's (same width).
template <typename T> Var concat_rows(Tape<T>& t, Var a, Var b);

// Σ_i w_i · (−log softmax(logits_i)[target_i]) / Σ_i w_i over rows whose target is ≥ 0 and
// weight > 0 (the DFlash loss: later block positions weigh less). A [1, 1] scalar.
template <typename T>
Var weighted_cross_entropy(Tape<T>& t, Var logits, std::span<const int32_t> targets, std::span<const float> weights);

// Mean over the tokens whose target is >= 0 of -log softmax(logits)[target]; a target
// of -1 is ignored. Returns a [1, 1] scalar.
template <typename T> Var cross_entropy(Tape<T>& t, Var logits, std::span<const int32_t> targets);

// KL divergence between the teacher's and the student's next-token distributions at a
// temperature τ (both sides' logits divided by τ), averaged over tokens and multiplied
// by `scale` (Hinton's τ², so gradients keep their size as τ changes; pass 1 for the
// plain mean KL).
//   forward: KL(p_T ‖ p_S) = Σ p_T (log p_T − log p_S)   mode-covering
//   reverse: KL(p_S ‖ p_T) = Σ p_S (log p_S − log p_T)   mode-seeking (on-policy)
enum class KlDirection { forward, reverse };
struct KlParams {
  KlDirection direction = KlDirection::forward;
  float temperature = 1.0f;
  float scale = 1.0f;
};
// Full vocabulary: teacher_logits [n, V] raw (untempered), no gradient. With `targets`
// ([n]), rows whose target is -1 are left out of the mean (on-policy distillation scores
// only the positions the student generated, not its prompt).
template <typename T>
Var kl_divergence(Tape<T>& t, Var student_logits, std::span<const float> teacher_logits, const KlParams& p,
                  std::span<const int32_t> targets = {});

// A sparse teacher: per token the k most likely ids and their log-probabilities under the
// teacher's distribution *at the distillation temperature*. The mass outside the top k,
// r_T = 1 − Σ exp(logprob), is kept as one "tail" event: the KL is taken between the
// coarsened distributions over (top-k ids, tail), the student's tail being the sum of its
// probabilities outside the ids. This is exact when k = V and a lower bound of the full
// KL otherwise (coarsening never increases a KL divergence). r_T is floored at 1e-12 so
// that the reverse KL stays finite when the teacher's top-k hold all of its mass.
struct TopKTeacher {
  int64_t k = 0;
  float temperature = 1.0f;          // the τ the log-probs were computed at
  std::vector<int32_t> ids;          // [n, k]
  std::vector<float> logprobs;       // [n, k]
  int64_t n_tokens() const { return k > 0 ? static_cast<int64_t>(ids.size()) / k : 0; }
};
// The top-k of softmax(logits/τ) per row of logits [n, V].
TopKTeacher topk_teacher(std::span<const float> logits, int64_t n, int64_t vocab, int64_t k, float temperature);
// p.temperature must equal teacher.temperature.
template <typename T>
Var kl_divergence_topk(Tape<T>& t, Var student_logits, const TopKTeacher& teacher, const KlParams& p,
                       std::span<const int32_t> targets = {});

}  // namespace squeeze::train
