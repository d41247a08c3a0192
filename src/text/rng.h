// text/rng.h — the sampler's own PRNG (xoshiro256**, seeded through splitmix64), so a
// seed gives the same tokens on every platform and standard library.
#pragma once

#include <cstdint>

namespace squeeze::text {

class Rng {
 public:
  explicit Rng(uint64_t seed) { reseed(seed); }

  void reseed(uint64_t seed) {
    // splitmix64 spreads any seed (0 included) over the 256-bit state.
    for (uint64_t& w : s_) {
      seed += 0x9E3779B97F4A7C15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      w = z ^ (z >> 31);
    }
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace squeeze::text
