// model/memory_plan.cpp — see memory_plan.h.
#include "model/memory_plan.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "model/kv_slots.h"
#include "model/tensor_table.h"

namespace squeeze::model {

int64_t kv_bytes_per_token_layer(int64_t n_head_kv, int64_t head_dim, KvType t) {
  return 2 * n_head_kv * static_cast<int64_t>(kernels::cpu::kv_row_bytes(t, head_dim));
}

KvSizes kv_sizes(const ModelConfig& c, int64_t n_head_kv, int64_t n_ctx, KvType t, int64_t headroom) {
  KvSizes k;
  k.n_head_kv = n_head_kv;
  k.bytes_per_token_layer = kv_bytes_per_token_layer(n_head_kv, c.head_dim, t);
  k.local_slots = kv_layer_slots(c.sliding_window, n_ctx, headroom, kGlobalChunkSlots);
  k.global_slots = kv_layer_slots(0, n_ctx, headroom, kGlobalChunkSlots);
  k.hybrid = k.bytes_per_token_layer * (c.n_global_layers() * k.global_slots + c.n_local_layers() * k.local_slots);
  k.all_global = k.bytes_per_token_layer * c.n_layer * k.global_slots;
  return k;
}

int64_t activation_bytes(const ModelConfig& c, int64_t batch, int64_t n_ctx) {
  const int64_t b = std::min(batch, n_ctx);
  const int64_t f32_per_token = 2 * c.n_embd + 2 * c.q_dim() + 2 * c.kv_dim() + 2 * c.n_ff;
  const int64_t widest = std::max({c.n_embd, c.q_dim(), c.n_ff});
  return 4 * b * f32_per_token + b * widest * 292 / 256 + 4 * c.n_vocab;
}

MemoryPlan plan_memory(const ModelConfig& c, const PlanParams& p) {
  c.validate();
  MemoryPlan plan;
  plan.config = c;
  plan.params = p;
  int64_t& ctx = plan.params.n_ctx;
  if (ctx == 0) ctx = c.n_ctx;
  SQZ_CHECK(ctx > 0 && ctx <= (int64_t{1} << 24), "context length must be in [1, 2^24] (got ", p.n_ctx, ")");
  SQZ_CHECK(p.local_headroom >= 0 && p.local_headroom <= (int64_t{1} << 24), "local headroom must be in [0, 2^24] (got ",
            p.local_headroom, ")");
  SQZ_CHECK(p.batch > 0 && p.batch <= (int64_t{1} << 20), "batch must be in [1, 2^20] (got ", p.batch, ")");
  SQZ_CHECK(p.device_bytes > 0, "device size must be positive (got ", p.device_bytes, ")");
  plan.n_params = count_params(c).total;
  if (p.weight_bytes) {
    SQZ_CHECK(*p.weight_bytes > 0, "weight bytes must be positive (got ", *p.weight_bytes, ")");
    plan.weights.bytes = *p.weight_bytes;
    plan.weights.bpw = static_cast<double>(*p.weight_bytes) * 8.0 / static_cast<double>(plan.n_params);
    plan.weights.description = "exact, from the file";
  } else {
    plan.weights = estimate_weights(c, p.weight_type);
  }
  const int64_t headroom = local_ring_headroom(p.batch, p.local_headroom);
  plan.kv = kv_sizes(c, c.n_head_kv, ctx, p.kv_type, headroom);
  plan.kv_mha = kv_sizes(c, c.n_head, ctx, p.kv_type, headroom);
  plan.activation_bytes = activation_bytes(c, p.batch, ctx);
  plan.total_bytes = plan.weights.bytes + plan.kv.hybrid + plan.activation_bytes;
  plan.fits = plan.total_bytes <= p.device_bytes;
  plan.total_with_companions = plan.total_bytes;
  if (p.vision) {
    const int64_t n = vision_params(*p.vision);
    char note[160];
    std::snprintf(note, sizeof note, "%.2fB parameters, F16; %lld layers x %lld, MLP %lld, adapter %lld -> %lld",
                  n / 1e9, (long long)p.vision->layers, (long long)p.vision->width, (long long)p.vision->mlp,
                  (long long)p.vision->adapter_hidden, (long long)p.vision->text_width);
    plan.companions.push_back({"vision projector file (mmproj)", n, 2 * n, note});
    for (const int64_t cells : {32, 64})  // 1024 and 4096 image tokens
      plan.vision_images.push_back(
          vision_image_cost(*p.vision, cells * p.vision->merge, cells * p.vision->merge));
  }
  if (p.drafter) {
    const int64_t n = drafter_params(*p.drafter);
    const auto bytes = static_cast<int64_t>(static_cast<double>(n) * plan.weights.bpw / 8.0);
    char note[160];
    std::snprintf(note, sizeof note, "%.2fB parameters at %.2f bpw; %lld layers, shares the target's embedding and head",
                  n / 1e9, plan.weights.bpw, (long long)p.drafter->layers);
    plan.companions.push_back({"DFlash drafter", n, bytes, note});
  }
  for (const Companion& c : plan.companions) plan.total_with_companions += c.bytes;
  plan.fits_with_companions = plan.total_with_companions <= p.device_bytes;
  return plan;
}

int64_t parse_byte_size(std::string_view text) {
  std::string s;
  for (char ch : text) {
    if (ch != ' ') s += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  size_t split = 0;
  while (split < s.size() && (std::isdigit(static_cast<unsigned char>(s[split])) || s[split] == '.')) ++split;
  const std::string num = s.substr(0, split), unit = s.substr(split);
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "KB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  else if (unit == "TB") scale = 1e12;
  else if (unit == "KIB") scale = 1024.0;
  else if (unit == "MIB") scale = 1024.0 * 1024;
  else if (unit == "GIB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "TIB") scale = 1024.0 * 1024 * 1024 * 1024;
  // from_chars, not stod: the whole number, no leading space, hex float, inf or nan.
  double v = -1;
  if (const auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v, std::chars_format::general);
      num.empty() || ec != std::errc() || p != num.data() + num.size() || !std::isfinite(v))
    v = -1;
  SQZ_CHECK(scale > 0 && v > 0 && v * scale < 9.2e18, "bad size '", text,
            "' (examples: 24GB, 24GiB, 512MiB, 1000000; GB = 10^9 bytes, GiB = 2^30)");
  return static_cast<int64_t>(std::llround(v * scale));
}

std::string format_bytes(int64_t bytes) {
  char buf[96];
  const double b = static_cast<double>(bytes);
  if (bytes >= 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.2f GB / %.2f GiB", b / 1e9, b / (1024.0 * 1024 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f MB / %.2f MiB", b / 1e6, b / (1024.0 * 1024));
  }
  return buf;
}

namespace {
void row(std::string& out, const std::string& what, int64_t bytes, const std::string& note = "") {
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-34s %16lld B  %28s%s%s\n", what.c_str(), static_cast<long long>(bytes),
                format_bytes(bytes).c_str(), note.empty() ? "" : "  ", note.c_str());
  out += buf;
}
// "device 24.00 GB / 22.35 GiB<what>: fits (5.09 GB / 4.74 GiB free)"
std::string verdict(int64_t device, int64_t total, const char* what) {
  char buf[256];
  const int64_t left = device - total;
  std::snprintf(buf, sizeof buf, "device %s%s: %s (%s %s)\n", format_bytes(device).c_str(), what,
                left >= 0 ? "fits" : "does NOT fit", format_bytes(left >= 0 ? left : -left).c_str(),
                left >= 0 ? "free" : "short");
  return buf;
}
}  // namespace

