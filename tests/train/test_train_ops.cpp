// tests/train/test_train_ops.cpp — every autograd op's backward against central finite
// differences in float64, on small random inputs of awkward sizes; and the float
// instantiation against the double one.
//
// Tolerance of the float64 check: with step h = 1e-5 the central difference has
// truncation error ~h²·|f'''|/6 ≈ 1e-10 and rounding error ~ε·|L|/h ≈ 1e-16·10/1e-5 =
// 1e-10 for the O(1..10) losses here, so 1e-6 (relative to max(1, |g|)) is ~10⁴ times
// those errors, yet a wrong term in any backward (errors are O(|g|)) fails it at once.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "train/ops.h"

namespace squeeze::train {
namespace {

struct Input {
  int64_t rows, cols;
  bool grad = true;
};

template <typename T>
using Build = std::function<Var(Tape<T>&, const std::vector<Var>&)>;

// Σ y ⊙ R with a fixed random R: turns any output into a scalar whose gradient w.r.t. y
// is R (so every element of the op's output contributes with a different weight).
template <typename T>
Var weighted_sum(Tape<T>& t, Var y, std::shared_ptr<std::vector<T>> R) {
  Var s = t.output(1, 1, t.needs_grad(y));
  for (int64_t i = 0; i < t.size(y); ++i) t.value(s)[0] += t.value(y)[i] * (*R)[static_cast<size_t>(i)];
  if (t.needs_grad(s))
    t.on_backward([&t, y, s, R] {
      for (int64_t i = 0; i < t.size(y); ++i) t.grad(y)[i] += t.grad(s)[0] * (*R)[static_cast<size_t>(i)];
    });
  return s;
}

template <typename T>
struct Run {
  T loss;
  double magnitude = 0;  // Σ|terms| of the loss: what its rounding error scales with
  std::vector<std::vector<T>> grads;
};

template <typename T>
Run<T> run(const std::vector<Input>& in, std::vector<std::vector<T>> values, const Build<T>& build) {
  Tape<T> t;
  Run<T> r;
  r.grads.resize(in.size());
  std::vector<Var> vars;
  for (size_t i = 0; i < in.size(); ++i) {
    r.grads[i].assign(values[i].size(), T(0));
    vars.push_back(t.leaf(values[i], in[i].grad ? std::span<T>(r.grads[i]) : std::span<T>(), in[i].rows, in[i].cols));
  }
  Var y = build(t, vars);
  if (t.size(y) != 1) {
    std::mt19937_64 rng(99);
    std::normal_distribution<double> nd(0.0, 1.0);
    auto R = std::make_shared<std::vector<T>>(static_cast<size_t>(t.size(y)));
    for (auto& v : *R) v = static_cast<T>(nd(rng));
    for (int64_t i = 0; i < t.size(y); ++i) r.magnitude += std::abs(static_cast<double>(t.value(y)[i] * (*R)[static_cast<size_t>(i)]));
    y = weighted_sum(t, y, R);
  }
  r.loss = t.value(y)[0];
  r.magnitude = std::max(r.magnitude, std::abs(static_cast<double>(r.loss)));
  t.backward(y);
  return r;
}

std::vector<std::vector<double>> random_inputs(const std::vector<Input>& in, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, scale);
  std::vector<std::vector<double>> v;
  for (const Input& i : in) {
    v.emplace_back(static_cast<size_t>(i.rows * i.cols));
    for (auto& x : v.back()) x = nd(rng);
  }
  return v;
}

// Checks every gradient element of every input against central differences in double.
void check_gradients(const std::vector<Input>& in, const Build<double>& build, uint64_t seed = 1, double scale = 1.0) {
  auto values = random_inputs(in, seed, scale);
  const Run<double> analytic = run<double>(in, values, build);
  ASSERT_TRUE(std::isfinite(analytic.loss));
  constexpr double h = 1e-5;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].grad) continue;
    for (size_t j = 0; j < values[i].size(); ++j) {
      auto plus = values, minus = values;
      plus[i][j] += h;
      minus[i][j] -= h;
      const double numeric = (run<double>(in, plus, build).loss - run<double>(in, minus, build).loss) / (2 * h);
      const double a = analytic.grads[i][j];
      EXPECT_NEAR(a, numeric, 1e-6 * std::max({1.0, std::abs(a), std::abs(numeric)})) << "input " << i << " element " << j;
    }
  }
}

