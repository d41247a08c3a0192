#!/usr/bin/env bash
# bench/moe_train.sh — the MoE training table of docs/moe.md: `squeeze moe-train` on the
# KJV corpus with `mpirun -np 2` (one rank per core) for the pull-fused, push-unfused and
# MPI_Alltoallv layers (same seed: same data and initial weights), then 4 oversubscribed
# ranks as a correctness check; loss curves in build/moe-train/*.csv, the table on stdout,
# the pull-fused curve plotted to docs/moe-train-loss.png (the others coincide with it).
# usage: bench/moe_train.sh [STEPS]   (default 300)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
SQ=build/release/tools/squeeze
[ -x "$SQ" ] || { echo "moe_train: build squeeze first (scripts/test or scripts/demo)" >&2; exit 1; }
[ -f build/data/kjv/train.txt ] || { echo "moe_train: no KJV corpus (scripts/prepare-corpus)" >&2; exit 1; }
command -v mpirun > /dev/null || { echo "moe_train: mpirun not found, skipped" >&2; exit 0; }
STEPS="${1:-300}"
OUT=build/moe-train
mkdir -p "$OUT"
COMMON=(--data build/data/kjv/train.txt --tokenizer models/muse-glimmer-kjv.f16.gguf --transport mpi-shm
        --layers 4 --experts 8 --topk 2 --expert-ff 256 --batch 4 --seq-len 64 --seed 1 --print-every 50)
MPI=(mpirun --allow-run-as-root -np 2)
echo "| layer | ranks | steps | tokens/s per rank | final loss | max |Δloss| vs pull-fused |"
echo "|---|---|---|---|---|---|"
for style in pull-fused push alltoallv; do
  line=$("${MPI[@]}" "$SQ" moe-train "${COMMON[@]}" --style "$style" --steps "$STEPS" --loss-csv "$OUT/$style.csv" \
    $([ "$style" = pull-fused ] && echo --plot docs/moe-train-loss.png) | tail -1)
  tps=$(sed -n 's/.* \([0-9.]*\) tokens\/s per rank.*/\1/p' <<< "$line")
  fin=$(sed -n 's/.*final loss \([0-9.]*\).*/\1/p' <<< "$line")
  dev=$(python3 - "$OUT/pull-fused.csv" "$OUT/$style.csv" <<'PY'
import csv, sys
a = [float(r["loss"]) for r in csv.DictReader(open(sys.argv[1]))]
b = [float(r["loss"]) for r in csv.DictReader(open(sys.argv[2]))]
print(f"{max(abs(x - y) for x, y in zip(a, b)):.2g}")
PY
)
  echo "| $style | 2 | $STEPS | $tps | $fin | $dev |"
done
# 4 ranks on 2 cores, each with half the batch: the same global batch, so the same curve
# up to float summation order.
line=$(mpirun --allow-run-as-root --oversubscribe -np 4 "$SQ" moe-train "${COMMON[@]}" --batch 2 --style pull-fused \
  --steps 50 --loss-csv "$OUT/np4.csv" | tail -1)
dev=$(python3 - "$OUT/pull-fused.csv" "$OUT/np4.csv" <<'PY'
import csv, sys
a = [float(r["loss"]) for r in csv.DictReader(open(sys.argv[1]))]
b = [float(r["loss"]) for r in csv.DictReader(open(sys.argv[2]))]
print(f"{max(abs(x - y) for x, y in zip(a, b)):.2g}")
PY
)
echo "| pull-fused, 4 ranks oversubscribed (batch 2 each) | 4 | 50 | $(sed -n 's/.* \([0-9.]*\) tokens\/s per rank.*/\1/p' <<< "$line") | – | $dev (first 50 steps) |"
