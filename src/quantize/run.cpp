// quantize/run.cpp — streamed quantization of a planned model, table and totals.
#include "quantize/run.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/progress.h"
#include "gguf/json.h"
#include "gguf/writer.h"
#include "quant/quantize.h"

namespace squeeze::quantize {
namespace {

// Rows per chunk: about 4M elements (16 MB of f32), bounding memory per tensor.
constexpr int64_t kChunkElements = int64_t{1} << 22;

std::string type_name(GgmlType t) { return std::string(gguf::ggml_type_info(t).name); }

std::string shape(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

bool is_float_type(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16; }

// Σ w·x², Σ w·err² of a chunk, w = importance[col] (1 when none).
struct ErrorSums {
  double signal = 0, noise = 0;
  void add(const float* x, const float* y, int64_t rows, int64_t cols, const float* importance) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const double w = importance ? importance[c] : 1.0, a = x[r * cols + c], e = a - y[r * cols + c];
        signal += w * a * a, noise += w * e * e;
      }
  }
  double relative() const { return signal > 0 ? std::sqrt(noise / signal) : (noise > 0 ? INFINITY : 0.0); }
};

class Table {
 public:
  Table(std::FILE* out, const Plan& plan) : out_(out) {
    for (const auto& t : plan.tensors) width_ = std::max(width_, t.src->name.size());
  }
  void header() {
    if (!out_) return;
    std::fprintf(out_, "%5s  %-*s  %-16s %-6s %-6s %8s %10s  %s\n", "idx", static_cast<int>(width_), "name", "shape", "from",
                 "type", "bpw", "rel.err", "note");
  }
  void row(size_t i, const TensorResult& t) {
    if (!out_) return;
    char err[32] = "-";
    if (t.error >= 0) std::snprintf(err, sizeof err, "%.5f%s", t.error, t.sampled ? "*" : "");
    const double bpw = 8.0 * static_cast<double>(t.bytes) / static_cast<double>(std::max<int64_t>(1, elements(t)));
    std::fprintf(out_, "%5zu  %-*s  %-16s %-6s %-6s %8.4f %10s  %s\n", i, static_cast<int>(width_), t.name.c_str(),
                 shape(t.dims).c_str(), type_name(t.src_type).c_str(), type_name(t.type).c_str(), bpw, err, t.note.c_str());
    std::fflush(out_);
  }
  static int64_t elements(const TensorResult& t) {
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    return n;
  }

 private:
  std::FILE* out_;
  size_t width_ = 4;
};

void summarize(RunResult& r) {
  double n_err = 0, sum_e = 0, sum_e2 = 0;
  r.n_elements = 0, r.tensor_bytes = 0;
  for (const auto& t : r.tensors) {
    const auto n = static_cast<double>(Table::elements(t));
    r.n_elements += Table::elements(t);
    r.tensor_bytes += t.bytes;
    if (t.error >= 0 && t.type != GgmlType::F32 && t.dims.size() >= 2) n_err += n, sum_e += n * t.error, sum_e2 += n * t.error * t.error;
  }
  r.bpw = r.n_elements ? 8.0 * static_cast<double>(r.tensor_bytes) / static_cast<double>(r.n_elements) : 0;
  r.mean_error = n_err > 0 ? sum_e / n_err : 0;
  r.rms_error = n_err > 0 ? std::sqrt(sum_e2 / n_err) : 0;
}

void print_totals(std::FILE* out, const RunResult& r) {
  if (!out) return;
  std::map<std::string, int> count;
  for (const auto& t : r.tensors) ++count[type_name(t.type)];
  std::string mix;
  for (const auto& [name, n] : count) mix += (mix.empty() ? "" : ", ") + std::to_string(n) + " x " + name;
  const double b = static_cast<double>(r.tensor_bytes);
  std::fprintf(out, "plan: %s: %zu tensors (%s)\n", r.plan_name.c_str(), r.tensors.size(), mix.c_str());
  std::fprintf(out, "size: %lld bytes of tensor data = %.4f GB / %.4f GiB, %lld weights, %.4f bits per weight\n",
               static_cast<long long>(r.tensor_bytes), b / 1e9, b / (1024.0 * 1024 * 1024),
               static_cast<long long>(r.n_elements), r.bpw);
  if (r.mean_error > 0)
    std::fprintf(out, "error: mean relative error %.5f, RMS relative error %.5f (quantized matrices, weighted by elements)\n",
                 r.mean_error, r.rms_error);
  if (r.file_bytes) std::fprintf(out, "file: %llu bytes\n", static_cast<unsigned long long>(r.file_bytes));
}

TensorResult result_of(const TensorPlan& tp) {
  return {.name = tp.src->name, .dims = tp.src->dims, .src_type = tp.src->type, .type = tp.type, .bytes = tp.bytes(),
          .error = tp.est_error, .error_estimated = tp.est_error >= 0, .sampled = tp.sampled, .note = tp.note};
}

}  // namespace