template <typename Fn>
void check_float_matches_double(const std::vector<Input>& in, Fn build, uint64_t seed = 1) {
  auto values = random_inputs(in, seed);
  std::vector<std::vector<float>> fvalues;
  for (auto& v : values) fvalues.emplace_back(v.begin(), v.end());
  std::vector<std::vector<double>> dvalues;  // the double run sees exactly the float inputs
  for (auto& v : fvalues) dvalues.emplace_back(v.begin(), v.end());
  const Run<double> d = run<double>(in, dvalues, Build<double>(build));
  const Run<float> f = run<float>(in, fvalues, Build<float>(build));
  // Float rounding (6e-8) grows with the reduction lengths here (≤ ~70 terms) and the
  // conditioning of softmax / normalisation; 1e-4 of the largest value is ~50× that,
  // and far below what a wrong backward term (O(|g|)) produces. The loss is a signed sum
  // of many terms, so its bound is relative to the sum of their magnitudes.
  EXPECT_NEAR(f.loss, d.loss, 1e-4 * std::max(1.0, d.magnitude));
  for (size_t i = 0; i < in.size(); ++i) {
    double gmax = 1e-3;
    for (double g : d.grads[i]) gmax = std::max(gmax, std::abs(g));
    for (size_t j = 0; j < d.grads[i].size(); ++j)
      EXPECT_NEAR(f.grads[i][j], d.grads[i][j], 1e-4 * gmax) << "input " << i << " element " << j;
  }
}

// Generic lambdas so one definition serves both the double and the float run.
const auto kMatmul = [](auto& t, const std::vector<Var>& v) { return matmul_nt(t, v[0], v[1]); };
const std::vector<Input> kMatmulIn = {{6, 5}, {7, 5}};

TEST(TrainOps, Matmul) {
  check_gradients(kMatmulIn, kMatmul);
  check_float_matches_double(kMatmulIn, kMatmul);
}

TEST(TrainOps, MatmulLargeUsesBlasPath) {
  // Above kernels/cpu's BLAS threshold in float (2·70·65·66 flops > 2·64³).
  check_float_matches_double({{70, 66}, {65, 66}}, kMatmul);
}

TEST(TrainOps, Embedding) {
  const std::vector<int32_t> ids = {3, 0, 6, 3, 3, 1};  // repeats: gradients must add up
  auto b = [&](auto& t, const std::vector<Var>& v) { return embedding(t, v[0], ids); };
  check_gradients({{7, 5}}, b);
  check_float_matches_double({{7, 5}}, b);
}

TEST(TrainOps, AddWithSharedInput) {
  // y = x + x·wᵀ·... : x feeds two paths, so its gradient must accumulate both.
  auto b = [](auto& t, const std::vector<Var>& v) { return add(t, v[0], matmul_nt(t, v[0], v[1])); };
  check_gradients({{4, 5}, {5, 5}}, b);
  check_float_matches_double({{4, 5}, {5, 5}}, b);
}

TEST(TrainOps, ScaleAndMix) {
  // 0.3·(x·wᵀ) + x: the shape of a mixed loss (scaled term plus another on the same input).
  auto b = [](auto& t, const std::vector<Var>& v) { return add(t, scale(t, matmul_nt(t, v[0], v[1]), 0.3), v[0]); };
  check_gradients({{4, 5}, {5, 5}}, b);
  check_float_matches_double({{4, 5}, {5, 5}}, b);
}

TEST(TrainOps, RmsNorm) {
  auto b = [](auto& t, const std::vector<Var>& v) { return rmsnorm(t, v[0], v[1], 1e-5f); };
  check_gradients({{4, 9}, {1, 9}}, b);
  check_float_matches_double({{4, 9}, {1, 9}}, b);
}

TEST(TrainOps, RmsNormUnweighted) {
  auto b = [](auto& t, const std::vector<Var>& v) { return rmsnorm_unweighted(t, v[0], 1e-5f); };
  check_gradients({{4, 9}}, b);
  check_float_matches_double({{4, 9}}, b);
}

