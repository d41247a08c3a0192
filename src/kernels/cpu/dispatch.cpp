// kernels/cpu/dispatch.cpp — chooses the kernel table once from the CPU's features.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "kernels/cpu/ops.h"

namespace squeeze::kernels::cpu {

// Defined in the ISA translation units that this build compiled.
const Ops& avx2_ops();
const Ops& avx512_ops();

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2+fma";
    case Isa::Avx512: return "avx512+vnni";
  }
  return "?";
}

const char* isa_env_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

namespace {

// Every kernel table this build has, worst to best: the only values SQUEEZE_ISA accepts
// (by short name or by isa_name). Adding a table is adding its entry here, which also
// makes it selectable.
struct Table {
  Isa isa;
  const char* env_name;
  const Ops& (*get)();
  bool (*supported)();  // this CPU can run it
};
const Table kTables[] = {
    {Isa::Scalar, isa_env_name(Isa::Scalar), reference_ops, [] { return true; }},
    {Isa::Avx2, isa_env_name(Isa::Avx2), avx2_ops, [] { return cpu_features().has_avx2_fma(); }},
    {Isa::Avx512, isa_env_name(Isa::Avx512), avx512_ops, [] { return cpu_features().has_avx512_vnni(); }},
};

std::string table_names() {
  std::string names;
  for (const Table& t : kTables) names += (names.empty() ? "" : ", ") + std::string(t.env_name);
  return names;
}

const Ops& choose() {
  if (const char* want = std::getenv("SQUEEZE_ISA")) {
    for (const Table& t : kTables) {
      if (std::strcmp(want, t.env_name) != 0 && std::strcmp(want, isa_name(t.isa)) != 0) continue;
      SQZ_CHECK(t.supported(), "SQUEEZE_ISA=", want, ": this CPU cannot run the ", isa_name(t.isa),
                " kernels (valid here: ", table_names(), ")");
      return t.get();
    }
    fail("SQUEEZE_ISA=", want, " names no kernel table of this build (valid: ", table_names(), ")");
  }
  const Ops* best = &reference_ops();
  for (const Table& t : kTables)
    if (t.supported()) best = &t.get();
  return *best;
}

}  // namespace

const Ops* ops_for(Isa isa) {
  for (const Table& t : kTables)
    if (t.isa == isa) return t.supported() ? &t.get() : nullptr;
  return nullptr;  // no table for this ISA in this build
}

std::vector<Isa> available_isas() {
  std::vector<Isa> isas;
  for (const Table& t : kTables)
    if (t.supported()) isas.push_back(t.isa);
  return isas;
}

const Ops& ops() {
  static const Ops& active = choose();
  return active;
}

Isa active_isa() { return ops().isa; }
const char* active_isa_name() { return isa_name(active_isa()); }

}  // namespace squeeze::kernels::cpu
