// quant/scale_search.h — the searches behind the reference quantizers: for a small
// group of values, find the scale (and min) whose rounded codes minimise the
// (weighted) squared reconstruction error. Shared by every block type.
#pragma once

#include <cstdint>

namespace squeeze::quant {

// Candidate scales tried around the plain amax/qmax choice: the group's extreme value is
// mapped to qmax + k·kSearchStep codes for k in [-kSearchSteps, kSearchSteps] (a tenth
// of a code apart), each candidate's rounded codes then refitted by least squares.
inline constexpr int kSearchSteps = 10;
inline constexpr float kSearchStep = 0.1f;

// x[i] ≈ d·q[i], q in [qmin, qmax] (qmin < 0 < qmax). The value of largest magnitude is
// first mapped to qmin (the longer side for ranges like [-8, 7]); candidate scales
// around it are rounded and refitted by weighted least squares. w null = uniform.
// Returns d (possibly negative); q receives the codes for that d.
float search_symmetric(int n, const float* x, const float* w, int qmin, int qmax, int8_t* q);

// Which mins search_affine may choose.
enum class AffineMin {
  non_negative,  // m ≥ 0: the Q4_K/Q5_K sub-block form (mins stored unsigned, subtracted)
  free,          // any sign: Q4_1/Q5_1 store the offset as a signed f16
};

// x[i] ≈ s·q[i] − m, q in [0, qmax], s ≥ 0. Candidates span the group's range
// ([min(x,0), max(x)] when m must be ≥ 0, else [min(x), max(x)]); each is refitted with
// a 2×2 weighted least squares for (s, m), keeping m ≥ 0 when asked.
// Returns s; m and the codes q are written.
float search_affine(int n, const float* x, const float* w, int qmax, float* m, uint8_t* q,
                    AffineMin mins = AffineMin::non_negative);

// Element weights for importance-weighted quantization of one block: w[i] =
// importance[i]·sqrt(σ² + x[i]²) with σ² the block's mean square. importance null →
// writes nothing and returns false (callers then use uniform weights).
bool importance_weights(int n, const float* x, const float* importance, float* w);

// Round to nearest, ties to even (the rounding of the SIMD activation quantizers).
int nearest_int(float v);

}  // namespace squeeze::quant
