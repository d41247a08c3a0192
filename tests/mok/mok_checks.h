// tests/mok/mok_checks.h — self-verifying checks that run on one rank over any
// Transport (in-process threads or MPI processes). Each throws squeeze::Error naming
// the first mismatch; the in-process and MPI test drivers call them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mok/config.h"
#include "mok/dispatcher.h"
#include "mok/layer.h"
#include "mok/router.h"
#include "mok/transport.h"

namespace squeeze::mok::testing {

enum class RouteMode { Balanced, Skewed, OneExpert, EmptyExperts };
const char* route_mode_name(RouteMode m);

// Tokens on rank r: T, except that `zero_rank` (if >= 0) has none.
int64_t tokens_on(const MoeConfig& cfg, int rank, int zero_rank);

// A deterministic random routing of rank r's tokens (distinct experts per token).
Routing make_routing(const MoeConfig& cfg, int rank, int64_t tokens, RouteMode mode, uint64_t seed);

// Dispatch rows tagged with (source rank, token): every received row, its metadata and
// the per-expert counts are compared with a naive reference built from all routings;
// then combine(identity) must return K copies (unweighted) / the gate-sum (weighted),
// and the cached dispatch must return the forward rows bit for bit.
void check_dispatch_tagged(Transport& t, const MoeConfig& cfg, DispatchStyle ds, CombineStyle cs, RouteMode mode,
                           int zero_rank, uint64_t seed);

// Router biases that force a routing mode through the layer's own router.
void bias_router(const MoeConfig& cfg, MoeWeights& w, RouteMode mode);

// Forward and backward of MoeLayer against reference_forward/backward on all tokens.
// Returns this rank's forward output (for bit-identity checks across runs).
std::vector<float> check_layer(Transport& t, const MoeConfig& cfg, LayerOptions opt, RouteMode mode, int zero_rank,
                               uint64_t seed);

}  // namespace squeeze::mok::testing
