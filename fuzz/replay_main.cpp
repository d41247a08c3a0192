// fuzz/replay_main.cpp — the fuzz targets without libFuzzer, for the test suite: every
// committed corpus input is run, then for --seconds, mutations of them (byte flips,
// inserts, deletions, duplicated ranges, splices of two inputs). Built with the project's
// own compiler into every build, so the Sanitize stage of scripts/test runs each target
// under ASan + UBSan; coverage-guided campaigns are scripts/fuzz's (clang, libFuzzer).
// The mutations follow --seed (printed), so a failure reproduces with the same command.
//
//   fuzz_gguf_replay [--seconds S] [--seed N] CORPUS_DIR...
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;
constexpr size_t kMaxLen = 4096;  // as scripts/fuzz's -max_len

Bytes read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void run(const Bytes& b) { LLVMFuzzerTestOneInput(b.data(), b.size()); }

Bytes mutate(Bytes b, const std::vector<Bytes>& corpus, std::mt19937_64& rng) {
  const auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const int steps = 1 + static_cast<int>(rng() % 6);
  for (int s = 0; s < steps; ++s) {
    switch (rng() % 6) {
      case 0:  // flip bits of a byte
        if (!b.empty()) b[pick(b.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1:  // an interesting byte somewhere
        if (!b.empty()) {
          static const uint8_t kBytes[] = {0, 1, 0x7f, 0x80, 0xff, '{', '}', '[', ']', '"', '\\', '<', '%', '0', '9'};
          b[pick(b.size())] = kBytes[pick(sizeof kBytes)];
        }
        break;
      case 2:  // insert random bytes
        b.insert(b.begin() + static_cast<ptrdiff_t>(pick(b.size() + 1)), 1 + pick(8), static_cast<uint8_t>(rng()));
        break;
      case 3:  // delete a range
        if (!b.empty()) {
          const size_t at = pick(b.size()), n = 1 + pick(std::min<size_t>(b.size() - at, 64));
          b.erase(b.begin() + static_cast<ptrdiff_t>(at), b.begin() + static_cast<ptrdiff_t>(at + n));
        }
        break;
      case 4:  // duplicate a range
        if (!b.empty()) {
          const size_t at = pick(b.size()), n = 1 + pick(std::min<size_t>(b.size() - at, 256));
          const Bytes piece(b.begin() + static_cast<ptrdiff_t>(at), b.begin() + static_cast<ptrdiff_t>(at + n));
          b.insert(b.begin() + static_cast<ptrdiff_t>(pick(b.size() + 1)), piece.begin(), piece.end());
        }
        break;
      case 5: {  // splice: a prefix of this input, a suffix of another
        const Bytes& o = corpus[pick(corpus.size())];
        const size_t cut = pick(b.size() + 1), from = pick(o.size() + 1);
        b.resize(cut);
        b.insert(b.end(), o.begin() + static_cast<ptrdiff_t>(from), o.end());
        break;
      }
    }
  }
  if (b.size() > kMaxLen) b.resize(kMaxLen);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0;
  uint64_t seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::vector<std::filesystem::path> dirs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      dirs.emplace_back(a);
    }
  }
  std::vector<Bytes> corpus;
  for (const auto& d : dirs) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(d))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) corpus.push_back(read_file(f));
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "no corpus inputs in the given folders\n");
    return 2;
  }
  for (const Bytes& b : corpus) run(b);
  // Printed before the mutations, so that a crash among them reproduces with --seed; with
  // SQUEEZE_FUZZ_LAST=FILE each mutated input is written there first (a crash leaves it).
  std::printf("replayed %zu corpus inputs; mutating with --seed %llu\n", corpus.size(), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  const char* last = std::getenv("SQUEEZE_FUZZ_LAST");
  std::mt19937_64 rng(seed);
  int64_t runs = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    for (int k = 0; k < 16; ++k, ++runs) {
      const Bytes input = mutate(corpus[static_cast<size_t>(rng() % corpus.size())], corpus, rng);
      if (last) std::ofstream(last, std::ios::binary).write(reinterpret_cast<const char*>(input.data()),
                                                           static_cast<std::streamsize>(input.size()));
      run(input);
    }
  }
  std::printf("%lld mutated inputs in %.0f s (--seed %llu)\n", static_cast<long long>(runs), seconds,
              static_cast<unsigned long long>(seed));
  return 0;
}
