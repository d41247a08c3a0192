// vision/image_prompt.cpp — see image_prompt.h.
#include "vision/image_prompt.h"

#include <algorithm>

#include "core/error.h"

namespace squeeze::vision {

namespace {

// splitmix64's finaliser: spreads (image, row) over the 63 key bits.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t digest_prefix(const std::string& hex) {
  uint64_t v = 0;
  for (size_t i = 0; i < 16 && i < hex.size(); ++i) {
    const char c = hex[i];
    v = v << 4 | static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return v;
}

}  // namespace

ImageTokenIds ImageTokenIds::of(const text::Tokenizer& tok) {
  ImageTokenIds t;
  const auto find = [&](const char* name) {
    const auto id = tok.find_token(name);
    SQZ_CHECK(id.has_value(), "the model has no ", name, " token: it does not take images");
    return *id;
  };
  t.start = find("<|image_start|>");
  t.patch = find("<|patch|>");
  t.end = find("<|image_end|>");
  return t;
}

PromptRows expand_images(std::span<const int32_t> ids, std::span<const std::shared_ptr<const ImageFeatures>> images,
                         const ImageTokenIds& tokens, int64_t n_embd) {
  const auto placeholders = static_cast<size_t>(std::count(ids.begin(), ids.end(), tokens.patch));
  SQZ_CHECK(placeholders == images.size(), "the prompt has ", placeholders, " image placeholder(s) (<|patch|>) for ",
            images.size(), " image(s)");
  PromptRows out;
  out.images.assign(images.begin(), images.end());
  size_t next = 0;
  for (const int32_t id : ids) {
    if (id != tokens.patch) {
      out.ids.push_back(id);
      out.embeddings.push_back(nullptr);
      out.keys.push_back(text_key(id));
      continue;
    }
    const ImageFeatures& f = *images[next++];
    SQZ_CHECK(f.text_width == n_embd, "image features of width ", f.text_width, " for a model of width ", n_embd,
              " (the projector does not belong to this model)");
    out.image_starts.push_back(static_cast<int64_t>(out.ids.size()));
    out.ids.push_back(tokens.start);
    out.embeddings.push_back(nullptr);
    out.keys.push_back(text_key(tokens.start));
    const uint64_t base = digest_prefix(f.digest);
    for (int64_t r = 0; r < f.tokens; ++r) {
      out.ids.push_back(tokens.patch);
      out.embeddings.push_back(f.row(r));
      out.keys.push_back(mix(base ^ mix(static_cast<uint64_t>(r))) | (uint64_t(1) << 63));
    }
    out.ids.push_back(tokens.end);
    out.embeddings.push_back(nullptr);
    out.keys.push_back(text_key(tokens.end));
  }
  if (images.empty()) out.embeddings.clear();
  return out;
}

size_t common_prefix(std::span<const uint64_t> a, std::span<const uint64_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace squeeze::vision
