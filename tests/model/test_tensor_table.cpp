// tests/model/test_tensor_table.cpp — the one tensor table (model/tensor_table.h): the
// names and shapes each architecture's files have, and the layouts the next families
// need (mixed layer kinds, stacked experts, biases, fused tensors, tied or separate
// head), bound from a file written here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "common/thrown_message.h"
#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/forward.h"
#include "model/gguf_config.h"
#include "model/tensor_table.h"
#include "model/weights.h"
#include "train/glimmer_forward.h"

namespace squeeze::model {
namespace {

// Layer il's tensor names without the "blk.N." prefix, in file order.
std::vector<std::string> layer_names(const ModelConfig& c, int64_t il) {
  std::vector<std::string> out;
  const std::string prefix = "blk." + std::to_string(il) + ".";
  for (const TensorShape& t : weight_tensors(c))
    if (t.layer == il) out.push_back(t.name.substr(prefix.size()));
  return out;
}

std::map<std::string, TensorShape> by_name(const ModelConfig& c) {
  std::map<std::string, TensorShape> out;
  for (const TensorShape& t : weight_tensors(c)) EXPECT_TRUE(out.emplace(t.name, t).second) << "duplicate " << t.name;
  return out;
}

// Four layers of every kind: linear attention + dense, linear attention + experts,
// attention + experts, attention + dense; 8 experts of 24 rows (2 per token), a shared
// expert of 40, Gated DeltaNet with 2 key heads and 4 value heads of 16.
ModelConfig mixed_config() {
  ModelConfig c = builtin_config("glimmer-tiny");
  c.name = "mixed";
  c.layer_kinds.assign(static_cast<size_t>(c.n_layer), LayerKind{});
  for (int64_t i = 0; i < c.n_layer; ++i) {
    LayerKind& k = c.layer_kinds[static_cast<size_t>(i)];
    k.mixer = i % 4 < 2 ? Mixer::linear_attention : Mixer::attention;
    k.ffn = i % 4 == 1 || i % 4 == 2 ? Ffn::moe : Ffn::dense;
  }
  c.n_expert = 8;
  c.n_expert_used = 2;
  c.n_ff_exp = 24;
  c.n_ff_shexp = 40;
  c.ssm_conv_kernel = 4;
  c.ssm_state_size = 16;
  c.ssm_group_count = 2;
  c.ssm_time_step_rank = 4;
  return c;
}

TEST(TensorTable, RowsAreInIdOrderWithUniqueNamesPerKind) {
  const auto rows = tensor_rows();
  ASSERT_EQ(rows.size(), static_cast<size_t>(TensorId::count));
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].id, static_cast<TensorId>(i));
    seen.insert({rows[i].base, rows[i].suffix});
  }
  // Only Gated DeltaNet's in_proj_qkv and output gate (attn_qkv, attn_gate) and gpt-oss's
  // pre-FFN norm (post_attention_norm) reuse names.
  EXPECT_EQ(seen.size(), rows.size() - 3);
  EXPECT_EQ(tensor_name(TensorId::attn_q, 3), "blk.3.attn_q.weight");
  EXPECT_EQ(tensor_name(TensorId::attn_q_bias, 0), "blk.0.attn_q.bias");
  EXPECT_EQ(tensor_name(TensorId::ssm_a, 2), "blk.2.ssm_a");
  EXPECT_EQ(tensor_name(TensorId::ssm_dt_bias, 2), "blk.2.ssm_dt.bias");
  EXPECT_EQ(tensor_name(TensorId::token_embd), "token_embd.weight");
}

