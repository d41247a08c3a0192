// vision/encoder.cpp — see encoder.h. Plain f32 loops and BLAS products; the order of the
// steps follows the reference (transformers 5.25, models/muse_glimmer).
#include "vision/encoder.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "kernels/cpu/blas.h"
#include "quant/quantize.h"

namespace squeeze::vision {

struct Linear {
  std::vector<float> w, b;  // w [out, in] row-major, b [out] or empty
  int64_t out = 0, in = 0;
};

struct Block {
  std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;
  Linear q, k, v, o, up, down;
};

struct VisionEncoder::Weights {
  EncoderConfig cfg;
  Linear patch;                  // [D, 3·p·p]
  std::vector<float> positions;  // [pos_grid², D]
  std::vector<float> pre_w, pre_b, post_w, post_b;
  std::vector<Block> blocks;
  Linear adapter1, adapter2, projection;
};

namespace {

std::vector<float> tensor_f32(const gguf::File& f, const std::string& name, std::vector<int64_t> dims) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  SQZ_CHECK(t != nullptr, f.path(), ": missing tensor '", name, "'");
  if (t->dims() != dims) {
    std::string want = "[";
    for (size_t i = 0; i < dims.size(); ++i) want += (i ? ", " : "") + std::to_string(dims[i]);
    fail(f.path(), ": tensor '", name, "' is ", t->shape_string(), ", expected ", want, "]");
  }
  return quant::dequantize_tensor(t->type, t->data.data(), t->n_rows(), t->row_length());
}

Linear linear(const gguf::File& f, const std::string& name, int64_t out, int64_t in, bool bias) {
  Linear l;
  l.out = out;
  l.in = in;
  l.w = tensor_f32(f, name + ".weight", {in, out});
  if (bias) l.b = tensor_f32(f, name + ".bias", {out});
  return l;
}

// GGUF rows of q / k per head are (pair 0 first, pair 0 second, pair 1 first, ...); the
// reference's are (all firsts, then all seconds).
void deinterleave_rows(std::vector<float>& w, int64_t heads, int64_t head_dim, int64_t cols) {
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < head_dim / 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        std::copy_n(w.data() + (h * head_dim + 2 * i + j) * cols, cols,
                    out.data() + (h * head_dim + i + j * head_dim / 2) * cols);
  w.swap(out);
}

// fn(begin, end) over row ranges, on the pool's threads when there is one (the BLAS runs
// single-threaded: squeeze spreads its calls).
template <typename F>
void over_rows(ThreadPool* pool, int64_t n, int64_t grain, F&& fn) {
  if (pool == nullptr || n <= grain) return fn(int64_t(0), n);
  pool->parallel_for(0, n, fn, {ThreadPool::Schedule::Dynamic, grain});
}

// y [n, l.out] = x [n, l.in] · wᵀ + b
void apply(const Linear& l, const float* x, int64_t n, float* y, ThreadPool* pool) {
  over_rows(pool, n, 64, [&](int64_t r0, int64_t r1) {
    kernels::cpu::GemmArgs<float> g;
    g.trans_b = true;
    g.M = r1 - r0;
    g.N = l.out;
    g.K = l.in;
    g.A = x + r0 * l.in;
    g.lda = l.in;
    g.B = l.w.data();
    g.ldb = l.in;
    g.C = y + r0 * l.out;
    g.ldc = l.out;
    kernels::cpu::blas_gemm(g);
    if (!l.b.empty())
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < l.out; ++c) y[r * l.out + c] += l.b[size_t(c)];
  });
}

void layer_norm(const float* x, const std::vector<float>& w, const std::vector<float>& b, int64_t n, int64_t d,
                float eps, float* y) {
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = x + r * d;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mean += xr[i];
    mean /= double(d);
    for (int64_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= double(d);
    const double inv = 1.0 / std::sqrt(var + double(eps));
    for (int64_t i = 0; i < d; ++i) y[r * d + i] = float((xr[i] - mean) * inv) * w[size_t(i)] + b[size_t(i)];
  }
}

float gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * float(M_SQRT1_2))); }