TEST(TrainOps, RmsNormAtPostNormEps) {
  // Muse Glimmer's post-norms use eps 1e-8: the backward must hold there too, and on rows
  // of a small scale (1e-2), where eps is no longer negligible against mean(x²) ≈ 1e-4.
  auto b = [](auto& t, const std::vector<Var>& v) { return rmsnorm(t, v[0], v[1], 1e-8f); };
  check_gradients({{4, 9}, {1, 9}}, b);
  check_gradients({{4, 9}, {1, 9}}, b, 2, 1e-2);
  check_float_matches_double({{4, 9}, {1, 9}}, b);
}

TEST(TrainOps, RmsNormHeadsSharesTheWeight) {
  // QK-norm: 3 tokens × 4 heads of 5; the weight's gradient sums over every head.
  auto b = [](auto& t, const std::vector<Var>& v) { return rmsnorm_heads(t, v[0], v[1], 1e-5f); };
  check_gradients({{3, 20}, {1, 5}}, b);
  check_float_matches_double({{3, 20}, {1, 5}}, b);
  // It is the per-row norm of the same values viewed as [3·4, 5].
  const auto in = random_inputs({{3, 20}, {1, 5}}, 6);
  auto x = in[0], w = in[1];
  Tape<double> t;
  const Var heads = rmsnorm_heads(t, t.leaf(x, {}, 3, 20), t.leaf(w, {}, 1, 5), 1e-5f);
  const Var rows = rmsnorm(t, t.leaf(x, {}, 12, 5), t.leaf(w, {}, 1, 5), 1e-5f);
  for (int64_t i = 0; i < 60; ++i) EXPECT_EQ(t.value(heads)[i], t.value(rows)[i]) << i;
  // Rows of 15 are not whole heads of 4.
  EXPECT_THROW(rmsnorm_heads(t, t.leaf(x, {}, 4, 15), t.leaf(std::span<double>(w).first(4), {}, 1, 4), 1e-5f), Error);
}

TEST(TrainOps, SwiGlu) {
  auto b = [](auto& t, const std::vector<Var>& v) { return swiglu(t, v[0], v[1]); };
  check_gradients({{3, 7}, {3, 7}}, b, 1, 2.0);
  check_float_matches_double({{3, 7}, {3, 7}}, b);
}

TEST(TrainOps, SigmoidGate) {
  auto b = [](auto& t, const std::vector<Var>& v) { return sigmoid_gate(t, v[0], v[1]); };
  check_gradients({{3, 7}, {3, 7}}, b, 1, 2.0);
  check_float_matches_double({{3, 7}, {3, 7}}, b);
}

TEST(TrainOps, ScaledSoftCap) {
  // Muse Glimmer's head: cap · tanh(s·x / cap). Inputs of scale 4 with cap 3 put part of
  // them deep in tanh's saturation, where 1 − tanh² is small.
  auto b = [](auto& t, const std::vector<Var>& v) { return softcap(t, scale(t, v[0], 0.75), 3.0f); };
  check_gradients({{4, 11}}, b, 1, 4.0);
  check_float_matches_double({{4, 11}}, b);
  Tape<float> t;
  std::vector<float> x = {-1e4f, -3.0f, 0.0f, 0.5f, 1e4f};
  const Var y = softcap(t, t.leaf(x, {}, 1, 5), 2.0f);
  EXPECT_EQ(t.value(y)[0], -2.0f);  // bounded by the cap
  EXPECT_EQ(t.value(y)[2], 0.0f);
  EXPECT_FLOAT_EQ(t.value(y)[3], 2.0f * std::tanh(0.25f));
  EXPECT_EQ(t.value(y)[4], 2.0f);
  EXPECT_THROW(softcap(t, t.leaf(x, {}, 1, 5), 0.0f), Error);
}

TEST(TrainOps, Rope) {
  for (float base : {10000.0f, 1000000.0f}) {
    auto b = [base](auto& t, const std::vector<Var>& v) {
      return rope(t, v[0], {.n_heads = 3, .head_dim = 6, .seq_len = 5, .freq_base = base});
    };
    check_gradients({{10, 18}}, b);
    check_float_matches_double({{10, 18}}, b);
  }
}

