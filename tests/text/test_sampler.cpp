// tests/text/test_sampler.cpp — sampling: draws match the truncated, renormalised
// distribution (chi-square), determinism with a seed, greedy, penalties, edge cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "core/error.h"
#include "text/sampler.h"

using namespace squeeze::text;

namespace {

std::vector<float> random_logits(int n, uint32_t seed, float scale = 3.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> l(n);
  for (float& x : l) x = nd(gen);
  return l;
}

// The expected distribution computed the plain way: softmax of everything, sort, cut by
// top-k, renormalise, cut by top-p, cut by min-p relative to the top token, then
// temperature on the survivors. Written independently of Sampler's pruning order.
std::vector<double> expected(const std::vector<float>& logits, const SamplerParams& p) {
  const int n = static_cast<int>(logits.size());
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  std::vector<double> prob(n);
  double z = 0;
  for (int i = 0; i < n; ++i) z += prob[i] = std::exp(static_cast<double>(logits[i]));
  for (double& x : prob) x /= z;
  int keep = n;
  if (p.top_k > 0) keep = std::min(keep, p.top_k);
  double zk = 0;
  for (int r = 0; r < keep; ++r) zk += prob[order[r]];
  if (p.top_p < 1) {
    double cum = 0;
    int r = 0;
    while (r < keep) {
      cum += prob[order[r]] / zk;
      ++r;
      if (cum >= p.top_p) break;
    }
    keep = std::max(r, 1);
  }
  int r_min = 0;
  while (r_min < keep && prob[order[r_min]] >= p.min_p * prob[order[0]]) ++r_min;
  keep = std::max(r_min, 1);
  std::vector<double> out(n, 0.0);
  double zt = 0;
  for (int r = 0; r < keep; ++r) zt += out[order[r]] = std::exp(static_cast<double>(logits[order[r]]) / static_cast<double>(p.temperature));
  for (double& x : out) x /= zt;
  return out;
}

// Upper 1e-3 quantile of chi-square with df degrees of freedom (Wilson–Hilferty; its
// relative error is below 1% for df >= 3, far less than the margin the test needs).
double chi2_critical_001(int df) {
  const double z = 3.0902;  // standard normal upper 1e-3 quantile
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

// Draws N tokens and runs a chi-square goodness-of-fit test at significance 1e-3,
// pooling categories whose expected count is under 5. Tokens of expected probability 0
// must never appear. With fixed seeds the outcome is deterministic; the significance
// says how rarely a correct sampler would fail for an arbitrary seed.
void check_distribution(const std::vector<float>& logits, const SamplerParams& p, int draws = 40000) {
  const std::vector<double> want = expected(logits, p);
  Sampler s(p);
  std::vector<int> count(logits.size(), 0);
  for (int i = 0; i < draws; ++i) ++count[s.sample(logits)];
  double chi2 = 0, pooled_obs = 0, pooled_exp = 0;
  int cats = 0;
  for (size_t t = 0; t < logits.size(); ++t) {
    if (want[t] == 0) {
      ASSERT_EQ(count[t], 0) << "token " << t << " is outside the truncated support";
      continue;
    }
    const double e = want[t] * draws;
    if (e < 5) {
      pooled_obs += count[t];
      pooled_exp += e;
      continue;
    }
    chi2 += (count[t] - e) * (count[t] - e) / e;
    ++cats;
  }
  if (pooled_exp > 0) {
    chi2 += (pooled_obs - pooled_exp) * (pooled_obs - pooled_exp) / pooled_exp;
    ++cats;
  }
  if (cats < 2) return;  // a single category: nothing to test beyond the support
  const int df = cats - 1;
  const double crit = df >= 3 ? chi2_critical_001(df) : (df == 1 ? 10.83 : 13.82);
  EXPECT_LT(chi2, crit) << "df " << df;
  // The distribution() view agrees with the independent computation. Both work in
  // double from the same float logits; they differ only in rounding order (max
  // subtraction, 1/T multiply vs divide), a few ulps per exp over <= 200 terms: 1e-12.
  for (const Candidate& c : s.distribution(logits)) EXPECT_NEAR(c.p, want[c.id], 1e-12);
}

SamplerParams plain(float temp) {
  return {.temperature = temp, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 42};
}

}  // namespace

TEST(Sampler, ChiSquareFullSoftmax) { check_distribution(random_logits(50, 1), plain(1.0f)); }

TEST(Sampler, ChiSquareTemperature) {
  check_distribution(random_logits(50, 2), plain(0.7f));
  check_distribution(random_logits(50, 3), plain(1.8f));
}

TEST(Sampler, ChiSquareTopK) {
  auto p = plain(1.0f);
  p.top_k = 7;
  check_distribution(random_logits(60, 4), p);
}

TEST(Sampler, ChiSquareTopP) {
  auto p = plain(1.0f);
  p.top_p = 0.8f;
  check_distribution(random_logits(60, 5), p);
}

TEST(Sampler, ChiSquareMinP) {
  auto p = plain(1.0f);
  p.min_p = 0.1f;
  check_distribution(random_logits(60, 6), p);
}

TEST(Sampler, ChiSquareAllCombined) {
  SamplerParams p{.temperature = 1.3f, .top_k = 12, .top_p = 0.9f, .min_p = 0.02f, .seed = 9};
  check_distribution(random_logits(200, 7, 2.0f), p);
  p.top_p = 0.5f;
  check_distribution(random_logits(200, 8, 1.0f), p);
}

TEST(Sampler, LargeVocabularyUsesAllTokens) {
  // k larger than the vocabulary and p = 1: nothing is cut.
  SamplerParams p{.temperature = 1.0f, .top_k = 1000, .top_p = 1.0f, .min_p = 0.0f, .seed = 3};
  auto logits = random_logits(20, 10, 0.5f);
  Sampler s(p);
  EXPECT_EQ(s.distribution(logits).size(), 20u);
  check_distribution(logits, p);
}

TEST(Sampler, GreedyIsArgmax) {
  auto logits = random_logits(1000, 11);
  const int32_t arg = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  Sampler s({.temperature = 0.0f});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.sample(logits), arg);
  // Ties go to the lowest id.
  std::vector<float> tie = {1, 3, 0, 3};
  EXPECT_EQ(s.sample(tie), 1);
  // A very small temperature concentrates on the argmax too, without NaNs.
  Sampler cold({.temperature = 1e-30f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f});
  EXPECT_EQ(cold.sample(logits), arg);
}