// Rows of attention segments (windows or the whole image), as [begin, end) of the
// window-ordered sequence.
using Segments = std::vector<std::pair<int64_t, int64_t>>;

// Non-causal softmax attention of every head inside each segment; q, k, v, out [n, D].
void attend(const float* q, const float* k, const float* v, int64_t D, int64_t heads, const Segments& segs,
            float* out, ThreadPool* pool) {
  const int64_t hd = D / heads;
  const float scale = 1.0f / std::sqrt(float(hd));
  constexpr int64_t kBlock = 256;  // query rows per score block: bounded memory for full attention
  // Work items: (segment, head, query block), independent of each other.
  struct Item {
    int64_t b, n, h, q0;
  };
  std::vector<Item> items;
  for (const auto& [b, e] : segs)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t q0 = 0; q0 < e - b; q0 += kBlock) items.push_back({b, e - b, h, q0});
  over_rows(pool, int64_t(items.size()), 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> s;
    for (int64_t it = i0; it < i1; ++it) {
      const auto [b, n, h, q0] = items[size_t(it)];
      {
        const int64_t m = std::min(kBlock, n - q0);
        s.assign(size_t(m * n), 0.0f);
        kernels::cpu::GemmArgs<float> g;
        g.trans_b = true;
        g.M = m;
        g.N = n;
        g.K = hd;
        g.alpha = scale;
        g.A = q + (b + q0) * D + h * hd;
        g.lda = D;
        g.B = k + b * D + h * hd;
        g.ldb = D;
        g.C = s.data();
        g.ldc = n;
        kernels::cpu::blas_gemm(g);
        for (int64_t r = 0; r < m; ++r) {
          float* row = s.data() + r * n;
          const float mx = *std::max_element(row, row + n);
          double sum = 0;
          for (int64_t c = 0; c < n; ++c) sum += (row[c] = std::exp(row[c] - mx));
          const float inv = float(1.0 / sum);
          for (int64_t c = 0; c < n; ++c) row[c] *= inv;
        }
        kernels::cpu::GemmArgs<float> o;
        o.M = m;
        o.N = hd;
        o.K = n;
        o.A = s.data();
        o.lda = n;
        o.B = v + b * D + h * hd;
        o.ldb = D;
        o.C = out + (b + q0) * D + h * hd;
        o.ldc = D;
        kernels::cpu::blas_gemm(o);
      }
    }
  });
}

void check_shape(const EncoderConfig& c, const std::string& what) {
  SQZ_CHECK(c.layers > 0 && c.width > 0 && c.mlp > 0 && c.heads > 0 && c.width % c.heads == 0 &&
                c.head_dim() % 4 == 0 && c.patch > 0 && c.merge > 0 && c.text_width > 0 && c.pos_grid > 0 &&
                c.window > 0 && c.adapter_hidden > 0 && c.full_attention.size() == size_t(c.layers),
            what, ": inconsistent vision shape (", c.layers, " blocks of ", c.width, ", ", c.heads,
            " heads with a head dimension divisible by 4, patch ", c.patch, ", merge ", c.merge, ")");
}

}  // namespace

VisionEncoder::VisionEncoder(std::unique_ptr<Weights> w) : w_(std::move(w)) {}
VisionEncoder::VisionEncoder(VisionEncoder&&) noexcept = default;
VisionEncoder::~VisionEncoder() = default;
const EncoderConfig& VisionEncoder::config() const { return w_->cfg; }