TEST(TrainOps, RopeNeoxAtGivenPositions) {
  static const std::vector<int64_t> pos = {0, 7, 3, 3, 12, 1};
  auto b = [](auto& t, const std::vector<Var>& v) {
    return rope(t, v[0], {.n_heads = 2, .head_dim = 6, .freq_base = 500.0f, .neox = true, .positions = &pos});
  };
  check_gradients({{6, 12}}, b);
  check_float_matches_double({{6, 12}}, b);
  // NeoX pairs (i, i + D/2): a row with only x0 = 1 rotates into x0 = cos, x3 = sin
  Tape<double> t;
  std::vector<double> x = {1, 0, 0, 0, 0, 0};
  static const std::vector<int64_t> one = {2};
  const Var y = rope(t, t.leaf(x, {}, 1, 6), {.n_heads = 1, .head_dim = 6, .freq_base = 10.0f, .neox = true, .positions = &one});
  EXPECT_NEAR(t.value(y)[0], std::cos(2.0), 1e-12);
  EXPECT_NEAR(t.value(y)[3], std::sin(2.0), 1e-12);
  EXPECT_EQ(t.value(y)[1], 0.0);
}

// The DFlash training mask on 3 context keys and two blocks of 2: each block sees the
// context before its anchor and its own block; one query sees a single key.
TEST(TrainOps, MaskedAttentionSeesOnlyItsKeys) {
  static const std::vector<std::array<int64_t, 4>> vis = {{0, 1, 3, 5}, {0, 1, 3, 5}, {0, 3, 5, 7}, {5, 6, 0, 0}};
  const int64_t D = 3, H = 4, Hk = 2;
  auto b = [](auto& t, const std::vector<Var>& v) {
    return masked_attention(t, v[0], v[1], v[2], {.n_heads = H, .n_kv_heads = Hk, .head_dim = D}, vis);
  };
  const std::vector<Input> in = {{4, H * D}, {7, Hk * D}, {7, Hk * D}};
  check_gradients(in, b);
  check_float_matches_double(in, b);
  // the last query sees only key 5: its output is v[5] of its KV head
  Tape<double> t;
  auto vals = random_inputs(in, 3);
  const Var o = masked_attention(t, t.leaf(vals[0], {}, 4, H * D), t.leaf(vals[1], {}, 7, Hk * D),
                                 t.leaf(vals[2], {}, 7, Hk * D), {.n_heads = H, .n_kv_heads = Hk, .head_dim = D}, vis);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < D; ++d)
      EXPECT_NEAR(t.value(o)[3 * H * D + h * D + d], vals[2][static_cast<size_t>(5 * Hk * D + (h / 2) * D + d)], 1e-12);
}

TEST(TrainOps, ConcatRows) {
  auto b = [](auto& t, const std::vector<Var>& v) { return concat_rows(t, v[0], v[1]); };
  check_gradients({{3, 4}, {2, 4}}, b);
}

TEST(TrainOps, WeightedCrossEntropy) {
  static const std::vector<int32_t> y = {2, -1, 0, 4, 1};
  static const std::vector<float> w = {1.0f, 5.0f, 0.5f, 0.0f, 0.25f};
  auto b = [](auto& t, const std::vector<Var>& v) { return weighted_cross_entropy(t, v[0], y, w); };
  check_gradients({{5, 6}}, b);
  check_float_matches_double({{5, 6}}, b);
  // equal weights: the plain mean cross-entropy
  Tape<double> t;
  auto vals = random_inputs({{5, 6}}, 4);
  const std::vector<float> ones(5, 1.0f);
  const Var a = weighted_cross_entropy(t, t.leaf(vals[0], {}, 5, 6), y, ones);
  const Var c = cross_entropy(t, t.leaf(vals[0], {}, 5, 6), y);
  EXPECT_NEAR(t.value(a)[0], t.value(c)[0], 1e-12);
}

