// mok/grouping.cpp — see grouping.h.
#include "mok/grouping.h"

namespace squeeze::mok {

ExpertGrouping group_by_expert(std::span<const int32_t> expert, int n_experts) {
  ExpertGrouping g;
  g.count.assign(static_cast<size_t>(n_experts), 0);
  for (int32_t e : expert) ++g.count[static_cast<size_t>(e)];
  g.begin.assign(static_cast<size_t>(n_experts) + 1, 0);
  for (size_t e = 0; e < g.count.size(); ++e) g.begin[e + 1] = g.begin[e] + g.count[e];
  g.slots.resize(expert.size());
  std::vector<int64_t> cursor(g.begin.begin(), g.begin.end() - 1);
  for (size_t i = 0; i < expert.size(); ++i)
    g.slots[static_cast<size_t>(cursor[static_cast<size_t>(expert[i])]++)] = static_cast<int32_t>(i);
  return g;
}

}  // namespace squeeze::mok
