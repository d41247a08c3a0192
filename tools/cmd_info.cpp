// tools/cmd_info.cpp — `squeeze info`: the CPU features and the kernel variants chosen.
#include <cstdio>
#include <string>

#include "args.h"
#include "command.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/ops.h"
#include "quant/packed.h"
#include "quant/traits.h"

namespace {
int run_info(int argc, char** argv) {
  squeeze::cli::Args args("info", "info", "Print the CPU features detected and the kernel variant chosen for them.");
  args.flag({"--isas"}, "print only the kernel tables this CPU runs (SQUEEZE_ISA names), worst to best, one per line");
  if (!args.parse(argc, argv)) return 0;
  if (args.has("--isas")) {
    for (squeeze::kernels::cpu::Isa isa : squeeze::kernels::cpu::available_isas())
      std::printf("%s\n", squeeze::kernels::cpu::isa_env_name(isa));
    return 0;
  }
  std::printf("cpu: %s\n", squeeze::cpu_features().describe().c_str());
  std::printf("threads: %d\n", squeeze::default_thread_pool().size());
  namespace cpu = squeeze::kernels::cpu;
  namespace quant = squeeze::quant;
  std::string tables;
  for (cpu::Isa isa : cpu::available_isas()) tables += (tables.empty() ? "" : ", ") + std::string(cpu::isa_name(isa));
  std::printf("kernels: %s (tables this CPU runs: %s; SQUEEZE_ISA=scalar|avx2|avx512 forces one)\n",
              cpu::active_isa_name(), tables.c_str());
  // Per weight type, the ISA whose dot kernel runs: a table may keep a lower ISA's kernel
  // where its own measured no faster.
  std::string dots;
  for (quant::GgmlType type : quant::supported_types()) {
    const quant::QuantTraits& t = quant::traits(type);
    const char* isa = cpu::isa_name(t.isa);
    for (cpu::Isa lower : cpu::available_isas()) {
      const quant::QuantTraits* l = quant::traits_for(type, lower);
      if (l && l->vec_dot == t.vec_dot) {
        isa = cpu::isa_name(lower);
        break;
      }
    }
    dots += (dots.empty() ? "" : ", ") + std::string(t.name) + " " + isa;
  }
  std::printf("weight dots: %s\n", dots.c_str());
  std::string packed;
  for (quant::GgmlType type : quant::supported_types())
    if (quant::packs(type)) packed += (packed.empty() ? "" : ", ") + std::string(quant::traits(type).name);
  if (packed.empty())
    std::printf("packed weights: none (repacking needs the avx512 table; SQUEEZE_REPACK=0 turns it off)\n");
  else
    std::printf("packed weights: %s repacked at load into %d-row groups for the %s integer tile (SQUEEZE_REPACK=0 "
                "turns it off)\n", packed.c_str(), quant::kPackRows, cpu::active_isa_name());
  std::printf("attention: %s\n", cpu::attention_kernel_name());
  std::printf("blas: %s\n", squeeze::kernels::cpu::blas_name());
  return 0;
}
}  // namespace

SQZ_COMMAND("info", "CPU features, thread count and the kernel variants in use", run_info);
