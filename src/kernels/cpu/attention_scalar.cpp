// kernels/cpu/attention_scalar.cpp — the float64 two-pass attention oracle, and the
// scalar online-softmax task kernel (the variant used where AVX2 is absent or head_dim % 8).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_kernel.h"

namespace squeeze::kernels::cpu {
namespace {

// Element d of a K or V row stored as `type`, as the f32 kv_decode_row gives (f16 and
// bf16 -> f32 are exact; q8_0 is the f32 product scale · code).
inline float load_elem(KvType type, const std::byte* row, int64_t d) {
  if (type == KvType::F32) {
    float f;
    std::memcpy(&f, row + d * 4, 4);
    return f;
  }
  if (type == KvType::Q8_0) {
    const std::byte* block = row + d / kKvQ8Block * (2 + kKvQ8Block);
    uint16_t h;
    std::memcpy(&h, block, 2);
    return f16_to_f32(h) * static_cast<float>(static_cast<int8_t>(block[2 + d % kKvQ8Block]));
  }
  uint16_t h;
  std::memcpy(&h, row + d * 2, 2);
  return type == KvType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

}  // namespace

void attention_reference(const AttentionParams& p, const KvLayerView& kv, const AttentionBatch& b) {
  p.validate();
  SQZ_CHECK(kv.n_kv_heads == p.n_kv_heads && kv.head_dim == p.head_dim, "attention: KV view shape differs from params");
  SQZ_CHECK(b.q != nullptr && b.out != nullptr, "attention: null q or out");
  const int64_t D = p.head_dim, G = p.n_heads / p.n_kv_heads;
  const int64_t qs = b.q_stride ? b.q_stride : p.n_heads * D, os = b.out_stride ? b.out_stride : p.n_heads * D;
  const double scale = p.effective_scale();
  std::vector<double> scores, acc(static_cast<size_t>(D));
  for (int64_t i = 0; i < b.n_queries; ++i) {
    const int64_t pos = b.pos0 + i;
    const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
    SQZ_CHECK(lo >= kv.pos_begin && pos < kv.pos_end, "attention: keys [", lo, ", ", pos, "] not all held (cache holds [",
              kv.pos_begin, ", ", kv.pos_end, "))");
    for (int64_t h = 0; h < p.n_heads; ++h) {
      const float* q = b.q + i * qs + h * D;
      const int64_t kvh = h / G;
      scores.assign(static_cast<size_t>(pos - lo + 1), 0.0);
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t k = lo; k <= pos; ++k) {
        const std::byte* row = kv.run(kvh, k, 1).k;
        double s = 0;
        for (int64_t d = 0; d < D; ++d) s += static_cast<double>(q[d]) * load_elem(kv.type, row, d);
        scores[static_cast<size_t>(k - lo)] = s * scale;
        mx = std::max(mx, s * scale);
      }
      // A sink logit joins the denominator only (two-pass: the max includes it).
      const double sink = p.sinks ? static_cast<double>(p.sinks[h]) : -std::numeric_limits<double>::infinity();
      mx = std::max(mx, sink);
      double sum = std::exp(sink - mx);
      for (double& s : scores) sum += (s = std::exp(s - mx));
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t k = lo; k <= pos; ++k) {
        const std::byte* row = kv.run(kvh, k, 1).v;
        const double w = scores[static_cast<size_t>(k - lo)] / sum;
        for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] += w * load_elem(kv.type, row, d);
      }
      float* o = b.out + i * os + h * D;
      for (int64_t d = 0; d < D; ++d) o[d] = static_cast<float>(acc[static_cast<size_t>(d)]);
    }
  }
}

namespace attn {

// One row at a time, one key at a time: the plain online softmax (running max m, running
// sum l, accumulator rescaled whenever the max grows).
void run_task_scalar(const Task& t) {
  const int64_t D = t.kv->head_dim;
  thread_local std::vector<float> acc;
  acc.resize(static_cast<size_t>(D));
  for (int64_t r = 0; r < t.rows(); ++r) {
    const float* q = t.q_row(r);
    const int64_t lo = t.row_lo(r), hi = t.row_hi(r);
    float m = -std::numeric_limits<float>::infinity(), l = 0;
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t k = lo; k < hi; ++k) {
      const KvLayerView::Run run = t.kv->run(t.kv_head, k, 1);
      float s = 0;
      for (int64_t d = 0; d < D; ++d) s += q[d] * load_elem(t.kv->type, run.k, d);
      s *= t.scale;
      if (s > m) {
        const float corr = std::exp(m - s);  // exp(-inf) = 0 on the first key
        l *= corr;
        for (float& a : acc) a *= corr;
        m = s;
      }
      const float w = std::exp(s - m);
      l += w;
      for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] += w * load_elem(t.kv->type, run.v, d);
    }
    if (t.finalize) {
      float* o = t.out_row(r);
      const float inv = finish_scale(t, r, m, l);
      for (int64_t d = 0; d < D; ++d) o[d] = acc[static_cast<size_t>(d)] * inv;
    } else {
      float* part = t.partial + r * (D + 2);
      part[0] = m;
      part[1] = l;
      std::copy(acc.begin(), acc.end(), part + 2);
    }
  }
}

}  // namespace attn
}  // namespace squeeze::kernels::cpu