TEST(TensorTable, EachArchitectureHasTheTensorsLlamaCppWrites) {
  const std::vector<std::string> llama = {"attn_norm.weight", "attn_q.weight",      "attn_k.weight",
                                          "attn_v.weight",    "attn_output.weight", "ffn_norm.weight",
                                          "ffn_gate.weight",  "ffn_up.weight",      "ffn_down.weight"};
  EXPECT_EQ(layer_names(builtin_config("llama-1b"), 0), llama);
  const std::vector<std::string> gemma3 = {
      "attn_norm.weight",    "attn_q.weight",      "attn_k.weight",      "attn_v.weight",
      "attn_q_norm.weight",  "attn_k_norm.weight", "attn_output.weight", "post_attention_norm.weight",
      "ffn_norm.weight",     "ffn_gate.weight",    "ffn_up.weight",      "ffn_down.weight",
      "post_ffw_norm.weight"};
  EXPECT_EQ(layer_names(builtin_config("gemma3-tiny"), 5), gemma3);
  std::vector<std::string> muse = gemma3;
  muse.insert(muse.begin() + 6, "attn_gate.weight");
  EXPECT_EQ(layer_names(builtin_config("muse-glimmer-tiny"), 1), muse);

  // Model-level tensors: the embedding first, the head last; no output when tied.
  const auto untied = weight_tensors(builtin_config("muse-glimmer-tiny"));
  EXPECT_EQ(untied.front().name, "token_embd.weight");
  EXPECT_EQ(untied[untied.size() - 2].name, "output_norm.weight");
  EXPECT_EQ(untied.back().name, "output.weight");
  EXPECT_EQ(untied.back().ne0, 64);
  EXPECT_EQ(untied.back().ne1, 512);
  const auto tied = weight_tensors(builtin_config("gemma3-tiny"));
  EXPECT_EQ(tied.back().name, "output_norm.weight");
}

TEST(TensorTable, MixedLayerKindsStackedExpertsAndSharedExpert) {
  const ModelConfig c = mixed_config();
  ASSERT_NO_THROW(c.validate());
  const int64_t E = c.n_embd;
  // Layer 0: Gated DeltaNet + dense FFN.
  const std::vector<std::string> linear_dense = {"attn_norm.weight",  "attn_qkv.weight",  "attn_gate.weight",
                                                 "ssm_conv1d.weight", "ssm_dt.bias",      "ssm_a",
                                                 "ssm_beta.weight",   "ssm_alpha.weight", "ssm_norm.weight",
                                                 "ssm_out.weight",    "ffn_norm.weight",  "ffn_gate.weight",
                                                 "ffn_up.weight",     "ffn_down.weight"};
  EXPECT_EQ(layer_names(c, 0), linear_dense);
  // Layer 2: attention + experts (router, stacked gate/up/down, shared expert).
  const std::vector<std::string> attention_moe = {"attn_norm.weight",
                                                  "attn_q.weight",
                                                  "attn_k.weight",
                                                  "attn_v.weight",
                                                  "attn_output.weight",
                                                  "ffn_norm.weight",
                                                  "ffn_gate_inp.weight",
                                                  "ffn_gate_exps.weight",
                                                  "ffn_up_exps.weight",
                                                  "ffn_down_exps.weight",
                                                  "ffn_gate_inp_shexp.weight",
                                                  "ffn_gate_shexp.weight",
                                                  "ffn_up_shexp.weight",
                                                  "ffn_down_shexp.weight"};
  EXPECT_EQ(layer_names(c, 2), attention_moe);
  EXPECT_EQ(layer_names(c, 3), layer_names(builtin_config("glimmer-tiny"), 3));

  const auto t = by_name(c);
  const TensorShape& gate = t.at("blk.1.ffn_gate_exps.weight");
  EXPECT_EQ(gate.dims(), (std::vector<int64_t>{E, 24, 8}));
  EXPECT_EQ(gate.elements(), E * 24 * 8);
  EXPECT_EQ(t.at("blk.1.ffn_down_exps.weight").dims(), (std::vector<int64_t>{24, E, 8}));
  EXPECT_EQ(t.at("blk.1.ffn_gate_inp.weight").dims(), (std::vector<int64_t>{E, 8}));
  EXPECT_EQ(t.at("blk.2.ffn_up_shexp.weight").dims(), (std::vector<int64_t>{E, 40}));
  // DeltaNet: conv channels 2·(2·16) + 4·16 = 128, value dim 64.
  EXPECT_EQ(t.at("blk.0.attn_qkv.weight").dims(), (std::vector<int64_t>{E, 128}));
  EXPECT_EQ(t.at("blk.0.attn_gate.weight").dims(), (std::vector<int64_t>{E, 64}));
  EXPECT_EQ(t.at("blk.0.ssm_conv1d.weight").dims(), (std::vector<int64_t>{4, 128}));
  EXPECT_EQ(t.at("blk.0.ssm_out.weight").dims(), (std::vector<int64_t>{64, E}));
  EXPECT_EQ(t.at("blk.0.ssm_a").kind, TensorKind::param);
  EXPECT_EQ(t.at("blk.0.ssm_dt.bias").kind, TensorKind::bias);
  EXPECT_EQ(t.count("blk.0.attn_q.weight"), 0u);
  EXPECT_EQ(t.count("blk.0.ffn_gate_inp.weight"), 0u);

  // Fused expert gate/up: one tensor of 2·n_ff_exp rows per expert instead of two.
  ModelConfig fused = c;
  fused.fused_gate_up_exps = true;
  const auto f = by_name(fused);
  EXPECT_EQ(f.at("blk.1.ffn_gate_up_exps.weight").dims(), (std::vector<int64_t>{E, 48, 8}));
  EXPECT_EQ(f.count("blk.1.ffn_gate_exps.weight") + f.count("blk.1.ffn_up_exps.weight"), 0u);

  // Parameter counts are the table's sums.
  int64_t sum = 0;
  for (const auto& [name, s] : t) sum += s.elements();
  EXPECT_EQ(count_params(c).total, sum);
}

