// tests/train/train_dump.cpp — writes a tiny model, a batch and our loss and gradients
// for tests/python/test_train_reference.py (an independent numpy implementation):
//   train_dump OUT_DIR tied|untied
// OUT_DIR/model.gguf (F32 weights, read back with the gguf package), tokens.i32,
// targets.i32 ([B·S] each), grad.<tensor name>.f32 (row-major like the weights) and
// meta.txt ("key value" lines: shapes, the layer pattern, seq_len, loss).
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "core/error.h"
#include "train/corpus.h"
#include "train/glimmer_model.h"
#include "train/ops.h"

using namespace squeeze;

namespace {

template <typename T>
void write_raw(const std::string& path, const std::vector<T>& v) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  SQZ_CHECK(out.good(), path, ": write failed");
}

int run(int argc, char** argv) {
  SQZ_CHECK(argc == 3, "usage: train_dump OUT_DIR tied|untied");
  const std::string dir = argv[1], mode = argv[2];
  SQZ_CHECK(mode == "tied" || mode == "untied", "mode must be tied or untied");
  model::ModelConfig c = model::builtin_config("glimmer-tiny");
  c.name = "reference-test";
  c.n_layer = 4;
  c.is_local = model::period_pattern(4, 4);  // [L L L G]
  c.n_embd = 16, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 6, c.n_ff = 24, c.n_vocab = 270;
  c.sliding_window = 3;
  c.tied_output = mode == "tied";
  train::GlimmerModel m = train::GlimmerModel::init(
      c, train::train_tokenizer("the lamp and the light and the sea and the ships", c.n_vocab), {.seed = 17});
  // Perturb the norm weights so that their gradients are tested away from 1.
  std::mt19937_64 rng(4);
  std::normal_distribution<float> nd(0.0f, 0.2f);
  for (auto& p : m.params())
    if (p.is_norm())
      for (float& v : p.value) v += nd(rng);
  const int64_t B = 2, S = 9;
  std::vector<int32_t> tokens(B * S), targets(B * S);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % c.n_vocab);
  for (auto& t : targets) t = static_cast<int32_t>(rng() % c.n_vocab);
  targets[3] = -1;  // ignored position
  train::Tape<float> tape;
  const train::Var loss = train::cross_entropy(tape, m.forward(tape, tokens, S), targets);
  tape.backward(loss);

  m.export_gguf(dir + "/model.gguf", "reference-test");
  write_raw(dir + "/tokens.i32", tokens);
  write_raw(dir + "/targets.i32", targets);
  for (const auto& p : m.params()) write_raw(dir + "/grad." + p.name + ".f32", p.grad);
  std::ofstream meta(dir + "/meta.txt");
  meta << "n_layer " << c.n_layer << "\nn_embd " << c.n_embd << "\nn_head " << c.n_head << "\nn_head_kv "
       << c.n_head_kv << "\nhead_dim " << c.head_dim << "\nn_ff " << c.n_ff << "\nn_vocab " << c.n_vocab
       << "\nrms_eps " << c.rms_eps << "\nrope_base_global " << c.rope_base_global << "\nrope_base_local "
       << c.rope_base_local << "\nwindow " << c.sliding_window << "\ntied " << (c.tied_output ? 1 : 0)
       << "\nbatch " << B << "\nseq_len " << S << "\nloss " << tape.value(loss)[0] << "\nis_local";
  for (bool l : c.is_local) meta << " " << (l ? 1 : 0);
  meta << "\n";
  SQZ_CHECK(meta.good(), dir, "/meta.txt: write failed");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "train_dump: %s\n", e.what());
    return 1;
  }
}