TEST(TrainOps, AttentionGqaCausalAndWindowed) {
  struct Case { int64_t window, H, Hk; float scale = 0; };
  for (const Case& c : {Case{0, 4, 2}, Case{3, 4, 2}, Case{3, 3, 1}, Case{0, 2, 2}, Case{3, 4, 2, 1.3f}}) {
    {
      const int64_t D = 3, S = 7, B = 2, window = c.window, H = c.H, Hk = c.Hk;
      const float sc = c.scale;
      auto b = [=](auto& t, const std::vector<Var>& v) {
        return attention(t, v[0], v[1], v[2],
                         {.n_heads = H, .n_kv_heads = Hk, .head_dim = D, .seq_len = S, .window = window, .scale = sc});
      };
      const std::vector<Input> in = {{B * S, H * D}, {B * S, Hk * D}, {B * S, Hk * D}};
      check_gradients(in, b);
      check_float_matches_double(in, b);
    }
  }
}

TEST(TrainOps, AttentionScaleMultipliesTheScores) {
  // Scores s·q·k equal the default 1/sqrt(D)·(q')·k with q' = s·sqrt(D)·q.
  const int64_t D = 4, S = 5;
  const auto in = random_inputs({{S, 2 * D}, {S, D}, {S, D}}, 3);
  auto q = in[0], k = in[1], v = in[2];
  const AttentionSpec spec{.n_heads = 2, .n_kv_heads = 1, .head_dim = D, .seq_len = S, .window = 3};
  AttentionSpec scaled = spec;
  scaled.scale = 0.5f;  // exact in float and double
  Tape<double> t;
  const Var a = attention(t, t.leaf(q, {}, S, 2 * D), t.leaf(k, {}, S, D), t.leaf(v, {}, S, D), scaled);
  const Var b = attention(t, scale(t, t.leaf(q, {}, S, 2 * D), 0.5 * std::sqrt(double(D))), t.leaf(k, {}, S, D),
                          t.leaf(v, {}, S, D), spec);
  for (int64_t i = 0; i < S * 2 * D; ++i) EXPECT_NEAR(t.value(a)[i], t.value(b)[i], 1e-12) << i;
}

TEST(TrainOps, AttentionWindowMasksOldKeys) {
  // With window 2, query 5 must not depend on key/value 3 or earlier: perturbing v row 3
  // leaves output row 5 unchanged, while the global layer sees it.
  for (int64_t window : {0, 2}) {
    Tape<double> t;
    std::vector<double> q(6 * 2, 0.3), k(6 * 2, 0.1), v(6 * 2, 0.0);
    for (size_t i = 0; i < v.size(); ++i) q[i] += 0.01 * i, k[i] -= 0.02 * i;
    auto out_row5 = [&](double v3) {
      Tape<double> tt;
      std::vector<double> vv = v;
      vv[3 * 2] = v3;
      Var o = attention(tt, tt.leaf(q, {}, 6, 2), tt.leaf(k, {}, 6, 2), tt.leaf(vv, {}, 6, 2),
                        {.n_heads = 1, .n_kv_heads = 1, .head_dim = 2, .seq_len = 6, .window = window});
      return tt.value(o)[5 * 2];
    };
    if (window == 2) {
      EXPECT_EQ(out_row5(0.0), out_row5(5.0));
    } else {
      EXPECT_NE(out_row5(0.0), out_row5(5.0));
    }
  }
}

TEST(TrainOps, CrossEntropyIgnoresMinusOne) {
  const std::vector<int32_t> targets = {2, -1, 0, 10, 4};
  auto b = [&](auto& t, const std::vector<Var>& v) { return cross_entropy(t, v[0], targets); };
  check_gradients({{5, 11}}, b);
  check_float_matches_double({{5, 11}}, b);
  // Against a direct computation of the mean of −log p over the 4 counted tokens.
  auto x = random_inputs({{5, 11}}, 1)[0];
  double want = 0;
  for (int i : {0, 2, 3, 4}) {
    double z = 0;
    for (int j = 0; j < 11; ++j) z += std::exp(x[i * 11 + j]);
    want += std::log(z) - x[i * 11 + targets[i]];
  }
  EXPECT_NEAR(run<double>({{5, 11}}, {x}, Build<double>(b)).loss, want / 4, 1e-12);
}

