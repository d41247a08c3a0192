// text/sampler.cpp — see sampler.h.
#include "text/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/error.h"

namespace squeeze::text {

Sampler::Sampler(const SamplerParams& p) : params_(p), rng_(p.seed) {
  SQZ_CHECK(!std::isnan(p.temperature), "sampler: temperature is NaN");
  SQZ_CHECK(std::isfinite(p.top_p) && p.top_p >= 0, "sampler: top_p must be >= 0 (got ", p.top_p, ")");
  SQZ_CHECK(std::isfinite(p.min_p) && p.min_p >= 0 && p.min_p <= 1, "sampler: min_p must be in [0, 1] (got ",
            p.min_p, ")");
  SQZ_CHECK(std::isfinite(p.repeat_penalty) && p.repeat_penalty > 0,
            "sampler: repeat_penalty must be > 0 (got ", p.repeat_penalty, ")");
  SQZ_CHECK(std::isfinite(p.frequency_penalty), "sampler: frequency_penalty is not finite");
  SQZ_CHECK(std::isfinite(p.presence_penalty), "sampler: presence_penalty is not finite");
  SQZ_CHECK(p.penalty_last_n >= -1, "sampler: penalty_last_n must be >= -1 (got ", p.penalty_last_n, ")");
}

void Sampler::accept(int32_t token) {
  if (params_.penalty_last_n == 0) return;
  history_.push_back(token);
  if (params_.penalty_last_n > 0 && history_.size() > static_cast<size_t>(params_.penalty_last_n)) {
    history_.erase(history_.begin());  // n is small (tens); a deque buys nothing here
  }
}

void Sampler::reset() {
  history_.clear();
  rng_.reseed(params_.seed);
}

void Sampler::apply_penalties(std::vector<float>& logits) const {
  const bool any = params_.repeat_penalty != 1.0f || params_.frequency_penalty != 0.0f ||
                   params_.presence_penalty != 0.0f;
  if (!any || history_.empty()) return;
  std::unordered_map<int32_t, int> count;
  for (int32_t t : history_) {
    SQZ_CHECK(t >= 0 && static_cast<size_t>(t) < logits.size(), "sampler: accepted token ", t,
              " is outside the vocabulary of ", logits.size());
    ++count[t];
  }
  for (const auto& [t, c] : count) {
    float& l = logits[t];
    l = l > 0 ? l / params_.repeat_penalty : l * params_.repeat_penalty;
    l -= static_cast<float>(c) * params_.frequency_penalty + params_.presence_penalty;
  }
}

std::vector<Candidate> Sampler::distribution(std::span<const float> logits) {
  SQZ_CHECK(!logits.empty(), "sampler: no logits");
  const auto n = static_cast<int32_t>(logits.size());
  // One pass that only compares (x < +inf is false for NaN and +inf); the culprit is
  // looked up afterwards, so the common path stays a plain scan.
  bool finite_or_ninf = true;
  for (float x : logits) finite_or_ninf &= x < INFINITY;
  if (!finite_or_ninf) {
    for (int32_t i = 0; i < n; ++i) {
      SQZ_CHECK(!std::isnan(logits[i]), "sampler: logit of token ", i, " is NaN");
      SQZ_CHECK(logits[i] != INFINITY, "sampler: logit of token ", i, " is +inf");
    }
  }
  const float* l = logits.data();
  if (params_.repeat_penalty != 1.0f || params_.frequency_penalty != 0.0f || params_.presence_penalty != 0.0f) {
    scratch_.assign(logits.begin(), logits.end());
    apply_penalties(scratch_);
    l = scratch_.data();
  }

  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (l[i] > l[best]) best = i;
  }
  const double m = l[best];
  SQZ_CHECK(m != -INFINITY, "sampler: every logit is -inf");
  if (params_.temperature <= 0) return {{best, 1.0}};

  auto before = [&](int32_t a, int32_t b) { return l[a] != l[b] ? l[a] > l[b] : a < b; };
  std::vector<int32_t> ids;
  const int32_t k = params_.top_k;
  if (k > 0 && k < n) {
    // Top-k: select the k-th largest value on a contiguous copy (no index indirection),
    // then take the tokens above it and, for ties at it, the lowest ids.
    std::vector<float> vals(l, l + n);
    std::nth_element(vals.begin(), vals.begin() + (k - 1), vals.end(), std::greater<float>());
    const float kth = vals[k - 1];
    int32_t above = 0;
    for (int32_t i = 0; i < n; ++i) above += l[i] > kth;
    int32_t ties = k - above;
    ids.reserve(k);
    for (int32_t i = 0; i < n; ++i) {
      if (l[i] > kth || (l[i] == kth && ties-- > 0)) {
        if (l[i] != -INFINITY) ids.push_back(i);
      }
    }
  } else {
    ids.reserve(logits.size());
    for (int32_t i = 0; i < n; ++i) {
      if (l[i] != -INFINITY) ids.push_back(i);
    }
  }
  double z_topk = 0;  // top-p measures mass against the top-k set, before min-p
  if (params_.top_p < 1.0f) {
    for (int32_t i : ids) z_topk += std::exp(l[i] - m);
  }
  // min-p keeps exp(l - m) >= min_p: a threshold on logits. Like top-k and top-p it
  // keeps a prefix of the sorted order, so cutting it before top-p gives the same set
  // as after, and it spares the sort most of the vocabulary.
  if (params_.min_p > 0) {
    const double floor = m + std::log(static_cast<double>(params_.min_p));
    std::erase_if(ids, [&](int32_t i) { return l[i] < floor; });
  }
  if (params_.top_p < 1.0f) {
    // The top-p prefix is usually short: sort a growing head of the list until it
    // holds enough mass, instead of sorting the whole vocabulary.
    const double target = static_cast<double>(params_.top_p) * z_topk;
    size_t head = std::min<size_t>(ids.size(), 256);
    for (;;) {
      std::partial_sort(ids.begin(), ids.begin() + head, ids.end(), before);
      double cum = 0;
      size_t keep = 0;
      while (keep < head) {
        cum += std::exp(l[ids[keep]] - m);
        ++keep;
        if (cum >= target) break;
      }
      if (cum >= target || head == ids.size()) {
        ids.resize(std::max<size_t>(keep, 1));
        break;
      }
      head = std::min(ids.size(), head * 8);
    }
  } else {
    std::sort(ids.begin(), ids.end(), before);
  }

  std::vector<Candidate> out;
  out.reserve(ids.size());
  double z = 0;
  const double inv_t = 1.0 / static_cast<double>(params_.temperature);
  for (int32_t i : ids) {
    const double d = l[i] - m;
    const double w = d == 0 ? 1.0 : std::exp(d * inv_t);  // d == 0: avoid 0·inf at tiny T
    out.push_back({i, w});
    z += w;
  }
  for (Candidate& c : out) c.p /= z;
  return out;
}

int32_t Sampler::sample(std::span<const float> logits) {
  const std::vector<Candidate> dist = distribution(logits);
  if (dist.size() == 1) return dist[0].id;
  const double u = rng_.uniform();
  double cum = 0;
  for (const Candidate& c : dist) {
    cum += c.p;
    if (u < cum) return c.id;
  }
  return dist.back().id;  // u within rounding of 1
}

}  // namespace squeeze::text
