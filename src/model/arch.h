// model/arch.h — the architectures squeeze knows, as one enum with one table of names and
// per-architecture facts. The name is GGUF's `general.architecture` value and the prefix
// of the architecture's metadata keys (`llama.block_count`, ...); nothing outside this
// table compares architecture names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace squeeze::model {

enum class Arch : uint8_t { glimmer, llama, gemma3, muse_glimmer, qwen2, qwen3, qwen3moe, gpt_oss };

// Whether an architecture's files carry a sliding window (llama.cpp's requirements).
enum class WindowKey : uint8_t { none, optional, required };

struct ArchInfo {
  Arch arch;
  std::string_view name;  // general.architecture
  // The local/global period when a file names none: layer i is local unless it closes a
  // period (model/config.h period_pattern); 0 = every layer global.
  int64_t default_pattern_period;
  WindowKey window;
};

const ArchInfo& arch_info(Arch a);
inline std::string_view arch_name(Arch a) { return arch_info(a).name; }
// The architecture of a general.architecture value; nullopt when squeeze does not run it.
std::optional<Arch> parse_arch(std::string_view name);
// "glimmer, llama, gemma3, muse-glimmer, qwen2, qwen3, qwen3moe, gpt-oss", for messages.
std::string supported_archs();

}  // namespace squeeze::model
