#!/usr/bin/env bash
# bench/teacher_cache.sh — what the stored top-k teacher saves: the same top-64
# distillation (the recipe's first STEPS steps) run reading the teacher cache and running
# the teacher, side by side with farm-bench (A = cache, B = teacher), at 4 and 12 steps;
# the difference of the two gives the cost of a step without set-up (STEPS="4 12" to change).
# Needs scripts/train-models' teacher and cache (build/models/kjv/) and farm-bench.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
K="$ROOT/build/models/kjv" D="$ROOT/build/data/kjv" SQ="$ROOT/build/release/tools/squeeze"
command -v farm-bench > /dev/null || { echo "farm-bench not on PATH: skipped"; exit 0; }
for f in "$K/kjv-teacher.f32.gguf" "$K/kjv-teacher.top64.cache" "$D/train.txt"; do
  [ -f "$f" ] || { echo "no $f (run scripts/train-models): skipped"; exit 0; }
done
for steps in ${STEPS:-4 12}; do
  cmd="$SQ distill --teacher $K/kjv-teacher.f32.gguf --config glimmer-kjv --data $D/train.txt --val-data $D/valid.txt
       --batch 16 --seq-len 256 --eval-sequences 8 --seed 1 --steps $steps --lr 1.5e-3 --min-lr 1.5e-4 --warmup 15
       --temperature 1 --topk 64 --no-progress --out /tmp/squeeze-teacher-cache-bench.gguf"
  echo "== $steps steps"
  # shellcheck disable=SC2086
  farm-bench -n 3 --warmup 1 --timeout 900 --vs "$(echo $cmd)" -- $cmd --teacher-cache "$K/kjv-teacher.top64.cache" |
    grep -E "wall s|peak MiB|A/B wall"
done
rm -f /tmp/squeeze-teacher-cache-bench.gguf
