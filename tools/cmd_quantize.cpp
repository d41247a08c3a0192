// tools/cmd_quantize.cpp — `squeeze quantize`: a GGUF model to a preset (Q4_K_M, ...) or
// to a dynamic per-tensor plan under a bit budget; --dry-run plans without writing, from
// a file or from a built-in config alone.
#include <cstdio>
#include <memory>

#include "args.h"
#include "command.h"
#include "config_options.h"
#include "generate/thinking_budget.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/atomic_file.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/memory_plan.h"
#include "quant/imatrix.h"
#include "quantize/dynamic.h"
#include "quantize/plan.h"
#include "quantize/run.h"

namespace {

namespace q = squeeze::quantize;
using squeeze::fail;

int run_quantize(int argc, char** argv) {
  squeeze::cli::Args args(
      "quantize", "quantize IN.gguf OUT.gguf TYPE [options] | --dynamic --target-bpw X IN.gguf OUT.gguf | --dry-run ...",
      "Quantize a GGUF model (F32/F16/BF16 tensors) to a preset TYPE: " + q::preset_names() +
          "\n(also the pure types Q4_K, Q5_K), or with --dynamic to the per-tensor types that minimise the\n"
          "(importance-weighted) reconstruction error under a bit budget. Prints a per-tensor table, the\n"
          "size and the average bits per weight. --dry-run plans without writing: `quantize --dry-run IN.gguf\n"
          "TYPE`, or without any data `quantize --dry-run --config glimmer-1b TYPE` (presets only).");
  args.option({"--imatrix"}, "FILE", "importance matrix (GGUF, from squeeze imatrix or llama-imatrix)")
      .flag({"--dynamic"}, "choose each tensor's type under --target-bpw / --target-size")
      .real_option({"--target-bpw"}, "X", "dynamic: average bits per weight of the whole file", {.min = 0, .max = 64, .min_open = true})
      .option({"--target-size"}, "SIZE", "dynamic: tensor data size, e.g. 20GB, 512MiB")
      .int_option({"--sample"}, "N", "dynamic: most elements per tensor measured (rows sampled evenly beyond)", {1, int64_t{1} << 40}, "1048576")
      .option({"--candidates"}, "T1,T2,...", "dynamic: the types to choose from", "Q4_K,Q5_K,Q6_K,Q8_0,F16")
      .option({"--output-tensor-type"}, "TYPE", "type of the output head (token_embd when tied)")
      .option({"--token-embedding-type"}, "TYPE", "type of token_embd")
      .option({"--tensor-type"}, "REGEX=TYPE", "type of the tensors whose name matches REGEX (repeatable; first match wins)")
      .flag({"--allow-requantize"}, "requantize tensors that are already quantized (errors compound)")
      .flag({"--dry-run"}, "plan and print the table and size without writing")
      .option({"--report"}, "FILE", "also write the table and totals as JSON")
      .option({"--reasoning-budgets"}, "L,M,H,X", "store the thinking budgets of the levels low, medium, high and xhigh\n"
                                                  "(squeeze.reasoning.budget.*: the defaults of generate, chat, serve and eval)")
      .threads_option();
  squeeze::cli::add_config_options(args, "");
  if (!args.parse(argc, argv)) return 0;
  squeeze::set_default_thread_count(args.get_int32("--threads"));

  const bool dynamic = args.has("--dynamic"), dry_run = args.has("--dry-run");
  const bool from_config = args.has("--config");
  const auto& pos = args.positional();
  std::string in, out, type;
  if (from_config) {
    SQZ_CHECK(dry_run, "--config describes a model without data: only with --dry-run");
    SQZ_CHECK(!dynamic, "--dynamic measures the tensors' data: give a model file, not --config");
    SQZ_CHECK(pos.size() == 1, "with --config give only TYPE (got ", pos.size(), " arguments)");
    type = pos[0];
  } else {
    const size_t want_min = dynamic ? (dry_run ? 1 : 2) : (dry_run ? 2 : 3);
    in = args.positional_at(0, "IN.gguf");
    if (pos.size() < want_min)
      fail("missing arguments: quantize IN.gguf OUT.gguf ", dynamic ? "--dynamic --target-bpw X" : "TYPE",
           " (see squeeze quantize --help)");
    if (dynamic) {
      if (pos.size() > 2)
        fail("with --dynamic the types are chosen per tensor: drop '", pos.back(), "'");
      if (pos.size() == 2) out = pos[1];
    } else {
      SQZ_CHECK(pos.size() <= 3, "unexpected extra argument '", pos.back(), "'");
      type = pos.back();
      if (pos.size() == 3) out = pos[1];
    }
  }
  const bool has_target = args.has("--target-bpw") || args.has("--target-size");
  SQZ_CHECK(!dynamic || has_target, "--dynamic needs --target-bpw X or --target-size SIZE");
  SQZ_CHECK(dynamic || !has_target, "--target-bpw / --target-size only apply with --dynamic");
  int64_t target_bytes = 0;
  try {  // before reading any file; the error names the option
    if (args.has("--target-size")) target_bytes = squeeze::model::parse_byte_size(args.get("--target-size"));
  } catch (const squeeze::Error& e) {
    throw e.with_context("--target-size");
  }

  q::PlanOptions po{.preset = type, .dynamic = dynamic};
  if (args.has("--output-tensor-type"))
    po.output_type = q::parse_tensor_type(args.get("--output-tensor-type"), "--output-tensor-type");
  if (args.has("--token-embedding-type"))
    po.token_embd_type = q::parse_tensor_type(args.get("--token-embedding-type"), "--token-embedding-type");
  for (const auto& o : args.get_all("--tensor-type")) po.overrides.push_back(q::parse_override(o));

  // Refuse to replace an input before any work is done (the writers check again).
  const squeeze::gguf::DeclaredInputs inputs({in, args.get("--imatrix")});
  if (!dry_run) squeeze::gguf::Writer(out, {.inputs = {in}});
  if (args.has("--report")) squeeze::gguf::check_output_path(args.get("--report"));

  std::unique_ptr<squeeze::gguf::File> file;
  q::SourceModel source;
  if (from_config) {
    source = q::source_from_config(squeeze::cli::config_from_args(args));
  } else {
    file = std::make_unique<squeeze::gguf::File>(in);
    source = q::source_from_file(*file);
  }
  std::unique_ptr<squeeze::quant::ImportanceMatrix> imatrix;
  if (args.has("--imatrix")) {
    imatrix = std::make_unique<squeeze::quant::ImportanceMatrix>(squeeze::quant::ImportanceMatrix::load(args.get("--imatrix")));
    std::fprintf(stderr, "imatrix: %zu entries, %lld chunks of %lld tokens, from %s\n", imatrix->size(),
                 static_cast<long long>(imatrix->chunk_count), static_cast<long long>(imatrix->chunk_size),
                 args.get("--imatrix").c_str());
  }

  q::Plan plan = q::make_plan(source, po);
  if (imatrix) {
    int missing = 0;
    for (const auto& t : plan.tensors)
      if (t.src->n_dims() >= 2 && squeeze::gguf::ggml_type_info(t.type).block_size > 1 && !imatrix->find(t.src->name)) ++missing;
    if (missing) std::fprintf(stderr, "note: %d quantized tensors have no imatrix entry (unweighted for them)\n", missing);
  }
  if (dynamic) {
    q::DynamicOptions d{.imatrix = imatrix.get()};
    if (args.has("--target-bpw")) d.target_bpw = args.get_double("--target-bpw");
    if (args.has("--target-size")) d.target_bytes = target_bytes;
    SQZ_CHECK(d.target_bpw > 0 || d.target_bytes > 0, "the dynamic target must be positive");
    d.max_sample_elements = args.get_int("--sample");
    d.candidates.clear();
    const std::string list = args.get("--candidates");
    for (size_t p0 = 0; p0 <= list.size();) {
      const size_t p1 = std::min(list.find(',', p0), list.size());
      d.candidates.push_back(q::parse_tensor_type(list.substr(p0, p1 - p0), "--candidates"));
      p0 = p1 + 1;
    }
    q::plan_dynamic(plan, d);
    int sampled = 0;
    for (const auto& t : plan.tensors) sampled += t.sampled;
    if (sampled)
      std::printf("note: the planner measured %d tensors on evenly spaced rows (at most %lld elements each, --sample)\n",
                  sampled, static_cast<long long>(d.max_sample_elements));
  }

  q::RunOptions ro{.input = file.get(), .output_path = dry_run ? "" : out, .imatrix = imatrix.get(),
                   .imatrix_path = args.get("--imatrix"), .allow_requantize = args.has("--allow-requantize")};
  if (args.has("--reasoning-budgets")) {
    const auto budgets = squeeze::cli::parse_int_list("--reasoning-budgets", args.get("--reasoning-budgets"), {0, 1 << 30});
    SQZ_CHECK(budgets.size() == 4, "--reasoning-budgets needs four counts: low,medium,high,xhigh (got ", budgets.size(), ")");
    const char* levels[] = {"low", "medium", "high", "xhigh"};
    for (size_t i = 0; i < 4; ++i)
      ro.extra_metadata.emplace_back(std::string(squeeze::generate::kReasoningBudgetKeyPrefix) + levels[i],
                                     squeeze::gguf::Value::u32(static_cast<uint32_t>(budgets[i])));
  }
  const q::RunResult result = q::run_plan(plan, ro);
  if (dry_run) std::printf("dry run: nothing written\n");
  if (args.has("--report")) squeeze::gguf::write_file_atomically(args.get("--report"), q::result_json(result) + "\n");
  return 0;
}

}  // namespace

SQZ_COMMAND("quantize", "quantize a GGUF model to a preset (Q4_K_M, ...) or a dynamic bit budget", run_quantize);