VisionEncoder VisionEncoder::load(const std::string& path) {
  const gguf::File f(path);
  const gguf::Metadata& m = f.metadata();
  const auto arch = m.get_string_opt("general.architecture");
  SQZ_CHECK(arch && *arch == "clip", path, ": not a projector file (general.architecture is '", arch.value_or(""),
            "', expected 'clip')");
  const auto type = m.get_string_opt("clip.projector_type");
  SQZ_CHECK(type && *type == "muse-glimmer", path, ": projector type '", type.value_or(""),
            "' is not supported (expected 'muse-glimmer')");
  auto w = std::make_unique<Weights>();
  EncoderConfig& c = w->cfg;
  const auto u32 = [&](const char* key) { return int64_t(m.get_u32(key)); };
  c.layers = u32("clip.vision.block_count");
  c.width = u32("clip.vision.embedding_length");
  c.mlp = u32("clip.vision.feed_forward_length");
  c.heads = u32("clip.vision.attention.head_count");
  c.patch = u32("clip.vision.patch_size");
  c.merge = u32("clip.vision.spatial_merge_size");
  c.text_width = u32("clip.vision.projection_dim");
  c.layer_norm_eps = m.get_f32_opt("clip.vision.attention.layer_norm_epsilon").value_or(1e-5f);
  c.projector_rms_eps = m.get_f32_opt("clip.vision.projector.rms_norm_epsilon").value_or(1e-5f);
  c.rope_theta = m.get_f32_opt("clip.vision.rope.freq_base").value_or(10000.0f);
  SQZ_CHECK(c.patch > 0, path, ": patch size 0");
  const gguf::TensorInfo* pos = f.find_tensor("v.position_embd.weight");
  SQZ_CHECK(pos != nullptr, path, ": missing tensor 'v.position_embd.weight'");
  const auto side = int64_t(std::llround(std::sqrt(double(pos->n_rows()))));
  SQZ_CHECK(side * side == pos->n_rows(), path, ": ", pos->n_rows(), " learned positions do not form a square grid");
  c.pos_grid = side;
  c.window = int64_t(m.get_u32_or("clip.vision.window_size", uint32_t(side * c.patch))) / c.patch;
  SQZ_CHECK(c.window > 0, path, ": window of ", c.window, " patches");
  c.full_attention.assign(size_t(c.layers), false);
  std::vector<int32_t> full;
  if (auto a = m.get_i32_array_opt("clip.vision.fullatt_block_indexes")) full = *a;
  else
    for (int64_t i = 0; i < c.layers; ++i)
      if ((i + 1) % 4 == 0 || i == c.layers - 1) full.push_back(int32_t(i));  // the reference's default
  for (int32_t i : full) {
    SQZ_CHECK(i >= 0 && i < c.layers, path, ": full-attention block ", i, " of ", c.layers);
    c.full_attention[size_t(i)] = true;
  }
  c.adapter_hidden = 1;  // read from mm.0 below; checked with the rest now
  check_shape(c, path);
  const int64_t D = c.width, P = 3 * c.patch * c.patch;
  w->patch.out = D;
  w->patch.in = P;
  w->patch.w = tensor_f32(f, "v.patch_embd.weight", {c.patch, c.patch, 3, D});
  w->positions = tensor_f32(f, "v.position_embd.weight", {D, side * side});
  w->pre_w = tensor_f32(f, "v.pre_ln.weight", {D});
  w->pre_b = tensor_f32(f, "v.pre_ln.bias", {D});
  w->post_w = tensor_f32(f, "v.post_ln.weight", {D});
  w->post_b = tensor_f32(f, "v.post_ln.bias", {D});
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string b = "v.blk." + std::to_string(i);
    Block k;
    k.ln1_w = tensor_f32(f, b + ".ln1.weight", {D});
    k.ln1_b = tensor_f32(f, b + ".ln1.bias", {D});
    k.ln2_w = tensor_f32(f, b + ".ln2.weight", {D});
    k.ln2_b = tensor_f32(f, b + ".ln2.bias", {D});
    k.q = linear(f, b + ".attn_q", D, D, true);
    k.k = linear(f, b + ".attn_k", D, D, true);
    for (Linear* l : {&k.q, &k.k}) {
      deinterleave_rows(l->w, c.heads, c.head_dim(), D);
      deinterleave_rows(l->b, c.heads, c.head_dim(), 1);
    }
    k.v = linear(f, b + ".attn_v", D, D, true);
    k.o = linear(f, b + ".attn_out", D, D, true);
    k.up = linear(f, b + ".ffn_up", c.mlp, D, true);
    k.down = linear(f, b + ".ffn_down", D, c.mlp, true);
    w->blocks.push_back(std::move(k));
  }
  const gguf::TensorInfo* a1 = f.find_tensor("mm.0.weight");
  SQZ_CHECK(a1 != nullptr, path, ": missing tensor 'mm.0.weight'");
  c.adapter_hidden = a1->n_rows();
  w->adapter1 = linear(f, "mm.0", c.adapter_hidden, c.merge * c.merge * D, false);
  w->adapter2 = linear(f, "mm.1", c.adapter_hidden, c.adapter_hidden, false);
  w->projection = linear(f, "mm.2", c.text_width, c.adapter_hidden, false);
  return VisionEncoder(std::move(w));
}