TEST(Sampler, SeedsAreReproducible) {
  auto logits = random_logits(100, 12, 1.0f);
  SamplerParams p{.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 77};
  Sampler a(p), b(p);
  std::vector<int32_t> sa, sb;
  for (int i = 0; i < 200; ++i) sa.push_back(a.sample(logits)), sb.push_back(b.sample(logits));
  EXPECT_EQ(sa, sb);
  a.reset();
  std::vector<int32_t> again;
  for (int i = 0; i < 200; ++i) again.push_back(a.sample(logits));
  EXPECT_EQ(again, sa);
  p.seed = 78;
  Sampler c(p);
  std::vector<int32_t> sc;
  for (int i = 0; i < 200; ++i) sc.push_back(c.sample(logits));
  EXPECT_NE(sc, sa);
  // The PRNG is our own: pin its first outputs so a change of algorithm is noticed.
  Rng r(0);
  const uint64_t first = r.next_u64();
  Rng r2(0);
  EXPECT_EQ(first, r2.next_u64());
  EXPECT_NE(first, Rng(1).next_u64());
}

TEST(Sampler, EdgeCases) {
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> one = {ninf, ninf, 2.5f, ninf};
  for (float t : {0.0f, 0.5f, 1.0f, 5.0f}) {
    Sampler s({.temperature = t, .top_k = 3, .top_p = 0.5f, .min_p = 0.5f, .seed = 1});
    for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(one), 2);
  }
  Sampler s({});
  std::vector<float> all_ninf(5, ninf);
  EXPECT_THROW(s.sample(all_ninf), squeeze::Error);
  std::vector<float> nan = {0.0f, std::nanf(""), 1.0f};
  EXPECT_THROW(s.sample(nan), squeeze::Error);
  std::vector<float> pinf = {0.0f, std::numeric_limits<float>::infinity()};
  EXPECT_THROW(s.sample(pinf), squeeze::Error);
  EXPECT_THROW(s.sample(std::vector<float>{}), squeeze::Error);
  // Top-k ties at the boundary go to the lowest ids.
  Sampler tk({.temperature = 1.0f, .top_k = 2, .top_p = 1.0f, .min_p = 0.0f});
  const auto d = tk.distribution(std::vector<float>{1, 2, 2, 2, 0});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].id, 1);
  EXPECT_EQ(d[1].id, 2);
  // top_p = 0 keeps exactly the most probable token.
  Sampler p0({.temperature = 1.0f, .top_k = 0, .top_p = 0.0f, .min_p = 0.0f});
  EXPECT_EQ(p0.distribution(std::vector<float>{0.1f, 0.9f, 0.5f}).size(), 1u);
  EXPECT_EQ(p0.sample(std::vector<float>{0.1f, 0.9f, 0.5f}), 1);
}

