// kernels/cpu/attention.cpp — the attention driver: validates shapes, cuts the work into
// (query tile, KV head, key split) tasks, runs them on the pool, merges split partials.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_kernel.h"

namespace squeeze::kernels::cpu {

namespace {
constexpr size_t kQ8BlockBytes = 2 + kKvQ8Block;  // f16 scale + 32 codes
}  // namespace

size_t kv_row_bytes(KvType t, int64_t head_dim) {
  const auto n = static_cast<size_t>(head_dim);
  switch (t) {
    case KvType::F32: return 4 * n;
    case KvType::F16:
    case KvType::BF16: return 2 * n;
    case KvType::Q8_0: return n / kKvQ8Block * kQ8BlockBytes;
  }
  return 0;
}

bool kv_type_fits(KvType t, int64_t head_dim) { return t != KvType::Q8_0 || head_dim % kKvQ8Block == 0; }

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::F32: return "f32";
    case KvType::F16: return "f16";
    case KvType::BF16: return "bf16";
    case KvType::Q8_0: return "q8_0";
  }
  return "?";
}

KvType kv_type_from_name(std::string_view name, std::string_view what) {
  std::string n(name);
  for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (KvType t : {KvType::F32, KvType::F16, KvType::BF16, KvType::Q8_0})
    if (n == kv_type_name(t)) return t;
  fail(what, ": unknown KV cache type '", name, "' (f32, f16, bf16, q8_0)");
}

// Round to nearest with the scale amax/127 stored as f16, codes from the f32 ratio: the
// rule of GGUF's reference Q8_0 quantizer (llama.cpp's quantize_row_q8_0_ref).
void kv_encode_row(KvType t, const float* src, std::byte* dst, int64_t n) {
  switch (t) {
    case KvType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case KvType::F16: ops().f32_to_f16(src, reinterpret_cast<uint16_t*>(dst), n); return;
    case KvType::BF16: ops().f32_to_bf16(src, reinterpret_cast<uint16_t*>(dst), n); return;
    case KvType::Q8_0:
      SQZ_CHECK(n % kKvQ8Block == 0, "KV cache: q8_0 rows need a multiple of 32 values, got ", n);
      for (int64_t b = 0; b < n / kKvQ8Block; ++b, src += kKvQ8Block, dst += kQ8BlockBytes) {
        float amax = 0;
        for (int64_t i = 0; i < kKvQ8Block; ++i) amax = std::max(amax, std::fabs(src[i]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t h = f32_to_f16(d);
        std::memcpy(dst, &h, 2);
        auto* q = reinterpret_cast<int8_t*>(dst + 2);
        for (int64_t i = 0; i < kKvQ8Block; ++i) q[i] = static_cast<int8_t>(std::nearbyint(src[i] * id));
      }
      return;
  }
}

void kv_decode_row(KvType t, const std::byte* src, float* dst, int64_t n) {
  switch (t) {
    case KvType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case KvType::F16: reference_ops().f16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, n); return;
    case KvType::BF16: reference_ops().bf16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, n); return;
    case KvType::Q8_0:
      for (int64_t b = 0; b < n / kKvQ8Block; ++b, src += kQ8BlockBytes, dst += kKvQ8Block) {
        uint16_t h;
        std::memcpy(&h, src, 2);
        const float d = f16_to_f32(h);
        const auto* q = reinterpret_cast<const int8_t*>(src + 2);
        for (int64_t i = 0; i < kKvQ8Block; ++i) dst[i] = d * static_cast<float>(q[i]);
      }
      return;
  }
}

