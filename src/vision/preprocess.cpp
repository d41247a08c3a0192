// vision/preprocess.cpp — see preprocess.h.
#include "vision/preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.h"

namespace squeeze::vision {

namespace {

// CPython's hash of a tuple of two small non-negative ints (xxHash-based, 3.8+).
uint64_t python_tuple_hash(int64_t a, int64_t b) {
  constexpr uint64_t p1 = 11400714785074694791ULL, p2 = 14029467366897019727ULL, p5 = 2870177450012600261ULL;
  uint64_t acc = p5;
  for (int64_t lane : {a, b}) {
    acc += uint64_t(lane) * p2;
    acc = (acc << 31) | (acc >> 33);
    acc *= p1;
  }
  acc += 2 ^ (p5 ^ 3527539ULL);
  return acc == ~uint64_t(0) ? 1546275796 : acc;
}

// The order in which a fresh CPython set of these (at most 4, distinct) tuples iterates:
// an 8-slot table, each inserted at hash & 7 or, if taken, along CPython's perturbed
// probe sequence (the linear probes never apply to a table this small).
std::vector<std::pair<int64_t, int64_t>> python_set_order(const std::vector<std::pair<int64_t, int64_t>>& items) {
  constexpr uint64_t mask = 7;
  std::vector<int> slot_of(8, -1);
  for (size_t k = 0; k < items.size(); ++k) {
    const uint64_t hash = python_tuple_hash(items[k].first, items[k].second);
    uint64_t perturb = hash, i = hash & mask;
    while (slot_of[size_t(i)] >= 0) {
      perturb >>= 5;
      i = (i * 5 + 1 + perturb) & mask;
    }
    slot_of[size_t(i)] = int(k);
  }
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int k : slot_of)
    if (k >= 0) out.push_back(items[size_t(k)]);
  return out;
}

}  // namespace

GridSize smart_resize(int height, int width, int cell, int max_cells) {
  SQZ_CHECK(height > 0 && width > 0, "smart_resize: image of ", width, " x ", height, " pixels");
  SQZ_CHECK(cell > 0 && max_cells > 0, "smart_resize: cell ", cell, ", at most ", max_cells, " cells");
  double ideal_h = double(height) / cell, ideal_w = double(width) / cell;
  const double ratio = ideal_w / ideal_h;
  if (ideal_h * ideal_w > max_cells) {
    ideal_h = std::pow(double(max_cells) / ratio, 0.5);
    ideal_w = ideal_h * ratio;
  }
  // floor / ceil of each side, deduplicated as the reference's set, in its iteration order
  std::vector<std::pair<int64_t, int64_t>> product;
  for (double gh : {std::floor(ideal_h), std::ceil(ideal_h)})
    for (double gw : {std::floor(ideal_w), std::ceil(ideal_w)}) {
      const std::pair<int64_t, int64_t> c{int64_t(gh), int64_t(gw)};
      if (std::find(product.begin(), product.end(), c) == product.end()) product.push_back(c);
    }
  std::vector<std::pair<int64_t, int64_t>> candidates;
  for (const auto& c : python_set_order(product))
    if (c.first >= 1 && c.second >= 1 && c.first * c.second <= max_cells) candidates.push_back(c);
  if (candidates.empty())  // Python's round: half to even
    candidates.push_back({std::max<int64_t>(1, int64_t(std::nearbyint(ideal_h))),
                          std::max<int64_t>(1, int64_t(std::nearbyint(ideal_w)))});
  const double target = double(height) / double(width);
  auto best = candidates.front();  // min(): the first of equal keys
  for (const auto& c : candidates)
    if (std::fabs(double(c.first) / double(c.second) - target) < std::fabs(double(best.first) / double(best.second) - target))
      best = c;
  return {int(best.first * cell), int(best.second * cell)};
}

PixelPatches preprocess(const Image& img, const PreprocessOptions& opt) {
  SQZ_CHECK(opt.patch_size > 0 && opt.merge_size > 0, "image preprocessing: patch ", opt.patch_size, ", merge ",
            opt.merge_size);
  SQZ_CHECK(opt.max_image_tokens >= 1, "image preprocessing: at most ", opt.max_image_tokens, " image tokens");
  const int cell = opt.patch_size * opt.merge_size;
  const GridSize size = smart_resize(img.height, img.width, cell, opt.max_image_tokens);
  // The reference's grid can pass its own cap when one side is under a cell at the ideal
  // scale (a 1 x 5000 strip is 179 cells at a cap of 70); squeeze holds the cap instead.
  const int64_t cells = int64_t(size.height / cell) * (size.width / cell);
  SQZ_CHECK(cells <= opt.max_image_tokens, "a ", img.width, " x ", img.height, " image needs ", cells,
            " image tokens at its aspect ratio, more than the cap of ", opt.max_image_tokens,
            " (crop it, or raise the cap)");
  const Image resized = resize(img, size.width, size.height, opt.resample);
  const int P = opt.patch_size;
  PixelPatches out;
  out.patch_size = P;
  out.grid_h = size.height / P;
  out.grid_w = size.width / P;
  const size_t per_patch = size_t(3) * size_t(P) * size_t(P);
  out.values.resize(size_t(out.patches()) * per_patch);
  // rescale and normalise fused, as the reference does: (x − 255·mean) / (255·std) in f32
  const float mean = 255.0f * opt.mean, std = 255.0f * opt.std;
  for (int gy = 0; gy < out.grid_h; ++gy)
    for (int gx = 0; gx < out.grid_w; ++gx) {
      float* dst = out.values.data() + (size_t(gy) * size_t(out.grid_w) + size_t(gx)) * per_patch;
      for (int c = 0; c < 3; ++c)
        for (int py = 0; py < P; ++py)
          for (int px = 0; px < P; ++px)
            *dst++ = (float(resized.at(gy * P + py, gx * P + px, c)) - mean) / std;
    }
  return out;
}

}  // namespace squeeze::vision
