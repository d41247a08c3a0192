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

// x [tokens, H] -> Routing. Ties in the top-k go to the lower expert id.
Routing route(const MoeConfig& cfg, const MoeWeights& w, const float* x, int64_t tokens, RouterCache* cache);

// dgate [tokens, K] (dL/dgate) -> accumulates dx [tokens, H], grads.router, grads.router_bias.
void route_backward(const MoeConfig& cfg, const MoeWeights& w, const float* x, const Routing& r,
                    const RouterCache& cache, const float* dgate, float* dx, MoeWeights& grads);

}  // namespace squeeze::mok