RunResult run_plan(const Plan& plan, const RunOptions& o) {
  ThreadPool& pool = o.pool ? *o.pool : default_thread_pool();
  RunResult r;
  r.plan_name = plan.name;

  // Requantizing compounds two rounding errors: refuse unless asked.
  std::string first_requant;
  for (const auto& tp : plan.tensors)
    if (tp.src->info && !tp.copy && !is_float_type(tp.src->type)) {
      ++r.requantized;
      if (first_requant.empty()) first_requant = tp.src->name + " (" + type_name(tp.src->type) + ")";
    }
  if (r.requantized && !o.allow_requantize)
    fail(o.input ? o.input->path() : "input", ": ", r.requantized, " tensors are already quantized (first: ", first_requant,
         "); requantizing adds a second rounding error — pass --allow-requantize to do it anyway");
  if (r.requantized)
    std::fprintf(stderr, "warning: requantizing %d already-quantized tensors (first: %s): errors compound\n", r.requantized,
                 first_requant.c_str());

  Table table(o.table, plan);
  table.header();
  if (o.output_path.empty()) {  // dry run
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
      r.tensors.push_back(result_of(plan.tensors[i]));
      table.row(i, r.tensors.back());
    }
    summarize(r);
    print_totals(o.table, r);
    return r;
  }

  SQZ_CHECK(o.input != nullptr, "quantize: no input file");
  gguf::Writer w(o.output_path, {.inputs = {o.input->path()}});
  w.metadata() = o.input->metadata();
  w.metadata().set("general.quantization_version", gguf::Value::u32(2));
  w.metadata().set("general.file_type", gguf::Value::u32(plan.file_type));
  for (const auto& [key, value] : o.extra_metadata) w.metadata().set(key, value);
  if (o.imatrix) {
    w.metadata().set("quantize.imatrix.file", gguf::Value::string(o.imatrix_path));
    if (!o.imatrix->datasets.empty())
      w.metadata().set("quantize.imatrix.dataset", gguf::Value::string(o.imatrix->datasets.front()));
    w.metadata().set("quantize.imatrix.entries_count", gguf::Value::i32(static_cast<int32_t>(o.imatrix->size())));
    w.metadata().set("quantize.imatrix.chunks_count", gguf::Value::i32(static_cast<int32_t>(o.imatrix->chunk_count)));
  }

  std::optional<Progress> progress;
  if (o.progress) progress.emplace("quantize", plan.n_elements());
  r.tensors.resize(plan.tensors.size());
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    const SourceTensor& src = *tp.src;
    TensorResult& res = r.tensors[i];
    res = result_of(tp);
    res.error = -1, res.error_estimated = false, res.sampled = false;
    const gguf::TensorSpec spec{src.name, tp.type, src.dims};
    if (tp.copy) {  // same type: the source bytes as they are
      w.add_tensor(spec, [&, i](const gguf::ByteSink& out) {
        out(src.info->data);
        r.tensors[i].error = 0;
        table.row(i, r.tensors[i]);
        if (progress) progress->advance(src.n_elements(), src.name);
      });
      continue;
    }
    w.add_tensor(spec, [&, i](const gguf::ByteSink& out) {
      const int64_t cols = src.row_length(), rows = src.n_rows();
      const auto importance = importance_for(o.imatrix, src);
      const float* imp = importance ? importance->data() : nullptr;
      const int64_t chunk = std::max<int64_t>(1, kChunkElements / cols);
      const int64_t rb = quant::row_bytes(tp.type, cols);
      std::vector<float> x(static_cast<size_t>(std::min(chunk, rows) * cols)), y(x.size());
      std::vector<uint8_t> q(static_cast<size_t>(std::min(chunk, rows) * rb));
      ErrorSums sums;
      for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const int64_t n = std::min(chunk, rows - r0);
        source_rows_f32(pool, src, r0, n, x.data());
        quant::quantize_rows(pool, {.type = tp.type, .src = x.data(), .rows = n, .cols = cols, .importance = imp}, q.data());
        quant::dequantize_rows(pool, tp.type, q.data(), n, cols, y.data());
        sums.add(x.data(), y.data(), n, cols, imp);
        out(std::span<const uint8_t>(q.data(), static_cast<size_t>(n * rb)));
        if (progress) progress->advance(n * cols, src.name);
      }
      r.tensors[i].error = sums.relative();
      table.row(i, r.tensors[i]);
    });
  }
  r.file_bytes = w.finish();
  if (progress) progress->finish();
  summarize(r);
  print_totals(o.table, r);
  return r;
}

std::string result_json(const RunResult& r) {
  gguf::Json j;
  j["plan"] = r.plan_name;
  j["n_elements"] = r.n_elements;
  j["tensor_bytes"] = r.tensor_bytes;
  j["file_bytes"] = r.file_bytes;
  j["bpw"] = r.bpw;
  j["mean_error"] = r.mean_error;
  j["rms_error"] = r.rms_error;
  j["requantized"] = r.requantized;
  j["tensors"] = gguf::Json::array();
  for (const auto& t : r.tensors) {
    gguf::Json e;
    e["name"] = t.name;
    e["dims"] = t.dims;
    e["from"] = type_name(t.src_type);
    e["type"] = type_name(t.type);
    e["bytes"] = t.bytes;
    e["error"] = t.error;
    e["error_estimated"] = t.error_estimated;
    e["sampled"] = t.sampled;
    e["note"] = t.note;
    j["tensors"].push_back(std::move(e));
  }
  return j.dump(1);
}

}  // namespace squeeze::quantize
