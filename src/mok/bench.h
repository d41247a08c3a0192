// mok/bench.h — the dispatch/combine benchmark and the layer self-check behind
// `squeeze moe bench|test`; every rank calls them collectively.
#pragma once

#include <string>
#include <vector>

#include "mok/config.h"
#include "mok/dispatcher.h"
#include "mok/layer.h"
#include "mok/router.h"
#include "mok/transport.h"

namespace squeeze::mok {

// The median of a benchmark's samples (0 for none).
double median_of(std::vector<double> v);

// Rank r's routing for `tokens` tokens: K distinct experts per token drawn with
// probability ∝ 1/(e+1)^skew (0: balanced; ~1.2: Zipf-like skew); gates normalised.
Routing synthetic_routing(const MoeConfig& cfg, int rank, int64_t tokens, double skew, uint64_t seed);

struct BenchOptions {
  MoeShape shape;          // the payload shape (e.g. H = 7168)
  int64_t signal_hidden = 8;  // H of the tiny-payload run that measures signalling latency
  int iters = 10, warmup = 2;
  double skew = 0;
  std::string routing_name = "balanced";
};

struct BenchRow {
  std::string transport, method, routing;
  double signal_us = 0;    // tiny payload: dispatch start -> all rows visible (median of max over ranks)
  double known_us = 0;     // tiny payload: start -> owner knows what it receives
  double dispatch_us = 0, combine_us = 0;  // full payload, median of max over ranks
  double dispatch_gbs = 0, combine_gbs = 0;  // received payload bytes (all ranks, incl. local) / time
  double payload_kb = 0, meta_kb = 0;        // per rank per dispatch, to/from other ranks
  // With a link-modelled transport (mok/link_model.h), per rank per tiny-payload dispatch:
  // remote gets + puts + flag updates, and round trips (gets + remote flag polls).
  double remote_ops = 0, round_trips = 0;
};

// Pull, push-negotiated and push-private (each with its matching combine).
std::vector<BenchRow> bench_dispatch(Transport& t, const BenchOptions& opt);

struct VerifyResult {
  double out_err = 0, dx_err = 0, tol = 0;  // max abs error (norm-wise scaled) vs the reference
  double beyond_flips = 0;  // the larger error left after the reference's bf16-flip bounds; ok: <= tol
  bool ok = false;
};
// Forward + backward of MoeLayer against the float64 reference on all ranks' tokens.
VerifyResult verify_layer(Transport& t, const MoeConfig& cfg, LayerOptions opt, uint64_t seed);

}  // namespace squeeze::mok
