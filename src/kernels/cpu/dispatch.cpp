// kernels/cpu/dispatch.cpp — chooses the kernel table once from the CPU's features.
#include <cstdlib>
#include <cstring>

#include "core/cpu_features.h"
#include "core/error.h"
#include "kernels/cpu/ops.h"

namespace squeeze::kernels::cpu {

// Defined in the ISA translation units that this build compiled.
const Ops& avx2_ops();

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2+fma";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

const Ops* ops_for(Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::Scalar: return &reference_ops();
    case Isa::Avx2: return f.has_avx2_fma() ? &avx2_ops() : nullptr;
    case Isa::Avx512: return nullptr;  // no AVX-512 variants yet; AVX2 runs on those CPUs
  }
  return nullptr;
}

namespace {
const Ops& choose() {
  if (const char* want = std::getenv("SQUEEZE_ISA")) {
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
      const char* name = isa_name(isa);
      if (std::strncmp(want, name, std::strlen(want)) == 0 && std::strlen(want) > 0) {
        const Ops* t = ops_for(isa);
        SQZ_CHECK(t != nullptr, "SQUEEZE_ISA=", want, " is not supported on this CPU");
        return *t;
      }
    }
    fail("SQUEEZE_ISA=", want, " is not one of scalar, avx2, avx512");
  }
  for (Isa isa : {Isa::Avx512, Isa::Avx2})
    if (const Ops* t = ops_for(isa)) return *t;
  return reference_ops();
}
}  // namespace

const Ops& ops() {
  static const Ops& active = choose();
  return active;
}

Isa active_isa() { return ops().isa; }
const char* active_isa_name() { return isa_name(active_isa()); }

}  // namespace squeeze::kernels::cpu