std::vector<float> teacher_logits(int64_t n, int64_t V, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> t(static_cast<size_t>(n * V));
  for (auto& x : t) x = nd(rng);
  return t;
}

TEST(TrainOps, KlFullVocabularyBothDirections) {
  const auto teacher = teacher_logits(4, 11, 7);
  for (auto dir : {KlDirection::forward, KlDirection::reverse}) {
    const KlParams p{.direction = dir, .temperature = 2.0f, .scale = 4.0f};
    auto b = [&](auto& t, const std::vector<Var>& v) { return kl_divergence(t, v[0], teacher, p); };
    check_gradients({{4, 11}}, b);
    check_float_matches_double({{4, 11}}, b);
  }
}

TEST(TrainOps, KlIsZeroWhenStudentEqualsTeacher) {
  const auto teacher = teacher_logits(3, 9, 3);
  std::vector<double> same(teacher.begin(), teacher.end());
  for (auto dir : {KlDirection::forward, KlDirection::reverse}) {
    auto b = [&](auto& t, const std::vector<Var>& v) {
      return kl_divergence(t, v[0], teacher, {.direction = dir, .temperature = 1.5f});
    };
    const auto r = run<double>({{3, 9}}, {same}, Build<double>(b));
    EXPECT_NEAR(r.loss, 0.0, 1e-12);
    for (double g : r.grads[0]) EXPECT_NEAR(g, 0.0, 1e-12);
  }
}

TEST(TrainOps, KlTopKBothDirections) {
  const auto logits = teacher_logits(4, 11, 5);
  const TopKTeacher teacher = topk_teacher(logits, 4, 11, 3, 2.0f);
  for (auto dir : {KlDirection::forward, KlDirection::reverse}) {
    const KlParams p{.direction = dir, .temperature = 2.0f, .scale = 4.0f};
    auto b = [&](auto& t, const std::vector<Var>& v) { return kl_divergence_topk(t, v[0], teacher, p); };
    check_gradients({{4, 11}}, b);
    check_float_matches_double({{4, 11}}, b);
  }
}

TEST(TrainOps, KlTopKWithFullSupportEqualsFullKl) {
  // k = V: no tail, so the sparse loss and gradient are the full ones (up to the float
  // storage of the teacher's log-probs: 6e-8 relative on values of O(1..10)).
  const int64_t n = 3, V = 9;
  const auto logits = teacher_logits(n, V, 11);
  const TopKTeacher teacher = topk_teacher(logits, n, V, V, 1.7f);
  auto x = random_inputs({{n, V}}, 4)[0];
  for (auto dir : {KlDirection::forward, KlDirection::reverse}) {
    const KlParams p{.direction = dir, .temperature = 1.7f};
    const auto full = run<double>({{n, V}}, {x}, Build<double>([&](auto& t, const std::vector<Var>& v) {
                                    return kl_divergence(t, v[0], logits, p);
                                  }));
    const auto sparse = run<double>({{n, V}}, {x}, Build<double>([&](auto& t, const std::vector<Var>& v) {
                                      return kl_divergence_topk(t, v[0], teacher, p);
                                    }));
    EXPECT_NEAR(sparse.loss, full.loss, 1e-5);
    for (size_t j = 0; j < full.grads[0].size(); ++j) EXPECT_NEAR(sparse.grads[0][j], full.grads[0][j], 1e-5);
  }
}

TEST(TrainOps, KlTopKIsALowerBoundOfTheFullKl) {
  const int64_t n = 5, V = 13;
  const auto logits = teacher_logits(n, V, 21);
  auto x = random_inputs({{n, V}}, 8)[0];
  const KlParams p{.direction = KlDirection::forward, .temperature = 1.0f};
  const double full = run<double>({{n, V}}, {x}, Build<double>([&](auto& t, const std::vector<Var>& v) {
                                    return kl_divergence(t, v[0], logits, p);
                                  })).loss;
  double prev = 0;
  for (int64_t k : {1, 3, 6, 12}) {
    const TopKTeacher teacher = topk_teacher(logits, n, V, k, 1.0f);
    const double sparse = run<double>({{n, V}}, {x}, Build<double>([&](auto& t, const std::vector<Var>& v) {
                                        return kl_divergence_topk(t, v[0], teacher, p);
                                      })).loss;
    EXPECT_LE(sparse, full + 1e-6) << "k = " << k;
    EXPECT_GE(sparse, prev - 1e-6) << "refining the events cannot lower the KL (k = " << k << ")";
    prev = sparse;
  }
}

