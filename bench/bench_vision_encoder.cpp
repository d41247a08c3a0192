// bench/bench_vision_encoder.cpp — the vision encoder at the released tower's shape
// (50 × 1536, MLP 8960, 16 heads, adapter 6144 → 4096 → 4096 → 6656) with random
// bf16-valued weights, on square images of the given image-token counts: seconds per
// image, image tokens/s, and the achieved rate as a fraction of this machine's f32 FMA
// peak measured in the same run (every thread at once). Minutes per image on 2 cores: a
// benchmark, never a test.
//   bench_vision_encoder [TOKENS,...] [LAYERS]   (defaults: 1024,4096 and 50)
// With fewer layers the first LAYERS blocks of the released pattern run (full attention
// on every 4th), and the per-image figures say so.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fma_chains.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "model/companion_plan.h"
#include "vision/encoder.h"

namespace {

using Clock = std::chrono::steady_clock;

// GFLOP/s of every thread running FMA chains at once: the best of 5 runs of a few seconds
// each (on a shared machine a short run can lose its core for part of the time).
double fma_peak_gflops(int threads) {
  const bool wide = squeeze::cpu_features().has_avx512();
  const int lanes = wide ? 16 : 8;
  const int64_t iters = 200'000'000;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    std::vector<std::thread> ts;
    std::vector<float> sink(static_cast<size_t>(threads));
    const auto t0 = Clock::now();
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        sink[size_t(t)] = wide ? squeeze::bench::fma_chains_avx512(iters) : squeeze::bench::fma_chains_avx2(iters);
      });
    for (auto& t : ts) t.join();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, double(threads) * double(iters) * 12 * lanes * 2 / s / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> tokens{1024, 4096};
  if (argc > 1) {
    tokens.clear();
    for (std::string s = argv[1]; !s.empty();) {
      const size_t comma = s.find(',');
      tokens.push_back(std::stoll(s.substr(0, comma)));
      s = comma == std::string::npos ? "" : s.substr(comma + 1);
    }
  }
  const int64_t layers = argc > 2 ? std::stoll(argv[2]) : 50;
  squeeze::model::VisionShape shape = squeeze::model::released_muse_glimmer_vision();
  squeeze::vision::EncoderConfig c;
  c.layers = layers;
  c.width = shape.width;
  c.mlp = shape.mlp;
  c.heads = 16;
  c.patch = shape.patch;
  c.pos_grid = shape.pos_grid;
  c.merge = shape.merge;
  c.window = shape.pos_grid;
  c.adapter_hidden = shape.adapter_hidden;
  c.text_width = shape.text_width;
  for (int64_t i = 0; i < layers; ++i) c.full_attention.push_back((i + 1) % 4 == 0 || i == 49);
  squeeze::ThreadPool pool;
  std::printf("# vision encoder, released tower shape with random bf16-valued weights, %lld of 50 blocks, %d threads\n",
              static_cast<long long>(layers), pool.size());
  const double peak = fma_peak_gflops(pool.size());
  std::printf("# f32 FMA peak, %d threads at once: %.1f GFLOP/s\n", pool.size(), peak);
  auto t0 = Clock::now();
  const auto enc = squeeze::vision::VisionEncoder::random(c, 1);
  std::printf("# random weights: %.1f s\n", std::chrono::duration<double>(Clock::now() - t0).count());
  std::printf("| image tokens | patches | TFLOP | seconds | image tokens/s | GFLOP/s | of FMA peak |\n|---|---|---|---|---|---|---|\n");
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<float> u(-1, 1);
  shape.layers = layers;
  for (int64_t t : tokens) {
    const auto cells = int64_t(std::llround(std::sqrt(double(t))));
    squeeze::vision::PixelPatches px;
    px.grid_h = px.grid_w = int(cells * c.merge);
    px.patch_size = int(c.patch);
    px.values.resize(size_t(px.patches() * 3 * c.patch * c.patch));
    for (float& v : px.values) v = u(rng);
    const auto cost = squeeze::model::vision_image_cost(shape, px.grid_h, px.grid_w);
    t0 = Clock::now();
    const auto out = enc.encode(px, &pool);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    const double gflops = cost.total_flops() / s / 1e9;
    std::printf("| %lld | %lld | %.2f | %.1f | %.2f | %.1f | %.0f%% |\n", static_cast<long long>(out.tokens),
                static_cast<long long>(px.patches()), cost.total_flops() / 1e12, s, double(out.tokens) / s, gflops,
                100.0 * gflops / peak);
    std::fflush(stdout);
  }
  return 0;
}
