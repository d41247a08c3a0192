// bench/bench_text.cpp — tokenizer encode throughput and per-token sampling cost at a
// 131072-token vocabulary (Glimmer-30B's), reported as bytes/s and items/s.
#include <benchmark/benchmark.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "text/sampler.h"
#include "text/tokenizer.h"

using namespace squeeze::text;

namespace {

// A vocabulary of the 256 bytes plus `n_merges` merges learned greedily from the text
// itself (most frequent adjacent pair within words), so merges fire as in real use.
TokenizerData make_vocab(const std::string& corpus, int n_merges) {
  TokenizerData d;
  for (int b = 0; b < 256; ++b) d.tokens.push_back(gpt2_encode_bytes(std::string(1, static_cast<char>(b))));
  std::vector<std::vector<std::string>> words;
  for (const Piece& p : pre_tokenize(corpus.substr(0, 20000), PreTokenizer::gpt2)) {
    std::vector<std::string> w;
    for (size_t i = 0; i < p.length; ++i) w.emplace_back(1, corpus[p.offset + i]);
    words.push_back(std::move(w));
  }
  for (int m = 0; m < n_merges; ++m) {
    std::map<std::pair<std::string, std::string>, int> count;
    for (const auto& w : words)
      for (size_t i = 0; i + 1 < w.size(); ++i) ++count[{w[i], w[i + 1]}];
    if (count.empty()) break;
    auto best = count.begin();
    for (auto it = count.begin(); it != count.end(); ++it)
      if (it->second > best->second) best = it;
    const auto [a, b] = best->first;
    d.merges.push_back(gpt2_encode_bytes(a) + " " + gpt2_encode_bytes(b));
    d.tokens.push_back(gpt2_encode_bytes(a + b));
    for (auto& w : words) {
      std::vector<std::string> out;
      for (size_t i = 0; i < w.size(); ++i) {
        if (i + 1 < w.size() && w[i] == a && w[i + 1] == b) out.push_back(a + b), ++i;
        else out.push_back(w[i]);
      }
      w = std::move(out);
    }
  }
  return d;
}

std::string english_like(size_t bytes) {
  static const char* words[] = {"the", "of", "and", "to", "in", "is", "it", "you", "that", "was", "for", "on",
                                "are", "with", "as", "his", "they", "be", "at", "one", "have", "this", "from",
                                "token", "model", "attention", "window", "cache", "1234", "2048,", "don't"};
  std::mt19937 gen(1);
  std::string s;
  while (s.size() < bytes) {
    s += words[gen() % std::size(words)];
    s += gen() % 12 == 0 ? ".\n" : " ";
  }
  return s;
}

void BM_Encode(benchmark::State& state) {
  const std::string text = english_like(1 << 16);
  static const Tokenizer tok(make_vocab(text, 300));
  size_t n = 0;
  for (auto _ : state) {
    auto ids = tok.encode(text, {.add_special = false});
    n = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["bytes/token"] = static_cast<double>(text.size()) / static_cast<double>(n);
}
BENCHMARK(BM_Encode)->Unit(benchmark::kMillisecond);

void BM_Sample(benchmark::State& state) {
  std::vector<float> logits(131072);
  std::mt19937 gen(2);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (float& x : logits) x = nd(gen);
  SamplerParams p;  // defaults: temp 0.8, top-k 40, top-p 0.95, min-p 0.05
  if (state.range(0) == 1) p = {.temperature = 1.0f, .top_k = 0, .top_p = 0.9f, .min_p = 0.0f};
  if (state.range(0) == 2) p = {.temperature = 0.0f};
  Sampler s(p);
  for (auto _ : state) benchmark::DoNotOptimize(s.sample(logits));
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(state.range(0) == 0 ? "defaults" : state.range(0) == 1 ? "top-p 0.9 only (full sort)" : "greedy");
}
BENCHMARK(BM_Sample)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

}  // namespace
BENCHMARK_MAIN();