TEST(TensorTable, BiasesFusedQkvSinksAndTiedHead) {
  ModelConfig c = builtin_config("glimmer-tiny");
  c.attn_bias = true;
  c.attn_output_bias = true;
  c.attn_sinks = true;
  auto t = by_name(c);
  EXPECT_EQ(t.at("blk.0.attn_q.bias").dims(), (std::vector<int64_t>{c.q_dim()}));
  EXPECT_EQ(t.at("blk.0.attn_k.bias").dims(), (std::vector<int64_t>{c.kv_dim()}));
  EXPECT_EQ(t.at("blk.0.attn_v.bias").kind, TensorKind::bias);
  EXPECT_EQ(t.at("blk.0.attn_output.bias").dims(), (std::vector<int64_t>{c.n_embd}));
  EXPECT_EQ(t.at("blk.0.attn_sinks.weight").dims(), (std::vector<int64_t>{c.n_head}));
  EXPECT_EQ(t.count("output.weight"), 0u);  // glimmer-tiny is tied

  c.fused_qkv = true;
  c.tied_output = false;
  t = by_name(c);
  EXPECT_EQ(t.at("blk.0.attn_qkv.weight").dims(), (std::vector<int64_t>{c.n_embd, c.q_dim() + 2 * c.kv_dim()}));
  EXPECT_EQ(t.at("blk.0.attn_qkv.bias").dims(), (std::vector<int64_t>{c.q_dim() + 2 * c.kv_dim()}));
  EXPECT_EQ(t.count("blk.0.attn_q.weight") + t.count("blk.0.attn_q.bias"), 0u);
  EXPECT_EQ(t.at("output.weight").dims(), (std::vector<int64_t>{c.n_embd, c.n_vocab}));
}

TEST(TensorTable, ValidateChecksTheNewLayouts) {
  const auto rejects = [](const std::function<void(ModelConfig&)>& edit, const std::string& want) {
    ModelConfig c = mixed_config();
    edit(c);
    const std::string got = thrown_message([&] { c.validate(); });
    EXPECT_NE(got.find(want), std::string::npos) << got;
  };
  rejects([](ModelConfig& c) { c.layer_kinds.pop_back(); }, "layer_kinds has 7 entries");
  rejects([](ModelConfig& c) { c.n_expert = 0; }, "n_expert must be");
  rejects([](ModelConfig& c) { c.n_expert_used = 9; }, "n_expert_used must be in [1, 8]");
  rejects([](ModelConfig& c) { c.n_ff_exp = 0; }, "n_ff_exp");
  rejects([](ModelConfig& c) { c.ssm_group_count = 3; }, "ssm_group_count (3) must divide");
  rejects([](ModelConfig& c) { c.ssm_conv_kernel = 0; }, "ssm_conv_kernel");
}

