// quantize/dynamic.cpp — measure each tensor's error per candidate type; allocate bits.
#include "quantize/dynamic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <queue>

#include "core/error.h"
#include "core/progress.h"
#include "quant/quantize.h"

namespace squeeze::quantize {
namespace {

// Share of the target the cheapest plan may exceed it by and still be taken (the
// acceptance bound of the plan: within 2% of the target).
constexpr double kTargetTolerance = 0.02;

struct Option {
  GgmlType type;
  double bits;
  double cost;  // n_elements · error²
  double error;
};

// The lower convex hull of (bits, cost) with cost decreasing in bits: the options a
// bit-budget allocation can want (any other is beaten by a mix of its neighbours).
std::vector<Option> hull(std::vector<Option> opts) {
  std::sort(opts.begin(), opts.end(), [](const Option& a, const Option& b) {
    return a.bits != b.bits ? a.bits < b.bits : a.cost < b.cost;
  });
  std::vector<Option> h;
  for (const Option& o : opts) {
    if (!h.empty() && o.cost >= h.back().cost) continue;  // more (or equal) bits, no less error
    // Pop while the last point lies on or above the segment from the one before it to o.
    while (h.size() >= 2) {
      const Option& a = h[h.size() - 2];
      const Option& b = h.back();
      const double cross = (b.bits - a.bits) * (o.cost - a.cost) - (o.bits - a.bits) * (b.cost - a.cost);
      if (cross > 0) break;  // b is below the chord: keep it
      h.pop_back();
    }
    h.push_back(o);
  }
  return h;
}

}  // namespace

std::vector<TypeError> measure_tensor(const SourceTensor& src, const DynamicOptions& o, bool* sampled) {
  ThreadPool& pool = o.pool ? *o.pool : default_thread_pool();
  const int64_t cols = src.row_length(), rows = src.n_rows();
  // Evenly spaced rows when the tensor is large: whole rows, so every block is a real one.
  const int64_t want = std::clamp<int64_t>(o.max_sample_elements / cols, 1, rows);
  const int64_t stride = (rows + want - 1) / want;
  const int64_t n = (rows + stride - 1) / stride;
  std::vector<float> x(static_cast<size_t>(n * cols));
  if (stride == 1) {
    source_rows_f32(pool, src, 0, rows, x.data());
  } else {
    const auto& tr = quant::traits(src.type);
    pool.parallel_for(0, n, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) tr.dequantize_row(src.info->row(i * stride).data(), x.data() + i * cols, cols);
    });
  }
  if (sampled) *sampled = stride > 1;
  const auto importance = importance_for(o.imatrix, src);
  std::vector<TypeError> out;
  for (GgmlType t : o.candidates) {
    if (cols % gguf::ggml_type_info(t).block_size != 0) continue;
    const auto err = quant::round_trip_error(
        pool, {.type = t, .src = x.data(), .rows = n, .cols = cols, .importance = importance ? importance->data() : nullptr});
    out.push_back({.type = t, .bits = quant::bits_per_weight(t) * static_cast<double>(src.n_elements()),
                   .error = err.weighted_rel});
  }
  return out;
}

Measurements measure_plan(const Plan& plan, const DynamicOptions& o) {
  Measurements m;
  int64_t work = 0;
  for (size_t i = 0; i < plan.tensors.size(); ++i)
    if (!plan.tensors[i].fixed) m.free.push_back(i), work += plan.tensors[i].src->n_elements();
  std::optional<Progress> progress;
  if (o.progress) progress.emplace("measuring", work);
  for (size_t i : m.free) {
    const SourceTensor& src = *plan.tensors[i].src;
    bool sampled = false;
    m.options.push_back(measure_tensor(src, o, &sampled));
    m.sampled.push_back(sampled);
    SQZ_CHECK(!m.options.back().empty(), "tensor '", src.name, "': no candidate type fits its rows");
    if (progress) progress->advance(src.n_elements(), src.name);
  }
  return m;
}

namespace {

// The budget in bits of the whole file.
double budget_bits(const Plan& plan, const DynamicOptions& o) {
  const double budget = o.target_bytes > 0 ? 8.0 * static_cast<double>(o.target_bytes)
                                           : o.target_bpw * static_cast<double>(plan.n_elements());
  SQZ_CHECK(budget > 0, "the dynamic plan needs --target-bpw or --target-size");
  return budget;
}

// Throws when the smallest plan (`min_bits`) exceeds the target by more than the tolerance.
void check_reachable(const Plan& plan, double min_bits, double budget) {
  const double n = static_cast<double>(plan.n_elements());
  SQZ_CHECK(min_bits <= budget * (1 + kTargetTolerance), "target ", budget / n,
            " bpw is below the smallest dynamic plan for this model (", min_bits / n,
            " bpw with the cheapest candidates)");
}

}  // namespace

