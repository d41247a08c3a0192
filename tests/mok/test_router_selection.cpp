// tests/mok/test_router_selection.cpp — the expert selection MoK's layer and the models'
// expert FFNs share (mok::select_experts), against a float64 reference: softmax over all
// experts (or sigmoid), the top k in descending order with ties to the lower id, gates
// renormalised or not; and the grouping by expert every dispatch and combine follows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "mok/grouping.h"
#include "mok/router.h"

using namespace squeeze::mok;

namespace {

struct SelectionRef {
  std::vector<int32_t> expert;
  std::vector<double> gate;
};

SelectionRef reference_selection(const std::vector<float>& logits, int K, Scoring scoring, bool normalize) {
  const int E = static_cast<int>(logits.size());
  std::vector<double> s(logits.begin(), logits.end());
  if (scoring == Scoring::Softmax) {
    const double mx = *std::max_element(s.begin(), s.end());
    double sum = 0;
    for (double& v : s) sum += (v = std::exp(v - mx));
    for (double& v : s) v /= sum;
  } else {
    for (double& v : s) v = 1.0 / (1.0 + std::exp(-v));
  }
  std::vector<int32_t> order(static_cast<size_t>(E));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return s[a] > s[b]; });
  SelectionRef r;
  double chosen = 0;
  for (int k = 0; k < K; ++k) chosen += s[order[k]];
  for (int k = 0; k < K; ++k) {
    r.expert.push_back(order[k]);
    r.gate.push_back(normalize ? s[order[k]] / chosen : s[order[k]]);
  }
  return r;
}

// Logits whose scores differ by far more than f32 rounding, except where ties are made on
// purpose (equal logits give bit-equal f32 scores: the lower id must come first). Evenly
// spaced, shuffled, spread over up to ±25 (softmax) or ±8 (sigmoid, which saturates to 1.0f
// in f32 beyond ~17 and would tie there).
std::vector<float> selection_logits(int E, Scoring scoring, std::mt19937& rng, bool ties) {
  std::uniform_real_distribution<float> spread(0.5f, scoring == Scoring::Softmax ? 25.0f : 8.0f);
  const float half = spread(rng);
  std::vector<float> l(static_cast<size_t>(E));
  for (int e = 0; e < E; ++e) l[e] = half * (2.0f * static_cast<float>(e) / static_cast<float>(E) - 1.0f);
  std::shuffle(l.begin(), l.end(), rng);
  if (ties) {
    std::uniform_int_distribution<int> pick(0, E - 1);
    for (int i = 0; i < E / 3; ++i) l[static_cast<size_t>(pick(rng))] = l[static_cast<size_t>(pick(rng))];
  }
  return l;
}

}  // namespace

TEST(RouterSelection, MatchesFloat64ReferenceIncludingTies) {
  std::mt19937 rng(7);
  int tied_cases = 0;
  for (const auto& [E, K] : {std::pair{5, 3}, {6, 3}, {8, 2}, {32, 4}, {128, 8}, {3, 3}, {7, 1}}) {
    for (Scoring scoring : {Scoring::Softmax, Scoring::Sigmoid}) {
      for (bool normalize : {true, false}) {
        for (int trial = 0; trial < 40; ++trial) {
          const bool ties = trial % 2 == 1;
          const std::vector<float> logits = selection_logits(E, scoring, rng, ties);
          const SelectionRef want = reference_selection(logits, K, scoring, normalize);
          std::vector<float> scores = logits;
          std::vector<int32_t> order(static_cast<size_t>(E)), expert(static_cast<size_t>(K));
          std::vector<float> gate(static_cast<size_t>(K));
          select_experts({.n_experts = E, .top_k = K, .scoring = scoring, .normalize = normalize}, scores.data(),
                         order.data(), expert.data(), gate.data());
          SCOPED_TRACE(::testing::Message() << "E=" << E << " K=" << K << " trial " << trial);
          EXPECT_EQ(expert, want.expert);
          for (int k = 0; k < K; ++k) EXPECT_NEAR(gate[k], want.gate[k], 2e-6 * std::max(1.0, want.gate[k]));
          if (ties) {
            for (int k = 0; k + 1 < K; ++k)
              if (logits[want.expert[k]] == logits[want.expert[k + 1]]) {
                ++tied_cases;
                EXPECT_LT(expert[k], expert[k + 1]);
              }
          }
        }
      }
    }
  }
  EXPECT_GT(tied_cases, 20);  // the tie cases did reach the top k
}

TEST(RouterSelection, GroupingListsEverySlotOnceExpertsAscendingTokensAscending) {
  std::mt19937 rng(3);
  const int E = 6, K = 3, tokens = 50;
  std::vector<int32_t> expert;
  for (int t = 0; t < tokens; ++t) {
    std::vector<int32_t> ids(E);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    expert.insert(expert.end(), ids.begin(), ids.begin() + K);
  }
  const ExpertGrouping g = group_by_expert(expert, E);
  ASSERT_EQ(g.begin.back(), tokens * K);
  std::vector<int> seen(static_cast<size_t>(tokens * K), 0);
  for (int e = 0; e < E; ++e) {
    EXPECT_EQ(g.begin[e + 1] - g.begin[e], g.count[e]);
    for (int64_t i = g.begin[e]; i < g.begin[e + 1]; ++i) {
      EXPECT_EQ(expert[g.slots[i]], e);
      ++seen[g.slots[i]];
      if (i > g.begin[e]) EXPECT_LT(g.slots[i - 1], g.slots[i]);
    }
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
}