float AttentionParams::effective_scale() const {
  return scale != 0.0f ? scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

void AttentionParams::validate() const {
  SQZ_CHECK(n_heads > 0 && n_kv_heads > 0 && head_dim > 0, "attention: heads (", n_heads, "), KV heads (", n_kv_heads,
            ") and head_dim (", head_dim, ") must be positive");
  SQZ_CHECK(n_heads % n_kv_heads == 0, "attention: ", n_heads, " query heads are not a multiple of ", n_kv_heads,
            " KV heads");
  SQZ_CHECK(window >= 0, "attention: negative window ", window);
  SQZ_CHECK(std::isfinite(scale), "attention: scale is not finite");
  if (sinks)
    for (int64_t h = 0; h < n_heads; ++h)
      SQZ_CHECK(std::isfinite(sinks[h]), "attention: sink logit of head ", h, " is not finite");
}

bool attention_isa_available(Isa isa) {
  if (isa == Isa::Scalar) return true;
  if (isa == Isa::Avx2) return cpu_features().has_avx2_fma();
  if (isa == Isa::Avx512) return cpu_features().has_avx512_vnni();  // the avx512 table's requirement
  return false;
}

const char* attention_kernel_name() {
  const Isa isa = active_isa();
  if (isa == Isa::Avx512 && attention_isa_available(Isa::Avx512))
    return "avx512+vnni (head_dim % 16 == 0; avx2+fma for head_dim % 8 == 0)";
  return isa != Isa::Scalar && attention_isa_available(Isa::Avx2) ? isa_name(Isa::Avx2) : isa_name(Isa::Scalar);
}

namespace attn {

TaskScratch begin_task(const Task& t, int64_t tile) {
  struct Storage {
    std::vector<float> buf;
    std::vector<int64_t> index;
  };
  thread_local Storage st;
  const int64_t D = t.kv->head_dim, rows = t.rows();
  const size_t need = static_cast<size_t>(rows * (2 * D + tile + 2) + tile * D);
  if (st.buf.size() < need) st.buf.assign(need, 0.0f);  // zeroed: padded tile rows stay finite
  if (st.index.size() < static_cast<size_t>(3 * rows)) st.index.resize(static_cast<size_t>(3 * rows));
  TaskScratch w;
  w.qs = st.buf.data();
  w.acc = w.qs + rows * D;
  w.s = w.acc + rows * D;
  w.tile = w.s + rows * tile;
  w.m = w.tile + tile * D;
  w.l = w.m + rows;
  w.active = st.index.data();
  w.lo = w.active + rows;
  w.hi = w.lo + rows;
  for (int64_t r = 0; r < rows; ++r) {
    const float* q = t.q_row(r);
    for (int64_t d = 0; d < D; ++d) w.qs[r * D + d] = t.scale * q[d];
    std::fill(w.acc + r * D, w.acc + (r + 1) * D, 0.0f);
    w.m[r] = -std::numeric_limits<float>::infinity();
    w.l[r] = 0.0f;
    // Rows are in query order: row 0 starts first, the last row ends last.
    w.lo[r] = t.row_lo(r);
    w.hi[r] = t.row_hi(r);
  }
  return w;
}

int64_t active_rows(const TaskScratch& w, int64_t rows, int64_t k0, int64_t n) {
  int64_t count = 0;
  for (int64_t r = 0; r < rows; ++r)
    if (w.lo[r] < k0 + n && w.hi[r] > k0) w.active[count++] = r;
  return count;
}

float finish_scale(const Task& t, int64_t r, float m, float l) {
  if (t.sinks == nullptr) return l > 0 ? 1.0f / l : 0.0f;
  const float s = t.sinks[r % t.group], M = std::max(m, s);
  const float keys = l > 0 ? std::exp(m - M) : 0.0f;
  return keys / (l * keys + std::exp(s - M));
}

float merged_scale(const float* sink, float M, float L) {
  if (sink == nullptr) return 1.0f / L;
  // Partials were weighted by e^(m_s − M); a sink above M rescales them all.
  const float top = std::max(M, *sink), keys = std::exp(M - top);
  return keys / (L * keys + std::exp(*sink - top));
}

void finish_task(const Task& t, const TaskScratch& w) {
  const int64_t D = t.kv->head_dim;
  for (int64_t r = 0; r < t.rows(); ++r) {
    const float* acc = w.acc + r * D;
    if (t.finalize) {
      const float inv = finish_scale(t, r, w.m[r], w.l[r]);
      float* o = t.out_row(r);
      for (int64_t d = 0; d < D; ++d) o[d] = inv * acc[d];
    } else {
      float* part = t.partial + r * (D + 2);
      part[0] = w.m[r];
      part[1] = w.l[r];
      std::memcpy(part + 2, acc, static_cast<size_t>(D) * sizeof(float));
    }
  }
}

}  // namespace attn

namespace {

// A view is usable when every position it claims to hold maps to an existing block.
void validate_view(const KvLayerView& kv) {
  SQZ_CHECK(kv_type_fits(kv.type, kv.head_dim), "attention: ", kv_type_name(kv.type), " KV rows need head_dim % 32 == 0, got ",
            kv.head_dim);
  SQZ_CHECK(kv.block_slots > 0 && !kv.blocks.empty(), "attention: KV view has no storage");
  SQZ_CHECK(kv.pos_begin >= 0 && kv.pos_begin <= kv.pos_end, "attention: KV view holds a bad range [", kv.pos_begin,
            ", ", kv.pos_end, ")");
  const int64_t slots = static_cast<int64_t>(kv.blocks.size()) * kv.block_slots;
  if (kv.ring_slots > 0) {
    SQZ_CHECK(kv.ring_slots <= slots, "attention: ring of ", kv.ring_slots, " slots exceeds its ", slots, " slots");
    SQZ_CHECK(kv.pos_end - kv.pos_begin <= kv.ring_slots, "attention: ring view holds more positions than slots");
  } else {
    SQZ_CHECK(kv.pos_end <= slots, "attention: KV view holds position ", kv.pos_end - 1, " beyond its ", slots, " slots");
  }
  for (const std::byte* b : kv.blocks) SQZ_CHECK(b != nullptr, "attention: KV view has a null block");
}

attn::Kernel choose_kernel(const AttentionTuning& tuning, int64_t head_dim) {
  const Isa want = tuning.isa ? *tuning.isa : active_isa();
  if (tuning.isa) SQZ_CHECK(attention_isa_available(want), "attention: ", isa_name(want), " is not available here");
  if (want == Isa::Avx512 && attention_isa_available(Isa::Avx512) && head_dim % 16 == 0) return attn::run_task_avx512;
  if (want != Isa::Scalar && attention_isa_available(Isa::Avx2) && head_dim % 8 == 0) return attn::run_task_avx2;
  return attn::run_task_scalar;
}

struct TaskSlot {
  int64_t tile, kv_head, split, n_splits;
  int64_t partial_offset;  // floats into the partial buffer (split tasks only)
};

// Below this many (query tile, KV head) tasks the driver splits key ranges (decode).
constexpr int64_t kFewTasks = 16;
// Keys per split: 1024 keys of one head are 256 KiB of f16 K + V at D = 128, so the merge
// (rows x D per split) and the scheduling cost are noise next to the split's own work.
constexpr int64_t kKeysPerSplit = 1024;

}  // namespace

void attention(ThreadPool& pool, const AttentionParams& p, const KvLayerView& kv, const AttentionBatch& b,
               const AttentionTuning& tuning) {
  p.validate();
  SQZ_CHECK(b.n_queries >= 0 && b.pos0 >= 0, "attention: bad query count or position");
  if (b.n_queries == 0) return;
  validate_view(kv);
  SQZ_CHECK(kv.n_kv_heads == p.n_kv_heads && kv.head_dim == p.head_dim, "attention: KV view has ", kv.n_kv_heads, "x",
            kv.head_dim, " heads, params want ", p.n_kv_heads, "x", p.head_dim);
  SQZ_CHECK(b.q != nullptr && b.out != nullptr, "attention: null q or out");
  const int64_t D = p.head_dim, H = p.n_heads, G = H / p.n_kv_heads;
  const int64_t q_stride = b.q_stride ? b.q_stride : H * D, out_stride = b.out_stride ? b.out_stride : H * D;
  SQZ_CHECK(q_stride >= H * D && out_stride >= H * D, "attention: row stride shorter than n_heads * head_dim");
  const attn::Task shape{.kv = &kv, .group = G, .pos0 = b.pos0, .window = p.window};
  const int64_t first_needed = shape.first_key(b.pos0), last_pos = b.pos0 + b.n_queries - 1;
  SQZ_CHECK(first_needed >= kv.pos_begin && last_pos < kv.pos_end, "attention: queries at [", b.pos0, ", ", last_pos,
            "] need keys [", first_needed, ", ", last_pos, "] but the cache holds [", kv.pos_begin, ", ", kv.pos_end,
            ") — append the chunk's K/V first, and keep chunks within the ring's headroom");

  const attn::Kernel kernel = choose_kernel(tuning, D);
  const int64_t q_tile = tuning.query_tile > 0 ? std::min(tuning.query_tile, b.n_queries)
                                               : (b.n_queries == 1 ? 1 : std::clamp<int64_t>(64 / G, 1, b.n_queries));
  const int64_t n_tiles = (b.n_queries + q_tile - 1) / q_tile;
  const int64_t base_tasks = n_tiles * p.n_kv_heads;

  // Tasks, the longest (latest) query tiles first so that dynamic scheduling balances.
  // Per calling thread, reused across calls (no allocation once warm). Named references,
  // because the workers must see this thread's buffers, not their own thread_locals.
  thread_local std::vector<TaskSlot> tls_tasks;
  thread_local std::vector<float> tls_partial;
  std::vector<TaskSlot>& tasks = tls_tasks;
  std::vector<float>& partial = tls_partial;
  tasks.clear();
  const int64_t rows_per_tile = q_tile * G;
  int64_t partial_floats = 0;
  for (int64_t tile = n_tiles - 1; tile >= 0; --tile) {
    const int64_t q_last = std::min(b.n_queries, (tile + 1) * q_tile) - 1;
    const int64_t keys = b.pos0 + q_last + 1 - shape.first_key(b.pos0 + tile * q_tile);
    int64_t splits = tuning.key_splits;
    if (splits <= 0) {
      // Flash-decoding: with few (KV head, tile) tasks, split long key ranges so that all
      // threads have work even with one or two KV heads. The split depends on the shape
      // only, never on the thread count, so results are identical for any pool size.
      splits = base_tasks < kFewTasks && !p.batch_invariant ? std::max<int64_t>(1, keys / kKeysPerSplit) : 1;
    }
    splits = std::min(splits, keys);
    for (int64_t h = 0; h < p.n_kv_heads; ++h)
      for (int64_t s = 0; s < splits; ++s) {
        tasks.push_back({tile, h, s, splits, splits > 1 ? partial_floats : -1});
        if (splits > 1) partial_floats += rows_per_tile * (D + 2);
      }
  }
  if (partial.size() < static_cast<size_t>(partial_floats)) partial.resize(static_cast<size_t>(partial_floats));

  const float scale = p.effective_scale();
  auto make_task = [&](const TaskSlot& ts) {
    const int64_t q0 = ts.tile * q_tile, nq = std::min(q_tile, b.n_queries - q0);
    attn::Task t{.kv = &kv,
                 .kv_head = ts.kv_head,
                 .group = G,
                 .n_q = nq,
                 .q = b.q + q0 * q_stride + ts.kv_head * G * D,
                 .q_stride = q_stride,
                 .pos0 = b.pos0 + q0,
                 .window = p.window,
                 .scale = scale,
                 .sinks = p.sinks ? p.sinks + ts.kv_head * G : nullptr};
    const int64_t lo = t.first_key(t.pos0), hi = t.pos0 + nq, len = hi - lo;
    t.key_begin = lo + len * ts.split / ts.n_splits;
    t.key_end = lo + len * (ts.split + 1) / ts.n_splits;
    t.finalize = ts.n_splits == 1;
    t.out = b.out + q0 * out_stride + ts.kv_head * G * D;
    t.out_stride = out_stride;
    t.partial = ts.partial_offset >= 0 ? partial.data() + ts.partial_offset : nullptr;
    return t;
  };
  pool.parallel_for(
      0, static_cast<int64_t>(tasks.size()),
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) kernel(make_task(tasks[static_cast<size_t>(i)]));
      },
      {.schedule = ThreadPool::Schedule::Dynamic, .grain = 1});

  // Merge the splits of each (tile, KV head): out = Σ e^(m_s - M) acc_s / Σ e^(m_s - M) l_s.
  for (size_t i = 0; i < tasks.size();) {
    const TaskSlot& first = tasks[i];
    if (first.n_splits == 1) {
      ++i;
      continue;
    }
    const attn::Task t = make_task(first);
    for (int64_t r = 0; r < t.rows(); ++r) {
      float M = -std::numeric_limits<float>::infinity();
      for (int64_t s = 0; s < first.n_splits; ++s) M = std::max(M, partial[tasks[i + s].partial_offset + r * (D + 2)]);
      float* o = t.out_row(r);
      std::fill(o, o + D, 0.0f);
      float L = 0;
      for (int64_t s = 0; s < first.n_splits; ++s) {
        const float* part = partial.data() + tasks[i + s].partial_offset + r * (D + 2);
        if (part[1] == 0.0f) continue;  // this split saw no key of this row
        const float w = std::exp(part[0] - M);
        L += w * part[1];
        for (int64_t d = 0; d < D; ++d) o[d] += w * part[2 + d];
      }
      // L > 0: every row sees at least its own key.
      const float inv = attn::merged_scale(t.sinks ? t.sinks + r % G : nullptr, M, L);
      for (int64_t d = 0; d < D; ++d) o[d] *= inv;
    }
    i += static_cast<size_t>(first.n_splits);
  }
}

}  // namespace squeeze::kernels::cpu