void plan_dynamic(Plan& plan, const DynamicOptions& o) {
  // A free tensor that no candidate fits (e.g. --candidates Q4_K,Q5_K and a row of 96)
  // keeps make_plan's row fallback, as a fixed choice.
  for (TensorPlan& tp : plan.tensors) {
    if (tp.fixed) continue;
    bool any = false;
    for (GgmlType t : o.candidates) any = any || tp.src->row_length() % gguf::ggml_type_info(t).block_size == 0;
    if (!any) tp.fixed = true;
  }
  // The smallest plan's size needs no measurement: refuse an unreachable target up front.
  double min_bits = 0;
  for (const TensorPlan& tp : plan.tensors) {
    if (tp.fixed) {
      min_bits += 8.0 * static_cast<double>(tp.bytes());
      continue;
    }
    double cheapest = INFINITY;
    for (GgmlType t : o.candidates)
      if (tp.src->row_length() % gguf::ggml_type_info(t).block_size == 0)
        cheapest = std::min(cheapest, quant::bits_per_weight(t) * static_cast<double>(tp.src->n_elements()));
    SQZ_CHECK(std::isfinite(cheapest), "tensor '", tp.src->name, "': no candidate type fits its rows");
    min_bits += cheapest;
  }
  check_reachable(plan, min_bits, budget_bits(plan, o));
  allocate(plan, measure_plan(plan, o), o);
}

void allocate(Plan& plan, const Measurements& m, const DynamicOptions& o) {
  const double total_elements = static_cast<double>(plan.n_elements());
  const double budget = budget_bits(plan, o);
  const double target_bpw = budget / total_elements;

  const std::vector<size_t>& free = m.free;
  std::vector<std::vector<Option>> hulls(free.size()), all(free.size());
  for (size_t k = 0; k < free.size(); ++k) {
    TensorPlan& tp = plan.tensors[free[k]];
    tp.sampled = m.sampled[k];
    for (const TypeError& e : m.options[k])
      all[k].push_back({e.type, e.bits, static_cast<double>(tp.src->n_elements()) * e.error * e.error, e.error});
    hulls[k] = hull(all[k]);
  }

  // Start every free tensor at its cheapest hull point.
  double used = 0;
  for (const auto& tp : plan.tensors)
    if (tp.fixed) used += 8.0 * static_cast<double>(tp.bytes());
  std::vector<size_t> at(free.size(), 0);
  for (const auto& h : hulls) used += h[0].bits;
  check_reachable(plan, used, budget);

  // Greedy upgrades by cost decrease per bit; a tensor whose next step does not fit is
  // done (its later steps are larger still).
  struct Step {
    double gain_per_bit;
    size_t k;
    bool operator<(const Step& s) const { return gain_per_bit < s.gain_per_bit; }
  };
  std::priority_queue<Step> queue;
  auto push_next = [&](size_t k) {
    const auto& h = hulls[k];
    if (at[k] + 1 >= h.size()) return;
    const Option &a = h[at[k]], &b = h[at[k] + 1];
    queue.push({(a.cost - b.cost) / (b.bits - a.bits), k});
  };
  for (size_t k = 0; k < free.size(); ++k) push_next(k);
  while (!queue.empty()) {
    const Step s = queue.top();
    queue.pop();
    const auto& h = hulls[s.k];
    const double extra = h[at[s.k] + 1].bits - h[at[s.k]].bits;
    if (used + extra > budget) continue;
    used += extra;
    ++at[s.k];
    push_next(s.k);
  }

  // The greedy stops when no next hull step fits; spend what is left on the single
  // change (to any option, on or off the hull) that lowers the cost most, while one fits.
  std::vector<Option> chosen(free.size());
  for (size_t k = 0; k < free.size(); ++k) chosen[k] = hulls[k][at[k]];
  for (;;) {
    double best_gain = 0;
    size_t best_k = 0;
    const Option* best = nullptr;
    for (size_t k = 0; k < free.size(); ++k)
      for (const Option& opt : all[k]) {
        const double extra = opt.bits - chosen[k].bits, gain = chosen[k].cost - opt.cost;
        if (extra > 0 && used + extra <= budget && gain > best_gain) best_gain = gain, best_k = k, best = &opt;
      }
    if (!best) break;
    used += best->bits - chosen[best_k].bits;
    chosen[best_k] = *best;
  }

  for (size_t k = 0; k < free.size(); ++k) {
    TensorPlan& tp = plan.tensors[free[k]];
    tp.type = chosen[k].type;
    tp.est_error = chosen[k].error;
    tp.copy = tp.src->info != nullptr && tp.type == tp.src->type;
  }
  if (used < budget * (1 - kTargetTolerance))
    std::fprintf(stderr, "warning: the dynamic plan reaches %.4f bpw of the %.4f targeted: whole-tensor choices are too coarse\n",
                 used / total_elements, target_bpw);
  char name[64];
  std::snprintf(name, sizeof name, "dynamic %.2f bpw", target_bpw);
  plan.name = name;
  plan.file_type = mostly_file_type(plan);
}

}  // namespace squeeze::quantize
