// model/weights.cpp
#include "model/weights.h"

#include <span>

#include "core/error.h"
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
  for (const PackJob& j : jobs) {
    quant::QMatrix& m = *j.m;
    quant::pack_matrix(m.type, m.data, m.rows, m.cols, base);
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

Weights bind_weights(const gguf::File& f, const ModelConfig& c) {
  Weights w;
  w.token_embd = bind_matrix(f, "token_embd.weight");
  w.layers.resize(static_cast<size_t>(c.n_layer));
  const bool pre = c.norm_placement != NormPlacement::post, post = c.norm_placement != NormPlacement::pre;
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[static_cast<size_t>(i)];
    if (pre) l.attn_norm = read_f32(f, b + "attn_norm.weight");
    l.wq = bind_matrix(f, b + "attn_q.weight");
    l.wk = bind_matrix(f, b + "attn_k.weight");
    l.wv = bind_matrix(f, b + "attn_v.weight");
    if (c.qk_norm) {
      l.q_norm = read_f32(f, b + "attn_q_norm.weight");
      l.k_norm = read_f32(f, b + "attn_k_norm.weight");
    }
    if (c.attn_gate) l.attn_gate = bind_matrix(f, b + "attn_gate.weight");
    l.wo = bind_matrix(f, b + "attn_output.weight");
    if (post) l.post_attn_norm = read_f32(f, b + "post_attention_norm.weight");
    if (pre) l.ffn_norm = read_f32(f, b + "ffn_norm.weight");
    l.w_gate = bind_matrix(f, b + "ffn_gate.weight");
    l.w_up = bind_matrix(f, b + "ffn_up.weight");
    l.w_down = bind_matrix(f, b + "ffn_down.weight");
    if (post) l.post_ffn_norm = read_f32(f, b + "post_ffw_norm.weight");
  }
  w.output_norm = read_f32(f, "output_norm.weight");
  w.output = c.tied_output ? w.token_embd : bind_matrix(f, "output.weight");
  std::vector<PackJob> jobs;
  const auto add = [&](quant::QMatrix& m, bool keep) {
    if (m.data && m.rows > 0 && quant::packs(m.type)) jobs.push_back({&m, keep});
  };
  for (LayerWeights& l : w.layers)
    for (quant::QMatrix* m : {&l.wq, &l.wk, &l.wv, &l.attn_gate, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) add(*m, false);
  add(w.output, /*keep=*/c.tied_output);
  pack_all(f, jobs, w.packed_storage);
  return w;
}

}  // namespace squeeze::model