EncoderConfig small_encoder_config(int64_t text_width) {
  EncoderConfig c;
  c.layers = 4, c.width = 64, c.mlp = 192, c.heads = 4;
  c.patch = 14, c.pos_grid = 16, c.merge = 2, c.window = 8;
  c.adapter_hidden = 128, c.text_width = text_width;
  c.full_attention = {false, false, false, true};
  return c;
}

VisionEncoder VisionEncoder::random(const EncoderConfig& config, uint64_t seed) {
  check_shape(config, "random vision encoder");
  auto w = std::make_unique<Weights>();
  w->cfg = config;
  const EncoderConfig& c = w->cfg;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto fill = [&](std::vector<float>& v, size_t n, float scale) {
    v.resize(n);
    for (float& e : v) e = bf16_to_f32(f32_to_bf16(normal(rng) * scale));
  };
  const auto lin = [&](Linear& l, int64_t out, int64_t in, bool bias) {
    l.out = out;
    l.in = in;
    fill(l.w, size_t(out * in), 1.0f / std::sqrt(float(in)));
    if (bias) fill(l.b, size_t(out), 0.02f);
  };
  const auto norm = [&](std::vector<float>& wt, std::vector<float>& b) {
    wt.assign(size_t(c.width), 1.0f);
    b.assign(size_t(c.width), 0.0f);
  };
  const int64_t D = c.width;
  lin(w->patch, D, 3 * c.patch * c.patch, false);
  fill(w->positions, size_t(c.pos_grid * c.pos_grid * D), 0.02f);
  norm(w->pre_w, w->pre_b);
  norm(w->post_w, w->post_b);
  w->blocks.resize(size_t(c.layers));
  for (Block& b : w->blocks) {
    norm(b.ln1_w, b.ln1_b);
    norm(b.ln2_w, b.ln2_b);
    lin(b.q, D, D, true);
    lin(b.k, D, D, true);
    lin(b.v, D, D, true);
    lin(b.o, D, D, true);
    lin(b.up, c.mlp, D, true);
    lin(b.down, D, c.mlp, true);
  }
  lin(w->adapter1, c.adapter_hidden, c.merge * c.merge * D, false);
  lin(w->adapter2, c.adapter_hidden, c.adapter_hidden, false);
  lin(w->projection, c.text_width, c.adapter_hidden, false);
  return VisionEncoder(std::move(w));
}

