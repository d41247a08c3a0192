// model/weights.cpp
#include "model/weights.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "core/error.h"
#include "core/thread_pool.h"
#include "quant/packed.h"
#include "quant/traits.h"

namespace squeeze::model {

namespace {

// A matrix to repack for the active ISA's integer tile; `keep`: the embedding lookup still
// reads the original rows.
struct PackJob {
  quant::QMatrix* m;
  bool keep;
};

// Repacks every job's matrix into one buffer. One buffer, not one per matrix: buffers of
// 4 MiB and more get transparent huge pages (core/aligned_buffer.h), which most of a
// model's matrices are too small for alone; on 4 KiB pages a decode step's weight reads
// also walk the page tables of every page they touch. The file's pages of the original
// rows are then released (unless kept): they fault back in from the file if a path with
// explicit kernels ever reads them.
void pack_all(const gguf::File& f, std::span<const PackJob> jobs, std::vector<AlignedBuffer>& storage) {
  constexpr size_t kAlign = 64;
  const auto bytes = [](const quant::QMatrix& m) {
    return (static_cast<size_t>(quant::packed_bytes(m.type, m.rows, m.cols)) + kAlign - 1) / kAlign * kAlign;
  };
  size_t total = 0;
  for (const PackJob& j : jobs) total += bytes(*j.m);
  if (total == 0) return;
  auto* base = static_cast<std::byte*>(storage.emplace_back(total).data());
  // Groups pack independently: the threads share each matrix (the first touch of the new
  // pages, which on a VM is most of the cost, spreads over them too).
  ThreadPool& pool = default_thread_pool();
  for (const PackJob& j : jobs) {
    quant::QMatrix& m = *j.m;
    const int64_t rb = quant::row_bytes(m.type, m.cols), gb = quant::packed_group_bytes(m.type, m.cols);
    const auto* src = static_cast<const uint8_t*>(m.data);
    pool.parallel_for(0, (m.rows + quant::kPackRows - 1) / quant::kPackRows, [&](int64_t g0, int64_t g1) {
      const int64_t r0 = g0 * quant::kPackRows, r1 = std::min(m.rows, g1 * quant::kPackRows);
      quant::pack_matrix(m.type, src + r0 * rb, r1 - r0, m.cols, base + g0 * gb);
    }, {ThreadPool::Schedule::Dynamic, 16});
    m.packed = base;
    base += bytes(m);
    if (!j.keep) f.release_pages(m.data, static_cast<size_t>(m.rows * quant::row_bytes(m.type, m.cols)));
  }
}

}  // namespace

quant::QMatrix bind_matrix(const gguf::File& f, const std::string& name) {
  const gguf::TensorInfo& t = f.tensor(name);
  if (!quant::is_supported(t.type))
    fail(f.path(), ": tensor '", name, "' has type ", t.type_info().name, ", which squeeze cannot compute with");
  return {.type = t.type, .data = t.data.data(), .rows = t.n_rows(), .cols = t.row_length()};
}

std::vector<float> read_f32(const gguf::File& f, const std::string& name) {
  const quant::QMatrix m = bind_matrix(f, name);
  std::vector<float> out(static_cast<size_t>(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r) dequantize_row(m, r, out.data() + r * m.cols);
  return out;
}

void dequantize_row(const quant::QMatrix& m, int64_t row, float* out) {
  SQZ_CHECK(row >= 0 && row < m.rows, "row ", row, " out of range [0, ", m.rows, ")");
  const auto& tr = quant::traits(m.type);
  const int64_t rb = quant::row_bytes(m.type, m.cols);
  tr.dequantize_row(static_cast<const uint8_t*>(m.data) + row * rb, out, m.cols);
}

quant::QMatrix ExpertStack::expert(int64_t e) const { return rows_of(e, 0, all.rows / n_expert); }

quant::QMatrix ExpertStack::rows_of(int64_t e, int64_t first, int64_t count) const {
  SQZ_CHECK(e >= 0 && e < n_expert, "expert ", e, " out of range [0, ", n_expert, ")");
  const int64_t per = all.rows / n_expert, row0 = e * per + first;
  SQZ_CHECK(first >= 0 && count >= 0 && first + count <= per, "rows [", first, ", ", first + count, ") of an expert of ",
            per, " rows");
  quant::QMatrix m = all;
  m.rows = count;
  m.data = static_cast<const uint8_t*>(all.data) + row0 * quant::row_bytes(all.type, all.cols);
  // The packed groups hold kPackRows rows each: a view starting inside one has no packed form.
  m.packed = all.packed && row0 % quant::kPackRows == 0
                 ? static_cast<const uint8_t*>(all.packed) + row0 / quant::kPackRows * quant::packed_group_bytes(all.type, all.cols)
                 : nullptr;
  return m;
}

bool ExpertStack::packable() const { return n_expert > 0 && all.rows % n_expert == 0 && all.rows / n_expert % quant::kPackRows == 0; }

namespace {

// Where a tensor of the table lands: a matrix bound to the file, a vector read as f32, or
// a stack of experts.
struct WeightSlot {
  quant::QMatrix* matrix = nullptr;
  std::vector<float>* values = nullptr;
  ExpertStack* experts = nullptr;
};

WeightSlot slot_of(Weights& w, TensorId id, int64_t layer) {
  if (id == TensorId::token_embd) return {.matrix = &w.token_embd};
  if (id == TensorId::output_norm) return {.values = &w.output_norm};
  if (id == TensorId::output) return {.matrix = &w.output};
  if (id == TensorId::rope_freqs) return {.values = &w.rope_freqs};
  LayerWeights& l = w.layers.at(static_cast<size_t>(layer));
  switch (id) {
    case TensorId::attn_norm: return {.values = &l.attn_norm};
    case TensorId::attn_q: return {.matrix = &l.wq};
    case TensorId::attn_q_bias: return {.values = &l.bq};
    case TensorId::attn_k: return {.matrix = &l.wk};
    case TensorId::attn_k_bias: return {.values = &l.bk};
    case TensorId::attn_v: return {.matrix = &l.wv};
    case TensorId::attn_v_bias: return {.values = &l.bv};
    case TensorId::attn_qkv: return {.matrix = &l.wqkv};
    case TensorId::attn_qkv_bias: return {.values = &l.bqkv};
    case TensorId::attn_q_norm: return {.values = &l.q_norm};
    case TensorId::attn_k_norm: return {.values = &l.k_norm};
    case TensorId::attn_gate: return {.matrix = &l.attn_gate};
    case TensorId::attn_sinks: return {.values = &l.attn_sinks};
    case TensorId::attn_output: return {.matrix = &l.wo};
    case TensorId::attn_output_bias: return {.values = &l.bo};
    case TensorId::ssm_in_qkv: return {.matrix = &l.ssm_in_qkv};
    case TensorId::ssm_in_gate: return {.matrix = &l.ssm_in_gate};
    case TensorId::ssm_conv1d: return {.values = &l.ssm_conv1d};
    case TensorId::ssm_dt_bias: return {.values = &l.ssm_dt_bias};
    case TensorId::ssm_a: return {.values = &l.ssm_a};
    case TensorId::ssm_beta: return {.matrix = &l.ssm_beta};
    case TensorId::ssm_alpha: return {.matrix = &l.ssm_alpha};
    case TensorId::ssm_norm: return {.values = &l.ssm_norm};
    case TensorId::ssm_out: return {.matrix = &l.ssm_out};
    case TensorId::post_attention_norm: return {.values = &l.post_attn_norm};
    case TensorId::ffn_norm:
    case TensorId::ffn_norm_post_attention_name: return {.values = &l.ffn_norm};
    case TensorId::ffn_gate: return {.matrix = &l.w_gate};
    case TensorId::ffn_up: return {.matrix = &l.w_up};
    case TensorId::ffn_down: return {.matrix = &l.w_down};
    case TensorId::ffn_gate_inp: return {.matrix = &l.router};
    case TensorId::ffn_gate_inp_bias: return {.values = &l.router_bias};
    case TensorId::ffn_gate_exps_bias: return {.values = &l.gate_exps_bias};
    case TensorId::ffn_up_exps_bias: return {.values = &l.up_exps_bias};
    case TensorId::ffn_down_exps_bias: return {.values = &l.down_exps_bias};
    case TensorId::ffn_gate_exps: return {.experts = &l.gate_exps};
    case TensorId::ffn_up_exps: return {.experts = &l.up_exps};
    case TensorId::ffn_gate_up_exps: return {.experts = &l.gate_up_exps};
    case TensorId::ffn_down_exps: return {.experts = &l.down_exps};
    case TensorId::ffn_gate_inp_shexp: return {.values = &l.shexp_gate_inp};
    case TensorId::ffn_gate_shexp: return {.matrix = &l.shexp_gate};
    case TensorId::ffn_up_shexp: return {.matrix = &l.shexp_up};
    case TensorId::ffn_down_shexp: return {.matrix = &l.shexp_down};
    case TensorId::post_ffw_norm: return {.values = &l.post_ffn_norm};
    case TensorId::token_embd:
    case TensorId::output_norm:
    case TensorId::output:
    case TensorId::rope_freqs:
    case TensorId::count: break;
  }
  fail("tensor '", tensor_name(id, layer), "' has no place in a layer's weights");
}

}  // namespace

Weights bind_weights(const gguf::File& f, const ModelConfig& c) {
  Weights w;
  w.layers.resize(static_cast<size_t>(c.n_layer));
  std::vector<PackJob> jobs;
  for (const TensorShape& t : weight_tensors(c)) {
    const WeightSlot s = slot_of(w, t.id, t.layer);
    if (s.values) {
      *s.values = read_f32(f, t.name);
    } else if (s.experts) {
      *s.experts = {.all = bind_matrix(f, t.name), .n_expert = t.ne2};
      // Each expert's rows start a packed group, so its view (and a fused gate/up's halves,
      // which forward.cpp takes packed only when they too start one) runs the packed tile.
      if (s.experts->packable() && quant::packs(s.experts->all.type)) jobs.push_back({&s.experts->all, false});
    } else {
      *s.matrix = bind_matrix(f, t.name);
      // The embedding's rows stay as they are for the lookup; a tied head packs its own copy below.
      if (t.id != TensorId::token_embd && s.matrix->rows > 0 && quant::packs(s.matrix->type))
        jobs.push_back({s.matrix, false});
    }
  }
  for (const float d : w.rope_freqs)
    if (!(d > 0.0f) || !std::isfinite(d))
      fail(f.path(), ": tensor '", tensor_name(TensorId::rope_freqs), "' holds ", d,
           "; RoPE frequency divisors must be positive and finite");
  // YaRN's blend travels as frequency divisors, like Llama 3's (validate() keeps them apart).
  if (c.yarn_factor > 0) w.rope_freqs = c.yarn_divisors();
  if (c.tied_output) {
    w.output = w.token_embd;
    if (quant::packs(w.output.type)) jobs.push_back({&w.output, /*keep=*/true});
  }
  pack_all(f, jobs, w.packed_storage);
  return w;
}

}  // namespace squeeze::model