TEST(TrainOps, MaskedKlAveragesOnlyTheScoredRows) {
  // On-policy distillation masks the prompt rows (target -1): the loss must be the mean
  // over the kept rows alone, and the masked rows get no gradient.
  const int64_t n = 5, V = 7;
  const auto logits = teacher_logits(n, V, 31);
  const std::vector<int32_t> mask = {-1, 3, -1, 0, 6};
  const std::vector<int64_t> kept = {1, 3, 4};
  std::vector<float> kept_logits;
  for (int64_t r : kept) kept_logits.insert(kept_logits.end(), logits.begin() + r * V, logits.begin() + (r + 1) * V);
  const auto x = random_inputs({{n, V}}, 12)[0];
  std::vector<double> kept_x;
  for (int64_t r : kept) kept_x.insert(kept_x.end(), x.begin() + r * V, x.begin() + (r + 1) * V);
  const TopKTeacher sparse = topk_teacher(logits, n, V, 3, 1.3f);
  for (auto dir : {KlDirection::forward, KlDirection::reverse}) {
    const KlParams p{.direction = dir, .temperature = 1.3f};
    auto full = [&](auto& t, const std::vector<Var>& v) { return kl_divergence(t, v[0], logits, p, mask); };
    auto topk = [&](auto& t, const std::vector<Var>& v) { return kl_divergence_topk(t, v[0], sparse, p, mask); };
    check_gradients({{n, V}}, full);
    check_gradients({{n, V}}, topk);
    const auto masked = run<double>({{n, V}}, {x}, Build<double>(full));
    const auto alone = run<double>({{3, V}}, {kept_x}, Build<double>([&](auto& t, const std::vector<Var>& v) {
                                     return kl_divergence(t, v[0], kept_logits, p);
                                   }));
    EXPECT_NEAR(masked.loss, alone.loss, 1e-12);
    for (int64_t j = 0; j < V; ++j) {
      EXPECT_EQ(masked.grads[0][static_cast<size_t>(j)], 0.0);
      EXPECT_EQ(masked.grads[0][static_cast<size_t>(2 * V + j)], 0.0);
    }
  }
  Tape<double> t;
  std::vector<double> a(static_cast<size_t>(n * V));
  const std::vector<int32_t> all_masked(static_cast<size_t>(n), -1);
  EXPECT_THROW(kl_divergence(t, t.leaf(a, {}, n, V), logits, {}, all_masked), Error);
}

TEST(TrainOps, BadInputsAreErrors) {
  Tape<float> t;
  std::vector<float> a(6), b(8);
  Var va = t.leaf(a, {}, 2, 3), vb = t.leaf(b, {}, 2, 4);
  EXPECT_THROW(matmul_nt(t, va, vb), Error);
  EXPECT_THROW(add(t, va, vb), Error);
  const std::vector<int32_t> bad_ids = {0, 2};
  EXPECT_THROW(embedding(t, va, bad_ids), Error);
  const std::vector<int32_t> bad_targets = {0, 3};
  EXPECT_THROW(cross_entropy(t, va, bad_targets), Error);
  EXPECT_THROW(attention(t, va, va, va, {.n_heads = 2, .n_kv_heads = 2, .head_dim = 2, .seq_len = 2}), Error);
  EXPECT_THROW(topk_teacher(a, 2, 3, 4, 1.0f), Error);
  TopKTeacher tk = topk_teacher(a, 2, 3, 2, 1.0f);
  EXPECT_THROW(kl_divergence_topk(t, va, tk, {.temperature = 2.0f}), Error);
  tk.ids[1] = tk.ids[0];
  EXPECT_THROW(kl_divergence_topk(t, va, tk, {.temperature = 1.0f}), Error);
}

}  // namespace
}  // namespace squeeze::train
