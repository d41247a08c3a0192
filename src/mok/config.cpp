// mok/config.cpp — MoeConfig validation and buffer sizes; weight initialisation.
#include "mok/config.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include "core/error.h"

namespace squeeze::mok {

const char* scoring_name(Scoring s) { return s == Scoring::Softmax ? "softmax" : "sigmoid"; }
const char* payload_name(Payload p) { return p == Payload::BF16 ? "bf16" : p == Payload::F32 ? "f32" : "mxfp8"; }

Scoring parse_scoring(const std::string& s) {
  if (s == "softmax") return Scoring::Softmax;
  if (s == "sigmoid") return Scoring::Sigmoid;
  fail("unknown scoring '", s, "' (expected softmax or sigmoid)");
}
Payload parse_payload(const std::string& s) {
  if (s == "bf16") return Payload::BF16;
  if (s == "f32") return Payload::F32;
  if (s == "mxfp8") return Payload::MXFP8;
  fail("unknown payload '", s, "' (expected bf16, f32 or mxfp8)");
}

MoeConfig::MoeConfig(const MoeShape& s) : s_(s) {
  // Limits keep every derived size inside int32 row indices and sane allocations.
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  SQZ_CHECK(s.tokens_per_rank >= 0 && s.tokens_per_rank <= kMaxDim, "moe config: tokens per rank T=",
            s.tokens_per_rank, " must be in [0, ", kMaxDim, "]");
  SQZ_CHECK(s.hidden >= 1 && s.hidden <= kMaxDim, "moe config: hidden H=", s.hidden, " must be in [1, ", kMaxDim, "]");
  SQZ_CHECK(s.inter >= 1 && s.inter <= kMaxDim, "moe config: intermediate I=", s.inter, " must be in [1, ", kMaxDim,
            "]");
  SQZ_CHECK(s.payload != Payload::MXFP8 || s.hidden % 32 == 0, "moe config: an mxfp8 payload needs H=", s.hidden,
            " to be a multiple of 32 (the scale block)");
  SQZ_CHECK(s.n_experts >= 1 && s.n_experts <= 4096, "moe config: experts E=", s.n_experts, " must be in [1, 4096]");
  SQZ_CHECK(s.top_k >= 1 && s.top_k <= s.n_experts, "moe config: top-k K=", s.top_k, " must be in [1, E=", s.n_experts,
            "]");
  SQZ_CHECK(s.n_ranks >= 1 && s.n_ranks <= 1024, "moe config: ranks R=", s.n_ranks, " must be in [1, 1024]");
  SQZ_CHECK(s.n_experts % s.n_ranks == 0, "moe config: experts E=", s.n_experts, " must be divisible by ranks R=",
            s.n_ranks);
  SQZ_CHECK(s.tokens_per_rank * s.top_k * int64_t{s.n_ranks} < (int64_t{1} << 31),
            "moe config: T*K*R = ", s.tokens_per_rank * s.top_k * int64_t{s.n_ranks}, " rows exceed 2^31");
}

int64_t MoeConfig::max_rows_per_pair() const {
  return s_.tokens_per_rank * std::min(s_.top_k, experts_per_rank());
}

size_t MoeConfig::dispatcher_bytes() const {
  // Must agree with Dispatcher's layout (dispatcher.cpp checks it).
  const size_t rb = row_bytes(), T = size_t(s_.tokens_per_rank), K = size_t(s_.top_k), R = size_t(s_.n_ranks);
  const size_t EL = size_t(experts_per_rank()), E = size_t(s_.n_experts), cap = size_t(max_recv_rows());
  return T * rb                  // published tokens (pull)
         + 8 + T * K * 8         // published routing: token count, expert ids, gates
         + R * E * 4             // count matrix (push-negotiated)
         + R * EL * 4            // private counts (push-private)
         + cap * rb              // receive rows (push)
         + cap * 12              // receive row metadata (push): token, slot, gate
         + (EL * R + 1) * 8      // segment starts (pull combine)
         + cap * rb              // published expert outputs (pull combine)
         + T * K * rb;           // combine receive slots (push combine)
}

std::string MoeConfig::describe() const {
  std::ostringstream o;
  o << "T=" << s_.tokens_per_rank << " H=" << s_.hidden << " I=" << s_.inter << " E=" << s_.n_experts
    << " K=" << s_.top_k << " R=" << s_.n_ranks << " payload=" << payload_name(s_.payload)
    << " scoring=" << scoring_name(s_.scoring) << (s_.shared_expert ? " +shared" : "");
  return o.str();
}

namespace {
template <typename F>
BasicExpertWeights<F> expert_zeros(const MoeConfig& c) {
  return {std::vector<F>(size_t(c.I() * c.H())), std::vector<F>(size_t(c.I() * c.H())),
          std::vector<F>(size_t(c.H() * c.I()))};
}
void fill(std::vector<float>& v, std::mt19937_64& rng, double scale) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : v) x = float(scale) * u(rng);
}
}  // namespace

