// train/distill.cpp — see distill.h.
#include "train/distill.h"

#include <cmath>

#include "core/error.h"
#include "train/teacher_cache.h"

namespace squeeze::train {
namespace {

// The teacher's top-k for a micro-batch of windows: from the cache where it has them,
// from one teacher forward over the missing windows otherwise (then stored).
TopKTeacher cached_topk(GlimmerModel& teacher, TeacherTopKCache& cache, ThreadPool& pool, std::span<const int32_t> inputs,
                        int64_t seq_len, float temperature) {
  const int64_t K = cache.key().k, n_windows = static_cast<int64_t>(inputs.size()) / seq_len;
  const auto row = static_cast<size_t>(seq_len * K);
  TopKTeacher out;
  out.k = K, out.temperature = temperature;
  out.ids.resize(static_cast<size_t>(n_windows) * row);
  out.logprobs.resize(out.ids.size());
  std::vector<int64_t> missing;
  for (int64_t w = 0; w < n_windows; ++w)
    if (!cache.lookup(inputs.subspan(static_cast<size_t>(w * seq_len), static_cast<size_t>(seq_len)),
                      std::span(out.ids).subspan(static_cast<size_t>(w) * row, row),
                      std::span(out.logprobs).subspan(static_cast<size_t>(w) * row, row)))
      missing.push_back(w);
  if (missing.empty()) return out;
  std::vector<int32_t> batch;
  for (int64_t w : missing)
    batch.insert(batch.end(), inputs.begin() + w * seq_len, inputs.begin() + (w + 1) * seq_len);
  Tape<float> tt(&pool);
  const Var tl = teacher.forward(tt, batch, seq_len, /*with_grad=*/false);
  TopKTeacher fresh = topk_teacher(std::span<const float>(tt.value(tl), static_cast<size_t>(tt.size(tl))), tt.rows(tl),
                                   tt.cols(tl), K, temperature);
  round_like_cache(fresh.logprobs);
  for (size_t m = 0; m < missing.size(); ++m) {
    const auto src = m * row, dst = static_cast<size_t>(missing[m]) * row;
    std::copy_n(fresh.ids.begin() + static_cast<std::ptrdiff_t>(src), row, out.ids.begin() + static_cast<std::ptrdiff_t>(dst));
    std::copy_n(fresh.logprobs.begin() + static_cast<std::ptrdiff_t>(src), row,
                out.logprobs.begin() + static_cast<std::ptrdiff_t>(dst));
    cache.append(std::span(batch).subspan(m * static_cast<size_t>(seq_len), static_cast<size_t>(seq_len)),
                 std::span(fresh.ids).subspan(src, row), std::span(fresh.logprobs).subspan(src, row));
  }
  return out;
}

}  // namespace

LossFn distillation_loss(GlimmerModel& teacher, const DistillParams& dp) {
  KlParams kl = dp.kl;
  SQZ_CHECK(std::isfinite(kl.temperature) && kl.temperature > 0, "distillation: temperature must be positive");
  SQZ_CHECK(dp.topk >= 0 && dp.topk <= teacher.config().n_vocab, "distillation: top-k ", dp.topk,
            " outside [0, ", teacher.config().n_vocab, "]");
  SQZ_CHECK(dp.hard_label_weight >= 0 && dp.hard_label_weight <= 1, "distillation: hard-label weight ",
            dp.hard_label_weight, " outside [0, 1]");
  if (dp.cache) {
    const TeacherCacheKey& key = dp.cache->key();
    SQZ_CHECK(dp.topk > 0 && key.k == dp.topk && key.temperature == kl.temperature &&
                  key.vocab == teacher.config().n_vocab,
              dp.cache->path(), ": a teacher cache needs the same top-k, temperature and vocabulary as the run");
  }
  if (kl.scale == 0) kl.scale = kl.temperature * kl.temperature;
  const double alpha = dp.hard_label_weight;
  if (alpha > 0) kl.scale *= 1 - alpha;
  return [&teacher, kl, alpha, topk = dp.topk, cache = dp.cache](Tape<float>& t, Var logits, std::span<const int32_t> inputs,
                                                                  std::span<const int32_t> targets, int64_t seq_len) {
    SQZ_CHECK(t.cols(logits) == teacher.config().n_vocab, "distillation: the student's vocabulary (", t.cols(logits),
              ") differs from the teacher's (", teacher.config().n_vocab, ")");
    Var loss;
    if (cache) {
      SQZ_CHECK(cache->key().seq_len == seq_len, cache->path(), ": holds windows of ", cache->key().seq_len,
                " tokens, the run's are ", seq_len);
      loss = kl_divergence_topk(t, logits, cached_topk(teacher, *cache, t.pool(), inputs, seq_len, kl.temperature), kl,
                                targets);
    } else {
      Tape<float> tt(&t.pool());
      const Var tl = teacher.forward(tt, inputs, seq_len, /*with_grad=*/false);
      const std::span<const float> teacher_logits(tt.value(tl), static_cast<size_t>(tt.size(tl)));
      loss = topk > 0 ? kl_divergence_topk(t, logits, topk_teacher(teacher_logits, tt.rows(tl), tt.cols(tl), topk, kl.temperature),
                                           kl, targets)
                      : kl_divergence(t, logits, teacher_logits, kl, targets);
    }
    if (alpha > 0) loss = add(t, loss, scale(t, cross_entropy(t, logits, targets), alpha));
    return loss;
  };
}

}  // namespace squeeze::train