std::string format_plan(const MemoryPlan& m) {
  const ModelConfig& c = m.config;
  const PlanParams& p = m.params;
  char buf[512];
  std::string out;
  std::snprintf(buf, sizeof buf, "model %s (%s): %.2fB parameters, %lld layers, hidden %lld, heads %lld/%lld x %lld, FFN %lld, vocab %lld\n",
                c.name.c_str(), std::string(arch_name(c.arch)).c_str(), m.n_params / 1e9, (long long)c.n_layer, (long long)c.n_embd,
                (long long)c.n_head, (long long)c.n_head_kv, (long long)c.head_dim, (long long)c.n_ff, (long long)c.n_vocab);
  out += buf;
  const ParamCount pc = count_params(c);
  std::snprintf(buf, sizeof buf,
                "parameters: embedding %.3fB, output head %.3fB, attention %.3fB (%lld x %.1fM%s), FFN %.3fB "
                "(%lld x %.1fM), norms %.2fM\n",
                pc.embedding / 1e9, pc.output / 1e9, c.n_layer * pc.attention_per_layer / 1e9, (long long)c.n_layer,
                pc.attention_per_layer / 1e6, c.attn_gate ? ", output gate included" : "",
                c.n_layer * pc.ffn_per_layer / 1e9, (long long)c.n_layer, pc.ffn_per_layer / 1e6, pc.norms / 1e6);
  out += buf;
  std::snprintf(buf, sizeof buf, "layers: %lld local (window %lld, %lld slots each) + %lld global, pattern %s\n",
                (long long)c.n_local_layers(), (long long)c.sliding_window, (long long)m.kv.local_slots,
                (long long)c.n_global_layers(), describe_pattern(c.is_local).c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "context %lld tokens, KV cache %s (%lld bytes per token per layer)%s\n\n",
                (long long)p.n_ctx, kv_type_name(p.kv_type), (long long)m.kv.bytes_per_token_layer,
                p.n_ctx > c.n_ctx ? " — beyond the model's context length" : "");
  out += buf;
  std::snprintf(buf, sizeof buf, "%.2f bpw; %s", m.weights.bpw, m.weights.description.c_str());
  row(out, "weights (" + (p.weight_bytes ? std::string("file") : p.weight_type) + ")", m.weights.bytes, buf);
  std::snprintf(buf, sizeof buf, "%lld global x %lld + %lld local x %lld tokens", (long long)c.n_global_layers(),
                (long long)m.kv.global_slots, (long long)c.n_local_layers(), (long long)m.kv.local_slots);
  row(out, "KV cache, hybrid local/global", m.kv.hybrid, buf);
  std::snprintf(buf, sizeof buf, "%lld layers x %lld tokens; hybrid saves %.1fx", (long long)c.n_layer,
                (long long)m.kv.global_slots, static_cast<double>(m.kv.all_global) / static_cast<double>(m.kv.hybrid));
  row(out, "KV cache, all layers global", m.kv.all_global, buf);
  const double mha_ratio = static_cast<double>(m.kv_mha.all_global) / static_cast<double>(m.kv.all_global);
  std::snprintf(buf, sizeof buf, "%.0fx the %lld-head KV", mha_ratio, (long long)c.n_head_kv);
  row(out, "KV cache, MHA (" + std::to_string(c.n_head) + " KV heads), hybrid", m.kv_mha.hybrid, buf);
  row(out, "KV cache, MHA, all global", m.kv_mha.all_global, buf);
  std::snprintf(buf, sizeof buf, "f32 prefill batch %lld", (long long)std::min(p.batch, p.n_ctx));
  row(out, "activations + scratch", m.activation_bytes, buf);
  row(out, "total (weights + hybrid KV + act.)", m.total_bytes);
  out += "\n" + verdict(p.device_bytes, m.total_bytes, "");
  if (!m.companions.empty()) {
    out += "\nbeside the text model:\n";
    for (const Companion& comp : m.companions) row(out, comp.name, comp.bytes, comp.note);
    row(out, "total with them", m.total_with_companions);
    out += verdict(p.device_bytes, m.total_with_companions, " with them");
  }
  if (!m.vision_images.empty()) {
    const VisionImageCost& f = m.vision_images.front();
    std::snprintf(buf, sizeof buf,
                  "\nvision encoder per image (%lld full-attention blocks, %lld windowed over %lld x %lld patches):\n",
                  (long long)f.full_layers, (long long)f.window_layers, (long long)p.vision->pos_grid,
                  (long long)p.vision->pos_grid);
    out += buf;
    for (const VisionImageCost& v : m.vision_images) {
      std::snprintf(buf, sizeof buf,
                    "  %5lld image tokens (%lld patches): %6.2f TFLOP = blocks %.2f + attention %.2f + embedding and "
                    "adapter %.2f; f32 activations %.2f GB per block\n",
                    (long long)v.tokens, (long long)v.patches, v.total_flops() / 1e12, v.matmul_flops / 1e12,
                    v.attention_flops / 1e12, (v.embed_flops + v.adapter_flops) / 1e12, double(v.activation_bytes) / 1e9);
      out += buf;
    }
  }
  return out;
}

}  // namespace squeeze::model
