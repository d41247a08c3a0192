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

struct ReferenceResult {
  std::vector<double> out;       // [N, H]
  std::vector<int32_t> expert;   // [N, K] chosen experts
  std::vector<double> gate;      // [N, K]
};

struct ReferenceGrads {
  std::vector<double> dx;        // [N, H]
  RefWeights dw;                 // every weight's gradient
};

struct ReferenceOptions {
  bool emulate_payload = true;   // round like the wire when cfg's payload is bf16
};

// x [N, H] with N = any token count (usually R*T): forward of the layer.
ReferenceResult reference_forward(const MoeConfig& cfg, const RefWeights& w, const std::vector<double>& x,
                                  ReferenceOptions opt = {});
// dout [N, H] -> dx and weight gradients (recomputes the forward internally).
ReferenceGrads reference_backward(const MoeConfig& cfg, const RefWeights& w, const std::vector<double>& x,
                                  const std::vector<double>& dout, ReferenceOptions opt = {});

}  // namespace squeeze::mok
