// mok/config.h — the MoE layer's shape, validated once, and every buffer size derived from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace squeeze::mok {

enum class Scoring { Softmax, Sigmoid };
// What travels between ranks: activations/gradients rounded to bf16, exact f32, or MXFP8
// (mok/mxfp8.h: E4M3 elements, one E8M0 scale per 32; H must be a multiple of 32).
enum class Payload { BF16, F32, MXFP8 };

const char* scoring_name(Scoring s);
const char* payload_name(Payload p);
Scoring parse_scoring(const std::string& s);
Payload parse_payload(const std::string& s);

struct MoeShape {
  int64_t tokens_per_rank = 0;  // T (a rank may route fewer; see Routing::tokens)
  int64_t hidden = 0;           // H
  int64_t inter = 0;            // I, the expert FFN's intermediate size
  int n_experts = 0;            // E
  int top_k = 0;                // K
  int n_ranks = 1;              // R, with E % R == 0
  Payload payload = Payload::BF16;
  Scoring scoring = Scoring::Softmax;
  bool shared_expert = false;   // one always-on SwiGLU expert (intermediate I) per token
};

// MoeConfig: a MoeShape that passed validation, plus the sizes every component uses.
// Construction throws squeeze::Error naming the first bad field.
class MoeConfig {
 public:
  explicit MoeConfig(const MoeShape& shape);

  const MoeShape& shape() const { return s_; }
  int64_t T() const { return s_.tokens_per_rank; }
  int64_t H() const { return s_.hidden; }
  int64_t I() const { return s_.inter; }
  int E() const { return s_.n_experts; }
  int K() const { return s_.top_k; }
  int R() const { return s_.n_ranks; }
  int experts_per_rank() const { return s_.n_experts / s_.n_ranks; }
  int owner_of(int expert) const { return expert / experts_per_rank(); }
  int local_index(int expert) const { return expert % experts_per_rank(); }

  // Bytes of one token row on the wire.
  size_t row_bytes() const {
    const auto H = static_cast<size_t>(s_.hidden);
    return s_.payload == Payload::F32 ? H * 4 : s_.payload == Payload::BF16 ? H * 2 : H + H / 32;
  }
  // Most rows one source can send one destination: a token picks distinct experts.
  int64_t max_rows_per_pair() const;
  // Most rows one rank can receive in a dispatch (all sources, all local experts).
  int64_t max_recv_rows() const { return max_rows_per_pair() * s_.n_ranks; }
  // Symmetric bytes one rank allocates for a Dispatcher (all buffers together).
  size_t dispatcher_bytes() const;

  std::string describe() const;

 private:
  MoeShape s_;
};

// Weights of the whole layer, row-major, in the "B holds N rows of length K" layout
// of gemm_nt: router [E, H] and bias [E] (the bias shifts selection and scores, the
// way DeepSeek-V3 balances load; tests use it to force skewed or empty experts);
// per expert gate/up [I, H] and down [H, I]. F is float for the layer, double for the
// reference and for gradients checked by finite differences.
template <typename F>
struct BasicExpertWeights {
  std::vector<F> gate, up, down;
};
template <typename F>
struct BasicMoeWeights {
  std::vector<F> router;                          // [E, H]
  std::vector<F> router_bias;                     // [E]
  std::vector<BasicExpertWeights<F>> experts;     // E of them
  BasicExpertWeights<F> shared;                   // empty unless shape.shared_expert

  // Zero-filled weights of the config's shape (used for gradients).
  static BasicMoeWeights zeros(const MoeConfig& cfg);
  // Every tensor, in a fixed order (for conversions, sums and finite differences).
  std::vector<std::vector<F>*> tensors();
  std::vector<const std::vector<F>*> tensors() const;
};
using ExpertWeights = BasicExpertWeights<float>;
using MoeWeights = BasicMoeWeights<float>;
using RefWeights = BasicMoeWeights<double>;

// Zero gradients for what one rank's layer writes: the replicated router (and shared
// expert) and its own experts; the other experts stay empty.
MoeWeights local_zeros(const MoeConfig& cfg, int rank);

// Deterministic random weights scaled so activations stay O(1); bias zero.
MoeWeights random_weights(const MoeConfig& cfg, uint64_t seed);
RefWeights to_double(const MoeWeights& w);

}  // namespace squeeze::mok
