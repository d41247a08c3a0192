// mok/router.h — the layer's router: linear H→E (+bias), softmax or sigmoid scores,
// top-k, gate weights normalised over the selected experts; and its backward.
#pragma once

#include <cstdint>
#include <vector>

#include "mok/config.h"

namespace squeeze::mok {

// Routing of one rank's tokens: for token t, slot k: expert[t*K+k] and gate[t*K+k].
struct Routing {
  int64_t tokens = 0;
  int K = 0;
  std::vector<int32_t> expert;  // [tokens, K]
  std::vector<float> gate;      // [tokens, K]

  // Throws squeeze::Error on a size mismatch, an expert id outside [0, E), a token
  // choosing one expert twice, or a non-finite gate.
  void validate(const MoeConfig& cfg) const;
};

// What the backward needs from the forward: the activated scores [tokens, E].
struct RouterCache {
  std::vector<float> scores;
};

// How one token's router logits become its experts and gates — the selection MoK's layer
// and the models' expert FFNs (model/forward.cpp) share: scores in f32 (a softmax over all
// E experts, or a sigmoid each), the K highest scores (ties to the lower expert id), in
// descending order, and their scores as gates, divided by their sum when `normalize`.
// (gpt-oss's order, top-k of the logits then a softmax over the k, gives the same values.)
struct ExpertSelection {
  int n_experts = 0;  // E
  int top_k = 0;      // K <= E
  Scoring scoring = Scoring::Softmax;
  bool normalize = true;
};
// logits [E] become the scores in place; expert [K] and gate [K] receive the selection.
// order is scratch of E entries.
void select_experts(const ExpertSelection& s, float* logits, int32_t* order, int32_t* expert, float* gate);

// x [tokens, H] -> Routing (select_experts with the gates normalised).
Routing route(const MoeConfig& cfg, const MoeWeights& w, const float* x, int64_t tokens, RouterCache* cache);

// dgate [tokens, K] (dL/dgate) -> accumulates dx [tokens, H], grads.router, grads.router_bias.
void route_backward(const MoeConfig& cfg, const MoeWeights& w, const float* x, const Routing& r,
                    const RouterCache& cache, const float* dgate, float* dx, MoeWeights& grads);

}  // namespace squeeze::mok
