// train/draft_data.cpp
#include "train/draft_data.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/dtype.h"
#include "core/error.h"
#include "core/progress.h"
#include "gguf/atomic_file.h"
#include "model/session.h"
#include "text/sampler.h"

namespace squeeze::train {

namespace {

constexpr char kMagic[4] = {'S', 'Q', 'D', 'D'};
constexpr uint32_t kVersion = 1;

template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

}  // namespace

void write_draft_sample(const std::string& path, const DraftSample& s) {
  SQZ_CHECK(static_cast<int64_t>(s.taps.size()) == static_cast<int64_t>(s.tokens.size()) * s.width,
            "draft sample: taps do not match its tokens");
  std::string out(kMagic, 4);
  put(out, kVersion);
  put(out, static_cast<uint32_t>(s.tokens.size()));
  put(out, static_cast<uint32_t>(s.n_prompt));
  put(out, static_cast<uint32_t>(s.width));
  out.append(reinterpret_cast<const char*>(s.tokens.data()), s.tokens.size() * sizeof(int32_t));
  out.append(reinterpret_cast<const char*>(s.taps.data()), s.taps.size() * sizeof(uint16_t));
  gguf::write_file_atomically(path, out);
}

DraftSample read_draft_sample(const std::string& path, int64_t width) {
  std::ifstream f(path, std::ios::binary);
  SQZ_CHECK(f.good(), path, ": cannot open");
  char magic[4];
  uint32_t version = 0, n = 0, n_prompt = 0, w = 0;
  f.read(magic, 4);
  f.read(reinterpret_cast<char*>(&version), 4);
  f.read(reinterpret_cast<char*>(&n), 4);
  f.read(reinterpret_cast<char*>(&n_prompt), 4);
  f.read(reinterpret_cast<char*>(&w), 4);
  SQZ_CHECK(f.good() && std::memcmp(magic, kMagic, 4) == 0 && version == kVersion, path, ": not a drafter data file");
  SQZ_CHECK(w == width, path, ": rows of ", w, " tapped values, the drafter needs ", width,
            " (data made for another target or taps)");
  SQZ_CHECK(n >= 2 && n_prompt >= 1 && n_prompt < n && n < (1u << 24), path, ": implausible sizes (", n, " tokens, ",
            n_prompt, " of prompt)");
  DraftSample s;
  s.n_prompt = n_prompt;
  s.width = width;
  s.tokens.resize(n);
  s.taps.resize(static_cast<size_t>(n) * static_cast<size_t>(width));
  f.read(reinterpret_cast<char*>(s.tokens.data()), static_cast<std::streamsize>(n * sizeof(int32_t)));
  f.read(reinterpret_cast<char*>(s.taps.data()), static_cast<std::streamsize>(s.taps.size() * sizeof(uint16_t)));
  SQZ_CHECK(f.good(), path, ": truncated");
  return s;
}

std::vector<std::string> generate_draft_data(const model::Model& target, const std::vector<int64_t>& tap_layers,
                                             const std::vector<std::vector<int32_t>>& prompts, const std::string& dir,
                                             const DraftDataParams& p) {
  std::filesystem::create_directories(dir);
  const int64_t E = target.config().n_embd, width = static_cast<int64_t>(tap_layers.size()) * E;
  std::vector<std::string> paths;
  int64_t missing = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    char name[48];  // room for any size_t
    std::snprintf(name, sizeof name, "sample_%06zu.sqdd", i);
    paths.push_back(dir + "/" + name);
    missing += !std::filesystem::exists(paths.back());
  }
  if (missing == 0) return paths;
  Progress bar("drafter data", missing);
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (std::filesystem::exists(paths[i])) continue;
    const auto& prompt = prompts[i];
    model::Session session(target, {.n_ctx = static_cast<int64_t>(prompt.size()) + p.gen_tokens + 1});
    session.set_taps(tap_layers);
    text::Sampler sampler({.temperature = p.temperature, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .seed = p.seed + i});
    DraftSample s;
    s.n_prompt = static_cast<int64_t>(prompt.size());
    s.width = width;
    s.tokens = prompt;
    std::vector<float> taps_f32;
    auto logits = session.forward(prompt);
    const auto keep_taps = [&] {
      const auto t = session.taps();
      taps_f32.insert(taps_f32.end(), t.begin(), t.end());
    };
    keep_taps();
    for (int64_t g = 0; g < p.gen_tokens; ++g) {
      const int32_t next = sampler.sample(logits);
      sampler.accept(next);
      s.tokens.push_back(next);
      logits = session.forward(std::span<const int32_t>(&next, 1));  // its taps too: every token has a row
      keep_taps();
      if (std::find(p.stop_ids.begin(), p.stop_ids.end(), next) != p.stop_ids.end()) break;
    }
    s.taps.resize(taps_f32.size());
    for (size_t j = 0; j < taps_f32.size(); ++j) s.taps[j] = f32_to_bf16(taps_f32[j]);
    write_draft_sample(paths[i], s);
    bar.advance(1, std::to_string(s.tokens.size() - prompt.size()) + " tokens");
  }
  return paths;
}

}  // namespace squeeze::train
