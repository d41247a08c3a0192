// chat/budget.h — what one render may spend (internal to chat/). A chat template is
// untrusted input, so the evaluator and every builtin whose work grows with its input
// charge the render's budget *before* doing the work or allocating the result:
//
//   steps  (RenderLimits::max_steps): one per statement, loop iteration, call, element
//          visited, and one per kBytesPerStep bytes read — so max_steps bounds the
//          total time, whatever mix of loops and filters spends it;
//   bytes  (RenderLimits::max_built_bytes): the cumulative size of every string and
//          list / dict element the render creates — so a quadratic `ns.s = ns.s ~ x`
//          loop or a list of huge strings ends long before it exhausts memory.
//
// The budget is per thread: RenderBudget installs itself for the render it scopes, and
// the builtins (which have no interpreter to ask) reach it through the charge_*
// functions. Outside a render they charge nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "chat/value.h"

namespace squeeze::chat {

struct RenderLimits;

// Reading this many bytes costs one step: a pass over a 500 kB prompt is
// ~8k steps, while max_steps (10M) still stops a loop re-reading a 60 MB string after
// ~640 MB read (well under a second).
inline constexpr size_t kBytesPerStep = 64;
// Decoding UTF-8 to code points and working on them one by one, per step.
inline constexpr size_t kDecodeBytesPerStep = 4;

class RenderBudget {
 public:
  explicit RenderBudget(const RenderLimits& limits);
  // Empties every namespace the render created: namespaces are the only values that
  // can change after being stored, so the only way to a cycle (ns.x = ns, never freed)
  // or to a chain deeper than kMaxValueDepth (ns.p.x = n; ns.p = n in a loop, whose
  // destruction would recurse once per link).
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  void steps(uint64_t n);
  void bytes(uint64_t n);
  void keep_namespace(std::shared_ptr<DictItems> ns) { namespaces_.push_back(std::move(ns)); }

 private:
  const RenderLimits& limits_;
  uint64_t steps_ = 0;
  uint64_t bytes_ = 0;
  std::vector<std::shared_ptr<DictItems>> namespaces_;
  RenderBudget* outer_;  // the render this one runs inside, if any (restored at the end)
};

// Charges the current render (no-ops outside one); each throws a positionless
// squeeze::Error naming the limit, which the evaluator prefixes with the position.
void charge_steps(uint64_t n);
// Reading `bytes` bytes: steps only.
void charge_scan(size_t bytes);
// About to build `bytes` bytes of new string: built bytes.
void charge_string(size_t bytes);
// About to build `n` new list elements or dict entries.
void charge_items(size_t n);
// A namespace() created during the render, emptied when the render ends.
void keep_namespace(std::shared_ptr<DictItems> ns);

// n * m, or a value over every limit when that overflows (sizes to check, never to allocate).
inline size_t saturating_mul(size_t n, size_t m) {
  size_t r = 0;
  return __builtin_mul_overflow(n, m, &r) ? SIZE_MAX : r;
}

}  // namespace squeeze::chat
