// quant/count_dispatch.h — internal: a run-time count of 1..4 (rows, tokens, groups) turned
// into a compile-time one, for the kernels templated on it. ISA-neutral (no intrinsics);
// each kernel translation unit instantiates it with its own lambdas.
#pragma once

#include <type_traits>

namespace squeeze::quant::impl {

// Calls f(std::integral_constant<int, n>{}) for n in 1..4; counts above 4 call it with 4.
template <typename F>
void dispatch_count(int n, F&& f) {
  switch (n) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    default: return f(std::integral_constant<int, 4>{});
  }
}

}  // namespace squeeze::quant::impl
