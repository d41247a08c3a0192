// mok/grouping.h — one rank's (token, top-k slot) pairs grouped by expert: the order every
// dispatch sends rows in, the order the experts' GEMMs read them, and (experts ascending,
// tokens ascending within one) the order every combine sums a token's slots in — so a
// token's output does not depend on which other tokens share its batch. MoK's dispatcher
// and the models' expert FFNs (model/forward.cpp) both group through this.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace squeeze::mok {

struct ExpertGrouping {
  std::vector<int64_t> count;  // [E] slots routed to each expert
  std::vector<int64_t> begin;  // [E + 1] expert e's slots are slots[begin[e], begin[e + 1])
  std::vector<int32_t> slots;  // t*K + k, grouped by expert, ascending within an expert
};

// expert [tokens · K] (expert ids in [0, n_experts), checked by the caller) -> the grouping.
ExpertGrouping group_by_expert(std::span<const int32_t> expert, int n_experts);

}  // namespace squeeze::mok