MoeWeights local_zeros(const MoeConfig& c, int rank) {
  MoeWeights w;
  w.router.assign(size_t(c.E() * c.H()), 0.0f);
  w.router_bias.assign(size_t(c.E()), 0.0f);
  w.experts.resize(size_t(c.E()));
  const int EL = c.experts_per_rank();
  for (int e = rank * EL; e < (rank + 1) * EL; ++e) w.experts[size_t(e)] = expert_zeros<float>(c);
  if (c.shape().shared_expert) w.shared = expert_zeros<float>(c);
  return w;
}

template <typename F>
BasicMoeWeights<F> BasicMoeWeights<F>::zeros(const MoeConfig& c) {
  BasicMoeWeights<F> w;
  w.router.assign(size_t(c.E() * c.H()), F(0));
  w.router_bias.assign(size_t(c.E()), F(0));
  for (int e = 0; e < c.E(); ++e) w.experts.push_back(expert_zeros<F>(c));
  if (c.shape().shared_expert) w.shared = expert_zeros<F>(c);
  return w;
}

template <typename F>
std::vector<std::vector<F>*> BasicMoeWeights<F>::tensors() {
  std::vector<std::vector<F>*> t{&router, &router_bias};
  for (auto& e : experts) t.insert(t.end(), {&e.gate, &e.up, &e.down});
  t.insert(t.end(), {&shared.gate, &shared.up, &shared.down});
  return t;
}
template <typename F>
std::vector<const std::vector<F>*> BasicMoeWeights<F>::tensors() const {
  auto t = const_cast<BasicMoeWeights<F>*>(this)->tensors();
  return {t.begin(), t.end()};
}

template struct BasicMoeWeights<float>;
template struct BasicMoeWeights<double>;

MoeWeights random_weights(const MoeConfig& c, uint64_t seed) {
  MoeWeights w = MoeWeights::zeros(c);
  std::mt19937_64 rng(seed);
  // Uniform(-a, a) has variance a^2/3: a = sqrt(3/fan_in) keeps outputs near unit scale.
  const double in_h = std::sqrt(3.0 / double(c.H())), in_i = std::sqrt(3.0 / double(c.I()));
  fill(w.router, rng, in_h);
  for (auto& e : w.experts) {
    fill(e.gate, rng, in_h);
    fill(e.up, rng, in_h);
    fill(e.down, rng, in_i);
  }
  if (c.shape().shared_expert) {
    fill(w.shared.gate, rng, in_h);
    fill(w.shared.up, rng, in_h);
    fill(w.shared.down, rng, in_i);
  }
  return w;
}

RefWeights to_double(const MoeWeights& w) {
  RefWeights d;
  auto src = w.tensors();
  d.experts.resize(w.experts.size());
  auto dst = d.tensors();
  for (size_t i = 0; i < src.size(); ++i) dst[i]->assign(src[i]->begin(), src[i]->end());
  return d;
}

}  // namespace squeeze::mok
