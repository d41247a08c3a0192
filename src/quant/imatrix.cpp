// quant/imatrix.cpp — importance matrix accumulation, merge and GGUF (de)serialisation.
#include "quant/imatrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"

namespace squeeze::quant {
namespace {

constexpr std::string_view kSum2Suffix = ".in_sum2";
constexpr std::string_view kCountsSuffix = ".counts";

std::span<const uint8_t> as_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

std::vector<float> read_f32(const gguf::TensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.n_elements));
  std::memcpy(out.data(), t.data.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace

ImportanceMatrix::Entry& ImportanceMatrix::entry(std::string_view name, int64_t cols, int64_t n_mat) {
  SQZ_CHECK(cols > 0 && n_mat > 0, "imatrix '", name, "': bad shape ", cols, " x ", n_mat);
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    Entry e;
    e.n_cols = cols;
    e.n_mat = n_mat;
    e.sum2.assign(static_cast<size_t>(cols * n_mat), 0.0);
    e.counts.assign(static_cast<size_t>(n_mat), 0.0);
    it = entries_.emplace(std::string(name), std::move(e)).first;
  }
  SQZ_CHECK(it->second.n_cols == cols && it->second.n_mat == n_mat, "imatrix '", name, "' has ", it->second.n_cols,
            " columns x ", it->second.n_mat, " matrices, got ", cols, " x ", n_mat);
  return it->second;
}

void ImportanceMatrix::add(std::string_view name, const float* x, int64_t rows, int64_t cols, int64_t mat,
                           int64_t n_mat) {
  SQZ_CHECK(rows >= 0 && mat >= 0 && mat < n_mat, "imatrix '", name, "': bad rows ", rows, " or matrix ", mat);
  Entry& e = entry(name, cols, n_mat);
  double* sums = e.sum2.data() + mat * cols;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    for (int64_t c = 0; c < cols; ++c) sums[c] += static_cast<double>(row[c]) * row[c];
  }
  e.counts[static_cast<size_t>(mat)] += static_cast<double>(rows);
}

void ImportanceMatrix::merge(const ImportanceMatrix& other) {
  for (const auto& [name, o] : other.entries_) {
    Entry& e = entry(name, o.n_cols, o.n_mat);
    for (size_t i = 0; i < e.sum2.size(); ++i) e.sum2[i] += o.sum2[i];
    for (size_t i = 0; i < e.counts.size(); ++i) e.counts[i] += o.counts[i];
  }
  chunk_count += other.chunk_count;
  if (chunk_size == 0) chunk_size = other.chunk_size;
  for (const auto& d : other.datasets)
    if (std::find(datasets.begin(), datasets.end(), d) == datasets.end()) datasets.push_back(d);
}

const ImportanceMatrix::Entry* ImportanceMatrix::find(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

std::optional<std::vector<float>> ImportanceMatrix::mean_sq(std::string_view name, int64_t mat) const {
  const Entry* e = find(name);
  if (!e) return std::nullopt;
  SQZ_CHECK(mat < e->n_mat, "imatrix '", name, "' has ", e->n_mat, " matrices, asked for matrix ", mat);
  const int64_t m0 = mat < 0 ? 0 : mat, m1 = mat < 0 ? e->n_mat : mat + 1;
  double count = 0;
  for (int64_t m = m0; m < m1; ++m) count += e->counts[static_cast<size_t>(m)];
  if (!(count > 0)) return std::nullopt;
  std::vector<float> out(static_cast<size_t>(e->n_cols));
  for (int64_t c = 0; c < e->n_cols; ++c) {
    double s = 0;
    for (int64_t m = m0; m < m1; ++m) s += e->sum2[static_cast<size_t>(m * e->n_cols + c)];
    out[static_cast<size_t>(c)] = static_cast<float>(s / count);
  }
  return out;
}

void ImportanceMatrix::save(const std::string& path, const std::vector<std::string>& inputs) const {
  gguf::Writer w(path, {.inputs = inputs});
  w.metadata().set("general.type", gguf::Value::string("imatrix"));
  w.metadata().set("imatrix.datasets", gguf::Value::string_array(datasets));
  w.metadata().set("imatrix.chunk_count", gguf::Value::u32(static_cast<uint32_t>(chunk_count)));
  w.metadata().set("imatrix.chunk_size", gguf::Value::u32(static_cast<uint32_t>(chunk_size)));
  for (const auto& [name, e] : entries_) {
    std::vector<float> sums(e.sum2.begin(), e.sum2.end()), counts(e.counts.begin(), e.counts.end());
    // The producer owns its data: the writer calls it during finish().
    w.add_tensor({name + std::string(kSum2Suffix), gguf::GgmlType::F32, {e.n_cols, e.n_mat}},
                 [sums = std::move(sums)](const gguf::ByteSink& out) { out(as_bytes(sums)); });
    w.add_tensor({name + std::string(kCountsSuffix), gguf::GgmlType::F32, {1, e.n_mat}},
                 [counts = std::move(counts)](const gguf::ByteSink& out) { out(as_bytes(counts)); });
  }
  w.finish();
}

ImportanceMatrix ImportanceMatrix::load(const std::string& path) {
  const gguf::File f(path);
  const auto& md = f.metadata();
  if (auto type = md.get_string_opt("general.type"); type && *type != "imatrix")
    fail(path, ": not an importance matrix (general.type is '", *type, "')");
  ImportanceMatrix im;
  im.datasets = md.get_string_array_opt("imatrix.datasets").value_or(std::vector<std::string>{});
  im.chunk_count = md.get_u32_or("imatrix.chunk_count", 0);
  im.chunk_size = md.get_u32_or("imatrix.chunk_size", 0);
  for (const auto& t : f.tensors()) {
    if (!t.name.ends_with(kSum2Suffix)) {
      if (!t.name.ends_with(kCountsSuffix))
        fail(path, ": tensor '", t.name, "' is neither <name>.in_sum2 nor <name>.counts (not an imatrix file?)");
      continue;
    }
    const std::string name = t.name.substr(0, t.name.size() - kSum2Suffix.size());
    const gguf::TensorInfo* c = f.find_tensor(name + std::string(kCountsSuffix));
    if (!c) fail(path, ": '", t.name, "' has no matching '", name, kCountsSuffix, "'");
    if (t.type != gguf::GgmlType::F32 || c->type != gguf::GgmlType::F32)
      fail(path, ": imatrix tensors of '", name, "' must be F32");
    if (t.n_dims > 2 || c->n_dims > 2 || c->ne[0] != 1 || c->ne[1] != t.ne[1])
      fail(path, ": '", name, "' sums ", t.shape_string(), " and counts ", c->shape_string(), " do not match");
    const std::vector<float> sums = read_f32(t), counts = read_f32(*c);
    for (float v : sums)
      if (!std::isfinite(v) || v < 0) fail(path, ": '", t.name, "' holds a negative or non-finite sum ", v);
    for (float v : counts)
      if (!std::isfinite(v) || v < 0) fail(path, ": '", c->name, "' holds a negative or non-finite count ", v);
    Entry& e = im.entry(name, t.ne[0], t.ne[1]);
    e.sum2.assign(sums.begin(), sums.end());
    e.counts.assign(counts.begin(), counts.end());
  }
  return im;
}

}  // namespace squeeze::quant