TEST(TensorTable, ForwardAndTrainerNameWhatTheyDoNotRunYet) {
  EXPECT_EQ(forward_support_error(builtin_config("muse-glimmer-tiny")), "");
  const std::string f = forward_support_error(mixed_config());
  EXPECT_NE(f.find("linear-attention layers"), std::string::npos) << f;
  EXPECT_NE(f.find("a shared expert"), std::string::npos) << f;
  EXPECT_EQ(forward_support_error(builtin_config("qwen3moe-tiny")), "");  // routed experts run
  ModelConfig biased = builtin_config("glimmer-tiny");
  biased.attn_bias = biased.attn_output_bias = biased.attn_sinks = true;  // qwen2's and gpt-oss's run
  EXPECT_EQ(forward_support_error(biased), "");
  EXPECT_EQ(forward_support_error(builtin_config("gpt-oss-tiny")), "");
  EXPECT_NE(train::training_support_error(mixed_config()).find("MoE layers"), std::string::npos);
}

// A file holding every tensor of the mixed config (F32, random), bound by bind_weights:
// every slot is filled with the shape the table gives, experts as stacks.
TEST(TensorTable, BindsEveryTensorOfAMixedModelFromAFile) {
  ModelConfig c = mixed_config();
  c.attn_bias = true;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("squeeze_tensor_table_" + std::to_string(::getpid()) + ".gguf"))
          .string();
  std::map<std::string, std::vector<float>> values;
  {
    gguf::Writer w(path);
    w.metadata().set("general.architecture", gguf::Value::string("glimmer"));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (const TensorShape& s : weight_tensors(c)) {
      std::vector<float>& v = values[s.name];
      v.resize(static_cast<size_t>(s.elements()));
      for (float& x : v) x = dist(rng);
      w.add_tensor({.name = s.name, .type = gguf::GgmlType::F32, .dims = s.dims()},
                   std::span(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)));
    }
    w.finish();
  }
  {
    gguf::File file(path);
    EXPECT_NO_THROW(check_tensor_shapes(file, weight_tensors(c), "mixed"));
    const Weights w = bind_weights(file, c);
    ASSERT_EQ(w.layers.size(), 8u);
    const LayerWeights& linear_moe = w.layers[1];
    EXPECT_EQ(linear_moe.ssm_in_qkv.rows, 128);
    EXPECT_EQ(linear_moe.ssm_a, values.at("blk.1.ssm_a"));
    EXPECT_EQ(linear_moe.ssm_conv1d.size(), 4u * 128);
    EXPECT_EQ(linear_moe.router.rows, 8);
    ASSERT_EQ(linear_moe.gate_exps.n_expert, 8);
    // Expert 5's first row is row 5·24 of the stack.
    const quant::QMatrix e5 = linear_moe.down_exps.expert(5);
    EXPECT_EQ(e5.rows, c.n_embd);
    EXPECT_EQ(e5.cols, 24);
    std::vector<float> row(24);
    dequantize_row(e5, 0, row.data());
    const auto& down = values.at("blk.1.ffn_down_exps.weight");
    EXPECT_TRUE(std::equal(row.begin(), row.end(), down.begin() + 5 * c.n_embd * 24));
    EXPECT_THROW(linear_moe.down_exps.expert(8), Error);
    const LayerWeights& attention_moe = w.layers[2];
    EXPECT_EQ(attention_moe.bq, values.at("blk.2.attn_q.bias"));
    EXPECT_EQ(attention_moe.shexp_gate_inp.size(), static_cast<size_t>(c.n_embd));
    EXPECT_EQ(attention_moe.wq.rows, c.q_dim());
    EXPECT_EQ(w.layers[0].wq.data, nullptr);      // linear attention has no Q
    EXPECT_EQ(w.output.data, w.token_embd.data);  // tied

    // A stack of the wrong expert count is named with the shape the config needs.
    ModelConfig more = c;
    more.n_expert = 16;
    more.n_expert_used = 2;
    const std::string got = thrown_message([&] { check_tensor_shapes(file, weight_tensors(more), "mixed"); });
    EXPECT_NE(got.find("ffn_gate_inp.weight' has shape"), std::string::npos) << got;
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace squeeze::model