void VisionEncoder::save(const std::string& path, const std::string& name) const {
  const EncoderConfig& c = w_->cfg;
  gguf::Writer out(path);
  auto& m = out.metadata();
  m.set("general.architecture", gguf::Value::string("clip"));
  m.set("general.name", gguf::Value::string(name));
  m.set("clip.projector_type", gguf::Value::string("muse-glimmer"));
  m.set("clip.has_vision_encoder", gguf::Value::boolean(true));
  const auto u32 = [&](const char* key, int64_t v) { m.set(key, gguf::Value::u32(uint32_t(v))); };
  u32("clip.vision.image_size", c.pos_grid * c.patch * c.merge);
  u32("clip.vision.patch_size", c.patch);
  u32("clip.vision.embedding_length", c.width);
  u32("clip.vision.feed_forward_length", c.mlp);
  u32("clip.vision.block_count", c.layers);
  u32("clip.vision.projection_dim", c.text_width);
  u32("clip.vision.attention.head_count", c.heads);
  u32("clip.vision.spatial_merge_size", c.merge);
  u32("clip.vision.window_size", c.window * c.patch);
  m.set("clip.vision.attention.layer_norm_epsilon", gguf::Value::f32(c.layer_norm_eps));
  m.set("clip.vision.projector.rms_norm_epsilon", gguf::Value::f32(c.projector_rms_eps));
  m.set("clip.vision.rope.freq_base", gguf::Value::f32(c.rope_theta));
  m.set("clip.vision.image_mean", gguf::Value::f32_array({0.5f, 0.5f, 0.5f}));
  m.set("clip.vision.image_std", gguf::Value::f32_array({0.5f, 0.5f, 0.5f}));
  std::vector<int32_t> full;
  for (int64_t i = 0; i < c.layers; ++i)
    if (c.full_attention[size_t(i)]) full.push_back(int32_t(i));
  m.set("clip.vision.fullatt_block_indexes", gguf::Value::i32_array(full));
  // Copies that outlive this function's locals: the writer reads the bytes at finish().
  std::vector<std::vector<float>> kept;
  const auto add = [&](const std::string& tname, std::vector<float> v, std::vector<int64_t> dims) {
    kept.push_back(std::move(v));
    const auto& d = kept.back();
    out.add_tensor({.name = tname, .type = gguf::GgmlType::F32, .dims = std::move(dims)},
                   std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(d.data()), d.size() * sizeof(float)));
  };
  kept.reserve(8 + 16 * size_t(c.layers));
  const auto add_linear = [&](const std::string& tname, const Linear& l, bool interleave) {
    std::vector<float> w = l.w, b = l.b;
    if (interleave) {  // the inverse of deinterleave_rows
      const auto inter = [&](std::vector<float>& v, int64_t cols) {
        std::vector<float> o(v.size());
        for (int64_t h = 0; h < c.heads; ++h)
          for (int64_t i = 0; i < c.head_dim() / 2; ++i)
            for (int64_t j = 0; j < 2; ++j)
              std::copy_n(v.data() + (h * c.head_dim() + i + j * c.head_dim() / 2) * cols, cols,
                          o.data() + (h * c.head_dim() + 2 * i + j) * cols);
        v.swap(o);
      };
      inter(w, l.in);
      if (!b.empty()) inter(b, 1);
    }
    add(tname + ".weight", std::move(w), {l.in, l.out});
    if (!l.b.empty()) add(tname + ".bias", std::move(b), {l.out});
  };
  const int64_t D = c.width;
  add("v.patch_embd.weight", w_->patch.w, {c.patch, c.patch, 3, D});
  add("v.position_embd.weight", w_->positions, {D, c.pos_grid * c.pos_grid});
  add("v.pre_ln.weight", w_->pre_w, {D});
  add("v.pre_ln.bias", w_->pre_b, {D});
  for (int64_t i = 0; i < c.layers; ++i) {
    const Block& k = w_->blocks[size_t(i)];
    const std::string b = "v.blk." + std::to_string(i);
    add(b + ".ln1.weight", k.ln1_w, {D});
    add(b + ".ln1.bias", k.ln1_b, {D});
    add_linear(b + ".attn_q", k.q, true);
    add_linear(b + ".attn_k", k.k, true);
    add_linear(b + ".attn_v", k.v, false);
    add_linear(b + ".attn_out", k.o, false);
    add(b + ".ln2.weight", k.ln2_w, {D});
    add(b + ".ln2.bias", k.ln2_b, {D});
    add_linear(b + ".ffn_up", k.up, false);
    add_linear(b + ".ffn_down", k.down, false);
  }
  add("v.post_ln.weight", w_->post_w, {D});
  add("v.post_ln.bias", w_->post_b, {D});
  add_linear("mm.0", w_->adapter1, false);
  add_linear("mm.1", w_->adapter2, false);
  add_linear("mm.2", w_->projection, false);
  out.finish();
}

