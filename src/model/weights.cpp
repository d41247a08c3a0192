// model/weights.cpp
#include "model/weights.h"

#include "core/error.h"
#include "quant/packed.h"
#include "quant/traits.h"

namespace squeeze::model {

namespace {

quant::QMatrix matrix(const gguf::File& f, const std::string& name) {
  const gguf::TensorInfo& t = f.tensor(name);
  if (!quant::is_supported(t.type))
    fail(f.path(), ": tensor '", name, "' has type ", t.type_info().name, ", which squeeze cannot compute with");
  return {.type = t.type, .data = t.data.data(), .rows = t.n_rows(), .cols = t.row_length()};
}

std::vector<float> vector_f32(const gguf::File& f, const std::string& name) {
  const quant::QMatrix m = matrix(f, name);
  std::vector<float> out(static_cast<size_t>(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r) dequantize_row(m, r, out.data() + r * m.cols);
  return out;
}

// Repacks m for the active ISA's integer tile when its type has one. The file's pages of
// the original rows are then released (unless `keep`: the embedding lookup reads them):
// they fault back in from the file if a path with explicit kernels ever reads them.
void pack(const gguf::File& f, quant::QMatrix& m, std::vector<AlignedBuffer>& storage, bool keep = false) {
  if (!quant::packs(m.type) || m.rows == 0) return;
  AlignedBuffer& buf = storage.emplace_back(static_cast<size_t>(quant::packed_bytes(m.type, m.rows, m.cols)));
  quant::pack_matrix(m.type, m.data, m.rows, m.cols, buf.data());
  m.packed = buf.data();
  if (!keep) f.release_pages(m.data, static_cast<size_t>(m.rows * quant::row_bytes(m.type, m.cols)));
}

}  // namespace

void dequantize_row(const quant::QMatrix& m, int64_t row, float* out) {
  SQZ_CHECK(row >= 0 && row < m.rows, "row ", row, " out of range [0, ", m.rows, ")");
  const auto& tr = quant::traits(m.type);
  const int64_t rb = quant::row_bytes(m.type, m.cols);
  tr.dequantize_row(static_cast<const uint8_t*>(m.data) + row * rb, out, m.cols);
}

Weights bind_weights(const gguf::File& f, const ModelConfig& c) {
  Weights w;
  w.token_embd = matrix(f, "token_embd.weight");
  w.layers.resize(static_cast<size_t>(c.n_layer));
  const bool pre = c.norm_placement != NormPlacement::post, post = c.norm_placement != NormPlacement::pre;
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[static_cast<size_t>(i)];
    if (pre) l.attn_norm = vector_f32(f, b + "attn_norm.weight");
    l.wq = matrix(f, b + "attn_q.weight");
    l.wk = matrix(f, b + "attn_k.weight");
    l.wv = matrix(f, b + "attn_v.weight");
    if (c.qk_norm) {
      l.q_norm = vector_f32(f, b + "attn_q_norm.weight");
      l.k_norm = vector_f32(f, b + "attn_k_norm.weight");
    }
    if (c.attn_gate) l.attn_gate = matrix(f, b + "attn_gate.weight");
    l.wo = matrix(f, b + "attn_output.weight");
    if (post) l.post_attn_norm = vector_f32(f, b + "post_attention_norm.weight");
    if (pre) l.ffn_norm = vector_f32(f, b + "ffn_norm.weight");
    l.w_gate = matrix(f, b + "ffn_gate.weight");
    l.w_up = matrix(f, b + "ffn_up.weight");
    l.w_down = matrix(f, b + "ffn_down.weight");
    if (post) l.post_ffn_norm = vector_f32(f, b + "post_ffw_norm.weight");
  }
  w.output_norm = vector_f32(f, "output_norm.weight");
  w.output = c.tied_output ? w.token_embd : matrix(f, "output.weight");
  for (LayerWeights& l : w.layers)
    for (quant::QMatrix* m : {&l.wq, &l.wk, &l.wv, &l.attn_gate, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      if (m->data) pack(f, *m, w.packed_storage);
  pack(f, w.output, w.packed_storage, /*keep=*/c.tied_output);
  return w;
}

}  // namespace squeeze::model
