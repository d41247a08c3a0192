// tools/cmd_info.cpp — `squeeze info`: the CPU features and the kernel variants chosen.
#include <cstdio>

#include "args.h"
#include "command.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/ops.h"

namespace {
int run_info(int argc, char** argv) {
  squeeze::cli::Args args("info", "info", "Print the CPU features detected and the kernel variant chosen for them.");
  if (!args.parse(argc, argv)) return 0;
  std::printf("cpu: %s\n", squeeze::cpu_features().describe().c_str());
  std::printf("threads: %d\n", squeeze::default_thread_pool().size());
  std::printf("kernels: %s\n", squeeze::kernels::cpu::active_isa_name());
  std::printf("blas: %s\n", squeeze::kernels::cpu::blas_name());
  return 0;
}
}  // namespace

SQZ_COMMAND("info", "CPU features, thread count and the kernel variants in use", run_info);
