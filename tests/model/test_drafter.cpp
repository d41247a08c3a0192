// tests/model/test_drafter.cpp — the DFlash drafter: its block pass against the reference
// implementation (tests/fixtures/dflash, made by scripts/make-muse-glimmer-fixtures), the
// sliding-window trimming of its context, and the files and targets it must refuse.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "../common/thrown_message.h"
#include "core/error.h"
#include "model/draft_config.h"
#include "model/drafter.h"
#include "model/random_model.h"

using namespace squeeze;
using namespace squeeze::model;

namespace {

// A float32, C-order .npy file (what the fixture script writes): its values.
std::vector<float> read_npy_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  char magic[8];
  in.read(magic, 8);
  uint16_t header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 2);
  std::string header(header_len, ' ');
  in.read(header.data(), header_len);
  if (header.find("'<f4'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos)
    throw std::runtime_error(path + ": not a little-endian float32 C-order array");
  std::vector<char> rest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> v(rest.size() / sizeof(float));
  std::memcpy(v.data(), rest.data(), v.size() * sizeof(float));
  return v;
}

const std::string kFixture = std::string(SQUEEZE_DFLASH_FIXTURES) + "/tiny";

// max |ours − reference| / max |reference|
double relative_error(const std::vector<float>& ours, const std::vector<float>& ref) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(ours[i]) - ref[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(ref[i])));
  }
  return diff / scale;
}

TEST(Drafter, ReadsTheReferenceFileLayout) {
  const auto d = Drafter::load(kFixture + "/drafter.gguf");
  const DraftConfig& c = d->config();
  EXPECT_EQ(c.n_layer, 3);
  EXPECT_EQ(c.n_embd, 64);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_head_kv, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.block_size, 8);
  EXPECT_EQ(c.mask_token_id, 5);
  EXPECT_EQ(c.sliding_window, 6);
  EXPECT_EQ(c.target_layers, (std::vector<int64_t>{0, 2, 4}));  // stored + 1 in the file
  EXPECT_EQ(c.is_sliding, (std::vector<bool>{true, true, true}));
  EXPECT_FLOAT_EQ(c.rope_base, 10000.0f);
}

// The reference ran one call with the 20 context rows and the 8 block rows; here the
// context arrives in two appends (as a generation loop feeds it) and the block runs after.
TEST(Drafter, BlockPassMatchesTheReference) {
  const auto d = Drafter::load(kFixture + "/drafter.gguf");
  const DraftConfig& c = d->config();
  const auto context = read_npy_f32(kFixture + "/context.npy");
  const auto noise = read_npy_f32(kFixture + "/noise_embeds.npy");
  const auto ref = read_npy_f32(kFixture + "/hidden.npy");
  const int64_t width = c.n_taps() * c.n_embd, n_ctx = static_cast<int64_t>(context.size()) / width;
  ASSERT_EQ(n_ctx, 20);
  ASSERT_EQ(static_cast<int64_t>(ref.size()), c.block_size * c.n_embd);
  DraftContext ctx(*d);
  ctx.append(context.data(), 12);
  ctx.append(context.data() + 12 * width, n_ctx - 12);
  std::vector<float> hidden(ref.size());
  ctx.propose_embedded(noise.data(), c.block_size, hidden.data());
  EXPECT_LE(relative_error(hidden, ref), 1e-5);

  // rows past the context rolled back give the same block again
  std::vector<float> junk(static_cast<size_t>(3 * width), 0.5f);
  ctx.append(junk.data(), 3);
  ctx.truncate(n_ctx);
  std::vector<float> again(ref.size());
  ctx.propose_embedded(noise.data(), c.block_size, again.data());
  EXPECT_EQ(again, hidden);
}

// With every layer sliding, the context drops keys no block can see; the block pass is the
// same, bit for bit, as with every key kept (a window wider than the context keeps all).
TEST(Drafter, TrimmedSlidingContextGivesTheSameBlock) {
  const auto path = (std::filesystem::temp_directory_path() / ("squeeze_drafter_" + std::to_string(::getpid()) + ".gguf")).string();
  DraftConfig c;
  c.name = "trim";
  c.n_layer = 2, c.n_embd = 32, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 8, c.n_ff = 64;
  c.sliding_window = 5, c.is_sliding = {true, true}, c.block_size = 4, c.mask_token_id = 1, c.target_layers = {0, 1};
  write_random_drafter(c, gguf::GgmlType::F32, 3, path);
  const auto d = Drafter::load(path);
  std::mt19937 rng(4);
  std::normal_distribution<float> g;
  const int64_t width = 2 * 32, n = 100;
  std::vector<float> taps(static_cast<size_t>(n * width)), embeds(4 * 32);
  for (auto& x : taps) x = g(rng);
  for (auto& x : embeds) x = g(rng);
  DraftContext streamed(*d);
  for (int64_t p = 0; p < n; ++p) streamed.append(taps.data() + p * width, 1);
  EXPECT_GT(streamed.begin(), 0);  // it did drop keys
  std::vector<float> a(4 * 32), b(4 * 32);
  streamed.propose_embedded(embeds.data(), 4, a.data());
  // the same, keeping every key: those beyond the window are masked instead
  DraftContext whole(*d, nullptr, /*trim=*/false);
  for (int64_t p = 0; p < n; ++p) whole.append(taps.data() + p * width, 1);
  EXPECT_EQ(whole.begin(), 0);
  whole.propose_embedded(embeds.data(), 4, b.data());
  EXPECT_EQ(a, b);
  EXPECT_THROW(streamed.truncate(streamed.begin()), Error);
  std::filesystem::remove(path);
}

TEST(DraftConfig, RefusesADrafterThatDoesNotFitTheTarget) {
  DraftConfig c;
  c.name = "d";
  c.n_layer = 2, c.n_embd = 64, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 16, c.n_ff = 128;
  c.is_sliding = {false, false}, c.mask_token_id = 5, c.target_layers = {1, 4};
  ModelConfig t = builtin_config("glimmer-tiny");
  t.n_embd = 64;
  t.n_layer = 6;
  t.n_vocab = 512;
  EXPECT_NO_THROW(c.check_target(t));
  ModelConfig narrow = t;
  narrow.n_embd = 48;
  EXPECT_NE(thrown_message([&] { c.check_target(narrow); }).find("width 64 differs from the target's 48"), std::string::npos);
  ModelConfig shallow = t;
  shallow.n_layer = 4;
  EXPECT_NE(thrown_message([&] { c.check_target(shallow); }).find("taps target layer 4"), std::string::npos);
  DraftConfig bad_mask = c;
  bad_mask.mask_token_id = 512;
  EXPECT_NE(thrown_message([&] { bad_mask.check_target(t); }).find("mask token id 512"), std::string::npos);
  DraftConfig no_mask = c;
  no_mask.mask_token_id = -1;
  EXPECT_THROW(no_mask.validate(), Error);
}

}  // namespace
