// model/arch.cpp — see arch.h.
#include "model/arch.h"

#include <array>

namespace squeeze::model {

namespace {

// Periods: glimmer [L L L G]; gemma3 llama.cpp's hard-coded [L×5 G]; muse-glimmer llama.cpp's
// fallback (its converter always writes the per-layer array); llama and the qwen family all
// global (llama.cpp runs no sliding window for them; model-families.md §9.16); gpt-oss
// [L G] (llama.cpp's load_swa_pattern(2): layer 0 slides).
constexpr std::array<ArchInfo, 8> kArchs = {{
    {Arch::glimmer, "glimmer", 4, WindowKey::optional},
    {Arch::llama, "llama", 0, WindowKey::none},
    {Arch::gemma3, "gemma3", 6, WindowKey::required},
    {Arch::muse_glimmer, "muse-glimmer", 4, WindowKey::required},
    {Arch::qwen2, "qwen2", 0, WindowKey::none},
    {Arch::qwen3, "qwen3", 0, WindowKey::none},
    {Arch::qwen3moe, "qwen3moe", 0, WindowKey::none},
    {Arch::gpt_oss, "gpt-oss", 2, WindowKey::required},
}};

}  // namespace

const ArchInfo& arch_info(Arch a) { return kArchs[static_cast<size_t>(a)]; }

std::optional<Arch> parse_arch(std::string_view name) {
  for (const ArchInfo& i : kArchs)
    if (i.name == name) return i.arch;
  return std::nullopt;
}

std::string supported_archs() {
  std::string out;
  for (const ArchInfo& i : kArchs) out += (out.empty() ? "" : ", ") + std::string(i.name);
  return out;
}

}  // namespace squeeze::model