EncoderOutput VisionEncoder::encode(const PixelPatches& px, ThreadPool* pool) const {
  const EncoderConfig& c = w_->cfg;
  const int64_t gh = px.grid_h, gw = px.grid_w, N = gh * gw, D = c.width, hd = c.head_dim();
  SQZ_CHECK(px.patch_size == c.patch, "vision encoder: patches of ", px.patch_size, " pixels, the encoder takes ",
            c.patch);
  SQZ_CHECK(gh > 0 && gw > 0 && gh % c.merge == 0 && gw % c.merge == 0, "vision encoder: a grid of ", gh, " x ", gw,
            " patches (each side a positive multiple of ", c.merge, ")");
  SQZ_CHECK(px.values.size() == size_t(N * 3 * c.patch * c.patch), "vision encoder: ", px.values.size(),
            " pixel values for ", N, " patches");

  // 1. Patch embedding plus the resampled positions.
  std::vector<float> x(size_t(N * D));
  apply(w_->patch, px.values.data(), N, x.data(), pool);
  const auto taps = [&](int64_t index, int64_t size, int64_t* tap, float* weight) {
    const float side = float(c.pos_grid);
    const float src = (float(index) + 0.5f) * side / float(size) - 0.5f;
    const float fl = std::floor(src);
    for (int j = 0; j < 2; ++j) {
      const int64_t raw = int64_t(fl) + j;
      const float wgt = std::max(0.0f, 1.0f - std::fabs(src - (fl + float(j))));
      weight[j] = raw >= 0 && raw <= c.pos_grid - 1 ? wgt : 0.0f;
      tap[j] = std::clamp<int64_t>(raw, 0, c.pos_grid - 1);
    }
  };
  for (int64_t i = 0; i < N; ++i) {
    // The reference resamples with the grid's sides exchanged (height gw, width gh) and
    // decodes the flat index i in that exchanged raster.
    int64_t tr[2], tc[2];
    float wr[2], wc[2];
    taps(i / gh, gw, tr, wr);
    taps(i % gh, gh, tc, wc);
    float* xi = x.data() + i * D;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) {
        const float wt = wr[a] * wc[b];
        if (wt == 0.0f) continue;
        const float* p = w_->positions.data() + (tr[a] * c.pos_grid + tc[b]) * D;
        for (int64_t j = 0; j < D; ++j) xi[j] += wt * p[j];
      }
  }
  std::vector<float> h(x.size());
  layer_norm(x.data(), w_->pre_w, w_->pre_b, N, D, c.layer_norm_eps, h.data());

  // 2. Window order: windows of window × window patches, row-major, patches row-major inside.
  std::vector<int64_t> order;
  Segments windows;
  for (int64_t r0 = 0; r0 < gh; r0 += c.window)
    for (int64_t c0 = 0; c0 < gw; c0 += c.window) {
      const int64_t begin = int64_t(order.size());
      for (int64_t r = r0; r < std::min(gh, r0 + c.window); ++r)
        for (int64_t col = c0; col < std::min(gw, c0 + c.window); ++col) order.push_back(r * gw + col);
      windows.push_back({begin, int64_t(order.size())});
    }
  const Segments whole = {{0, N}};
  for (int64_t i = 0; i < N; ++i) std::copy_n(h.data() + order[size_t(i)] * D, D, x.data() + i * D);

  // Rotary angles per window-ordered row: the first quarter of the head turns with
  // column + 1, the second with row + 1 (then both repeat for the other half).
  const int64_t quarter = hd / 4;
  std::vector<float> inv_freq(static_cast<size_t>(quarter));
  for (int64_t f = 0; f < quarter; ++f) inv_freq[size_t(f)] = 1.0f / std::pow(c.rope_theta, float(2 * f) / float(hd / 2));
  std::vector<float> cosv(size_t(N * hd / 2)), sinv(cosv.size());
  for (int64_t i = 0; i < N; ++i) {
    const int64_t patch = order[size_t(i)];
    const float pos[2] = {float(patch % gw + 1), float(patch / gw + 1)};
    for (int64_t m = 0; m < hd / 2; ++m) {
      const float angle = pos[m / quarter] * inv_freq[size_t(m % quarter)];
      cosv[size_t(i * hd / 2 + m)] = std::cos(angle);
      sinv[size_t(i * hd / 2 + m)] = std::sin(angle);
    }
  }
  const auto rope = [&](float* t) {
    for (int64_t i = 0; i < N; ++i)
      for (int64_t head = 0; head < c.heads; ++head) {
        float* v = t + i * D + head * hd;
        for (int64_t m = 0; m < hd / 2; ++m) {
          const float co = cosv[size_t(i * hd / 2 + m)], si = sinv[size_t(i * hd / 2 + m)];
          const float a = v[m], b = v[m + hd / 2];
          v[m] = a * co - b * si;
          v[m + hd / 2] = b * co + a * si;
        }
      }
  };

  // 3. Blocks.
  std::vector<float> n1(size_t(N * D)), q(n1.size()), k(n1.size()), v(n1.size()), att(n1.size()), o(n1.size());
  std::vector<float> mid(size_t(N * c.mlp));
  for (int64_t l = 0; l < c.layers; ++l) {
    const Block& b = w_->blocks[size_t(l)];
    layer_norm(x.data(), b.ln1_w, b.ln1_b, N, D, 1e-5f, n1.data());  // the reference fixes 1e-5 here
    apply(b.q, n1.data(), N, q.data(), pool);
    apply(b.k, n1.data(), N, k.data(), pool);
    apply(b.v, n1.data(), N, v.data(), pool);
    rope(q.data());
    rope(k.data());
    attend(q.data(), k.data(), v.data(), D, c.heads, c.full_attention[size_t(l)] ? whole : windows, att.data(), pool);
    apply(b.o, att.data(), N, o.data(), pool);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    layer_norm(x.data(), b.ln2_w, b.ln2_b, N, D, 1e-5f, n1.data());
    apply(b.up, n1.data(), N, mid.data(), pool);
    over_rows(pool, N, 64, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0 * c.mlp; i < r1 * c.mlp; ++i) mid[size_t(i)] = gelu(mid[size_t(i)]);
    });
    apply(b.down, mid.data(), N, o.data(), pool);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
  }

  // 4. Back to raster order, post-norm, 2 × 2 pixel shuffle.
  for (int64_t i = 0; i < N; ++i) std::copy_n(x.data() + i * D, D, h.data() + order[size_t(i)] * D);
  layer_norm(h.data(), w_->post_w, w_->post_b, N, D, c.layer_norm_eps, x.data());
  EncoderOutput out;
  const int64_t M = c.merge, T = N / (M * M), F = M * M * D;
  out.tokens = T;
  out.merged.resize(size_t(T * F));
  int64_t t = 0;
  for (int64_t br = 0; br < gh / M; ++br)
    for (int64_t bc = 0; bc < gw / M; ++bc, ++t)
      for (int64_t r = 0; r < M; ++r)
        for (int64_t col = 0; col < M; ++col) {
          const int64_t slot = r * M + col, patch = (br * M + r) * gw + bc * M + col;
          for (int64_t j = 0; j < D; ++j) out.merged[size_t(t * F + j * M * M + slot)] = x[size_t(patch * D + j)];
        }

  // 5. Adapter, projection, RMSNorm without scale.
  std::vector<float> a1(size_t(T * c.adapter_hidden)), a2(a1.size());
  apply(w_->adapter1, out.merged.data(), T, a1.data(), pool);
  for (float& e : a1) e = gelu(e);
  apply(w_->adapter2, a1.data(), T, a2.data(), pool);
  for (float& e : a2) e = gelu(e);
  out.features.resize(size_t(T * c.text_width));
  apply(w_->projection, a2.data(), T, out.features.data(), pool);
  for (int64_t r = 0; r < T; ++r) {
    float* f = out.features.data() + r * c.text_width;
    double ss = 0;
    for (int64_t j = 0; j < c.text_width; ++j) ss += double(f[j]) * f[j];
    const float inv = float(1.0 / std::sqrt(ss / double(c.text_width) + double(c.projector_rms_eps)));
    for (int64_t j = 0; j < c.text_width; ++j) f[j] *= inv;
  }
  return out;
}

}  // namespace squeeze::vision