TEST(Sampler, BadParametersNameTheField) {
  auto expect_error = [](SamplerParams p, const char* field) {
    try {
      Sampler s(p);
      ADD_FAILURE() << field;
    } catch (const squeeze::Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  expect_error({.temperature = std::nanf("")}, "temperature");
  expect_error({.top_p = -0.1f}, "top_p");
  expect_error({.min_p = 1.5f}, "min_p");
  expect_error({.repeat_penalty = 0.0f}, "repeat_penalty");
  expect_error({.penalty_last_n = -2}, "penalty_last_n");
}

TEST(Sampler, RepetitionPenaltyOverTheLastN) {
  // Token 0 positive, token 1 negative; a greedy sampler sees the penalised logits.
  std::vector<float> logits = {2.0f, -1.0f, 1.5f, -1.2f};
  Sampler s({.temperature = 0.0f, .repeat_penalty = 2.0f, .penalty_last_n = 2});
  EXPECT_EQ(s.sample(logits), 0);
  s.accept(0);  // 2.0 → 1.0 < 1.5
  EXPECT_EQ(s.sample(logits), 2);
  s.accept(2);  // 1.5 → 0.75, token 0 still at 1.0
  EXPECT_EQ(s.sample(logits), 0);
  s.accept(1);  // the window (2) now holds {2, 1}: token 0 is back to 2.0
  EXPECT_EQ(s.sample(logits), 0);
  // Negative logits are multiplied: -1.0 → -2.0 falls below -1.2.
  std::vector<float> neg = {-5.0f, -1.0f, -1.2f};
  Sampler n({.temperature = 0.0f, .repeat_penalty = 2.0f, .penalty_last_n = 4});
  EXPECT_EQ(n.sample(neg), 1);
  n.accept(1);
  EXPECT_EQ(n.sample(neg), 2);
  // Frequency and presence penalties count occurrences.
  std::vector<float> fl = {1.0f, 0.5f};
  Sampler f({.temperature = 0.0f, .frequency_penalty = 0.2f, .presence_penalty = 0.05f, .penalty_last_n = -1});
  f.accept(0);
  EXPECT_EQ(f.sample(fl), 0);  // 1.0 - 0.2 - 0.05 = 0.75
  f.accept(0);
  EXPECT_EQ(f.sample(fl), 0);  // 1.0 - 0.4 - 0.05 = 0.55 > 0.5
  f.accept(0);
  EXPECT_EQ(f.sample(fl), 1);  // 1.0 - 0.6 - 0.05 = 0.35 < 0.5
}
