// convert/convert.cpp — see convert.h.
#include "convert/convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "convert/hf_tokenizer.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/thread_pool.h"
#include "gguf/writer.h"
#include "kernels/cpu/ops.h"
#include "model/gguf_config.h"
#include "model/quant_rules.h"
#include "quant/quantize.h"

namespace squeeze::convert {

namespace {

using gguf::GgmlType;
using safetensors::Dtype;

constexpr int64_t kChunkElements = int64_t{1} << 22;  // rows converted at a time: ~16 MB of f32

// One row of a source tensor as f32.
void row_f32(const safetensors::Tensor& t, int64_t row, int64_t cols, float* out) {
  const size_t es = safetensors::dtype_size(t.dtype);
  const uint8_t* p = t.data.data() + static_cast<size_t>(row * cols) * es;
  const auto& ops = kernels::cpu::ops();
  switch (t.dtype) {
    case Dtype::F32:
      std::memcpy(out, p, static_cast<size_t>(cols) * 4);
      return;
    case Dtype::F16:
      ops.f16_to_f32(reinterpret_cast<const uint16_t*>(p), out, cols);
      return;
    case Dtype::BF16:
      ops.bf16_to_f32(reinterpret_cast<const uint16_t*>(p), out, cols);
      return;
    default:
      fail("tensor '", t.name, "' has dtype ", safetensors::dtype_name(t.dtype), " (convert reads F32, F16 and BF16)");
  }
}

// Row R of a gathered tensor (TensorPlan::Gather) as f32, element by element.
uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

void gather_row_f32(const safetensors::Tensor& t, const TensorPlan& p, int64_t R, int64_t cols, float* out) {
  const int64_t per_expert = p.dims.size() == 3 ? p.dims[1] : 1, e = R / per_expert, r = R % per_expert;
  const TensorPlan::Gather& g = p.gather;
  const int64_t first = e * g.slab + g.offset + r * g.row_step;
  const uint8_t* base = t.data.data();
  for (int64_t j = 0; j < cols; ++j) {
    const size_t at = static_cast<size_t>(first + j * g.col_step);
    switch (t.dtype) {
      case Dtype::F32: std::memcpy(&out[j], base + at * 4, 4); break;
      case Dtype::F16: out[j] = f16_to_f32(load_u16(base + at * 2)); break;
      case Dtype::BF16: out[j] = bf16_to_f32(load_u16(base + at * 2)); break;
      default: fail("tensor '", t.name, "' has dtype ", safetensors::dtype_name(t.dtype), " (convert reads F32, F16 and BF16)");
    }
  }
}

// An OpenAI MXFP4 expert tensor (TensorPlan::mxfp4_scales): GGUF row R of expert e is source
// row s of that expert's [out, in/32] blocks. MXFP4 rows come out as GGUF's 17-byte blocks —
// the scale byte, then the 32 codes re-nibbled from OpenAI's interleaved order (low = 2j,
// high = 2j + 1) to ggml's split one (low = j, high = j + 16), a lossless bit move; other
// types get the values, code × 2^(scale − 127).
class Mxfp4Source {
 public:
  Mxfp4Source(const safetensors::Tensor& blocks, const safetensors::Tensor& scales, const TensorPlan& p)
      : blocks_(blocks.data.data()), scales_(scales.data.data()), plan_(p) {
    SQZ_CHECK(blocks.dtype == Dtype::U8 && scales.dtype == Dtype::U8, "tensor '", blocks.name, "' and its scales must be U8");
    out_ = blocks.shape[1];
    nb_ = blocks.shape[2];
  }
  void row_bytes(int64_t R, uint8_t* dst) const {
    const int64_t s = source_row(R);
    for (int64_t b = 0; b < nb_; ++b) {
      const uint8_t* q = blocks_ + (s * nb_ + b) * 16;
      uint8_t* o = dst + b * 17;
      o[0] = scales_[s * nb_ + b];
      for (int j = 0; j < 16; ++j) {
        // element j and element j + 16 of the block, from OpenAI's byte j / 2 and (j + 16) / 2
        const uint8_t lo = (q[j / 2] >> (4 * (j % 2))) & 0xF, hi = (q[(j + 16) / 2] >> (4 * (j % 2))) & 0xF;
        o[1 + j] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
  }
  void row_f32(int64_t R, float* dst) const {
    static constexpr float kCodes[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    const int64_t s = source_row(R);
    for (int64_t b = 0; b < nb_; ++b) {
      const float scale = std::ldexp(1.0f, static_cast<int>(scales_[s * nb_ + b]) - 127);
      const uint8_t* q = blocks_ + (s * nb_ + b) * 16;
      for (int j = 0; j < 16; ++j) {
        dst[b * 32 + 2 * j] = kCodes[q[j] & 0xF] * scale;
        dst[b * 32 + 2 * j + 1] = kCodes[q[j] >> 4] * scale;
      }
    }
  }

 private:
  int64_t source_row(int64_t R) const {
    const int64_t per_expert = plan_.dims[1], e = R / per_expert, r = R % per_expert;
    return e * out_ + plan_.mxfp4_row_offset + r * plan_.mxfp4_row_step;
  }
  const uint8_t* blocks_;
  const uint8_t* scales_;
  const TensorPlan& plan_;
  int64_t out_ = 0, nb_ = 0;
};

GgmlType resolve_auto(const ConvertPlan& plan, const safetensors::Checkpoint& ckpt) {
  for (const TensorPlan& t : plan.tensors) {
    if (t.hf_name.empty() || t.stays_f32()) continue;
    return ckpt.find(t.hf_name)->dtype == Dtype::BF16 ? GgmlType::BF16 : GgmlType::F16;
  }
  return GgmlType::F16;
}

// Encodes rows of f32 into `type`.
void encode_rows(ThreadPool& pool, GgmlType type, const float* x, int64_t rows, int64_t cols, std::vector<uint8_t>& out) {
  const int64_t rb = quant::row_bytes(type, cols);
  out.resize(static_cast<size_t>(rows * rb));
  const auto& ops = kernels::cpu::ops();
  switch (type) {
    case GgmlType::F32:
      std::memcpy(out.data(), x, out.size());
      return;
    case GgmlType::F16:
      ops.f32_to_f16(x, reinterpret_cast<uint16_t*>(out.data()), rows * cols);
      return;
    case GgmlType::BF16:
      ops.f32_to_bf16(x, reinterpret_cast<uint16_t*>(out.data()), rows * cols);
      return;
    default:
      quant::quantize_rows(pool, {.type = type, .src = x, .rows = rows, .cols = cols}, out.data());
  }
}

}  // namespace

ConvertResult convert_checkpoint(const ConvertOptions& o) {
  const safetensors::Checkpoint ckpt(o.hf_dir);
  ConvertResult r;
  r.plan = plan_conversion(ckpt);
  ConvertPlan& plan = r.plan;
  model::ModelConfig& c = plan.config;

  auto tok = read_hf_tokenizer(ckpt.dir(), ckpt.config(), c.n_vocab);
  if (!tok) fail(ckpt.dir(), ": no tokenizer.json (a GGUF model carries its vocabulary)");
  if (c.arch == model::Arch::gemma3 && tok->n_listed < c.n_vocab) {
    // llama.cpp's converter drops Gemma 3's embedding rows past the tokenizer's entries.
    c.n_vocab = tok->n_listed;
    for (TensorPlan& t : plan.tensors)
      if (t.gguf_name == "token_embd.weight") t.dims[1] = c.n_vocab;
    tok = read_hf_tokenizer(ckpt.dir(), ckpt.config(), c.n_vocab);
  }
  for (const TensorPlan& t : plan.tensors) {
    if (!t.mxfp4_scales.empty()) continue;  // U8 blocks and scales, checked by Mxfp4Source
    for (const std::string& name : t.expert_sources.empty() ? std::vector<std::string>{t.hf_name} : t.expert_sources) {
      const safetensors::Tensor* src = name.empty() ? nullptr : ckpt.find(name);
      if (src && src->dtype != Dtype::F32 && src->dtype != Dtype::F16 && src->dtype != Dtype::BF16)
        fail(ckpt.dir(), ": tensor '", src->name, "' has dtype ", safetensors::dtype_name(src->dtype),
             " (convert reads F32, F16 and BF16)");
    }
  }
  r.has_tokenizer = true;
  text::Tokenizer check(tok->data);  // refuses a vocabulary the runtime could not load, before writing

  std::optional<model::QuantPreset> preset;
  // MXFP4 experts pass through unchanged, unless every tensor is asked for in one float type.
  const bool all_float = model::upper_ascii(o.type) == "F32" || model::upper_ascii(o.type) == "F16" ||
                         model::upper_ascii(o.type) == "BF16";
  if (model::upper_ascii(o.type) == "AUTO") {
    preset = model::find_quant_preset(gguf::ggml_type_info(resolve_auto(plan, ckpt)).name);
  } else {
    preset = model::find_quant_preset(o.type);
  }
  if (!preset) fail("--type '", o.type, "' is not a GGUF type or quantization preset");
  r.type_name = preset->name;

  gguf::Writer w(o.out_path, {.inputs = [&] {
                    std::vector<std::string> in;
                    for (const auto& s : ckpt.shards()) in.push_back(s->path());
                    return in;
                  }()});
  gguf::Metadata& m = w.metadata();
  m.set("general.type", gguf::Value::string("model"));
  const std::string dir_name = [&] {
    std::string d = ckpt.dir();
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    return d.substr(d.find_last_of('/') == std::string::npos ? 0 : d.find_last_of('/') + 1);
  }();
  m.set("general.name", gguf::Value::string(dir_name));
  model::ModelConfig stored = c;
  stored.name = dir_name;
  model::write_config(m, stored);
  if (preset->file_type != 0 || preset->base == GgmlType::F32)
    m.set("general.file_type", gguf::Value::u32(preset->file_type));
  m.set("general.quantization_version", gguf::Value::u32(2));
  model::write_tokenizer(m, tok->data);
  if (tok->eot_id >= 0) m.set("tokenizer.ggml.eot_token_id", gguf::Value::u32(static_cast<uint32_t>(tok->eot_id)));
  if (!tok->chat_template.empty()) m.set("tokenizer.chat_template", gguf::Value::string(tok->chat_template));

  ThreadPool& pool = default_thread_pool();
  int64_t total = 0;
  for (const TensorPlan& t : plan.tensors) total += t.dims[0] * t.rows();
  std::optional<Progress> progress;
  if (o.progress) progress.emplace("convert", total);

  for (const TensorPlan& t : plan.tensors) {
    const int64_t cols = t.dims[0], rows = t.rows();
    GgmlType type = GgmlType::F32;  // norms and other vectors stay F32, as llama.cpp writes them
    if (!t.stays_f32()) {
      const model::TensorRole role{.name = t.gguf_name, .row_length = cols, .n_dims = static_cast<int>(t.dims.size()),
                                   .layer = model::layer_of(t.gguf_name), .n_layer = c.n_layer,
                                   .tied_output = c.tied_output};
      model::FittedType fitted = model::fitted_preset_type(*preset, role);
      type = fitted.type;
      if (!fitted.fallback.empty()) r.fallbacks.push_back(std::move(fitted.fallback));
    }
    std::optional<Mxfp4Source> mxfp4;
    if (!t.mxfp4_scales.empty()) {
      mxfp4.emplace(*ckpt.find(t.hf_name), *ckpt.find(t.mxfp4_scales), t);
      if (!all_float) type = GgmlType::MXFP4;
    }
    // Stacked experts: expert e's rows come from its own source tensor.
    std::vector<const safetensors::Tensor*> sources;
    for (const std::string& name : t.expert_sources) sources.push_back(ckpt.find(name));
    const int64_t rows_per_source = sources.empty() ? rows : rows / static_cast<int64_t>(sources.size());
    const safetensors::Tensor* src = t.hf_name.empty() ? nullptr : ckpt.find(t.hf_name);
    w.add_tensor({t.gguf_name, type, t.dims}, [&, sources, rows_per_source, src, cols, rows, type,
                                               mxfp4](const gguf::ByteSink& out) {
      const int64_t chunk = std::max<int64_t>(1, kChunkElements / cols);
      std::vector<float> x(static_cast<size_t>(std::min(chunk, rows) * cols));
      std::vector<uint8_t> bytes;
      for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const int64_t n = std::min(chunk, rows - r0);
        if (mxfp4 && type == GgmlType::MXFP4) {  // passed through, re-nibbled
          const int64_t rb = quant::row_bytes(type, cols);
          bytes.resize(static_cast<size_t>(n * rb));
          for (int64_t i = 0; i < n; ++i) mxfp4->row_bytes(r0 + i, bytes.data() + i * rb);
          out(bytes);
          if (progress) progress->advance(n * cols, t.gguf_name);
          continue;
        }
        for (int64_t i = 0; i < n; ++i) {
          float* row = x.data() + i * cols;
          if (mxfp4) {
            mxfp4->row_f32(r0 + i, row);
            continue;
          }
          if (src == nullptr) {
            if (t.values.empty()) {
              std::fill(row, row + cols, t.fill);
            } else {
              std::copy_n(t.values.begin() + (r0 + i) * cols, cols, row);
            }
            continue;
          }
          if (t.gather.slab > 0) {
            gather_row_f32(*src, t, r0 + i, cols, row);
          } else if (sources.empty()) {
            row_f32(*src, source_row(t, r0 + i), cols, row);
          } else {
            row_f32(*sources[static_cast<size_t>((r0 + i) / rows_per_source)], (r0 + i) % rows_per_source, cols, row);
          }
          if (t.shift != 0.0f)
            for (int64_t j = 0; j < cols; ++j) row[j] += t.shift;
        }
        encode_rows(pool, type, x.data(), n, cols, bytes);
        out(bytes);
        if (progress) progress->advance(n * cols, t.gguf_name);
      }
    });
  }
  r.file_bytes = w.finish();
  if (progress) progress->finish();
  return r;
}

}  // namespace squeeze::convert
