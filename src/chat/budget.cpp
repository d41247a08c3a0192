// chat/budget.cpp — the per-thread budget of the render in progress.
#include "chat/budget.h"

#include "chat/template.h"
#include "core/error.h"

namespace squeeze::chat {
namespace {

thread_local RenderBudget* current = nullptr;

}  // namespace

RenderBudget::RenderBudget(const RenderLimits& limits) : limits_(limits), outer_(current) { current = this; }

RenderBudget::~RenderBudget() {
  current = outer_;
  // Emptied one by one while the list still holds every namespace: destroying one's
  // entries then stops at any namespace they hold instead of recursing into it.
  for (const auto& ns : namespaces_) {
    DictItems gone;
    gone.swap(*ns);
  }
}

void RenderBudget::steps(uint64_t n) {
  const auto max = static_cast<uint64_t>(limits_.max_steps);
  if (n > max || steps_ > max - n) fail("template ran too long (step limit reached: max_steps = ", limits_.max_steps, ")");
  steps_ += n;
}

void RenderBudget::bytes(uint64_t n) {
  const uint64_t max = limits_.max_built_bytes;
  if (n > max || bytes_ > max - n)
    fail("template built too much data (max_built_bytes = ", limits_.max_built_bytes, ")");
  bytes_ += n;
}

void charge_steps(uint64_t n) {
  if (current) current->steps(n);
}

void charge_scan(size_t bytes) { charge_steps(bytes / kBytesPerStep); }

// Bytes only: writing them costs time too, but the bytes budget already bounds that
// (copying 512 MiB takes well under a second), and charging steps as well would make
// the tighter of the two limits stop the accumulating templates the budget allows.
void charge_string(size_t bytes) {
  if (current) current->bytes(bytes);
}

void charge_items(size_t n) {
  if (!current) return;
  current->bytes(saturating_mul(n, sizeof(Value)));
  current->steps(n);
}

void keep_namespace(std::shared_ptr<DictItems> ns) {
  if (current) current->keep_namespace(std::move(ns));
}

}  // namespace squeeze::chat
