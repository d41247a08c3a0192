// mok/reference.h — the single-process oracle: the whole layer, forward and backward,
// over all R*T tokens at once, in float64 with plain loops (no BLAS, no transport).
//
// With emulate_payload it rounds exactly where the distributed layer rounds its wire
// payload (bf16): token rows entering experts, expert outputs returning, output
// gradients entering experts, input gradients returning. Otherwise it is exact math.
#pragma once

#include <cstdint>
#include <vector>

#include "mok/config.h"

namespace squeeze::mok {

// Rounding flips. The reference rounds where the layer does, so the two differ by f32
// arithmetic only, unless one rounding lands on the other side of a bf16 midpoint: the
// layer's f32 value and the reference's f64 value straddle it. That can only happen to
// a value whose f64 result lies within the f32 error bound of a midpoint; the *_flip
// fields hold, per output value, the most such flips can move it (0 almost everywhere),
// so checks can hold everything else to the f32 bound.
struct ReferenceResult {
  std::vector<double> out;       // [N, H]
  std::vector<double> out_flip;  // [N, H] bound on |layer - reference| from flips
  std::vector<int32_t> expert;   // [N, K] chosen experts
  std::vector<double> gate;      // [N, K]
};

struct ReferenceGrads {
  std::vector<double> dx;        // [N, H]
  RefWeights dw;                 // every weight's gradient
  // Flip bounds (see ReferenceResult) for dx and the router; expert and shared-expert
  // gradients see only rows that round identically on both sides (inputs are f32).
  std::vector<double> dx_flip, router_flip, router_bias_flip;
};

struct ReferenceOptions {
  bool emulate_payload = true;   // round like the wire when cfg's payload is bf16 or MXFP8
};

// The f32 part of the layer-vs-reference bound, norm-wise (relative to max(1, max|ref|)):
// every value is at most a chain of H + I + E (router, expert projections) plus N (weight
// gradients summed over tokens) f32 accumulations, each 2^-24 relative; x4 covers the
// f32 exp/silu ulps on the way. Observed errors sit well below it (~1e-7 at the CLI's shape).
double layer_f32_tolerance(const MoeConfig& cfg, int64_t N);

// x [N, H] with N = any token count (usually R*T): forward of the layer.
ReferenceResult reference_forward(const MoeConfig& cfg, const RefWeights& w, const std::vector<double>& x,
                                  ReferenceOptions opt = {});
// dout [N, H] -> dx and weight gradients (recomputes the forward internally).
ReferenceGrads reference_backward(const MoeConfig& cfg, const RefWeights& w, const std::vector<double>& x,
                                  const std::vector<double>& dout, ReferenceOptions opt = {});

}  // namespace squeeze::mok
