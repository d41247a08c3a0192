#!/usr/bin/env bash
# bench/moe_table.sh — the MoK dispatch/combine table of docs/moe.md: `squeeze moe bench`
# REPS times (default 5) per transport, R ranks (default 2: one per core on the 2-core
# development machine, the main configuration; more ranks than cores measure the
# scheduler), and per cell the median over the repetitions with its min–max spread; the
# in-process run is repeated through the InfiniBand-class link model (transport inproc+ib),
# with the remote operations and round trips per tiny-payload dispatch.
#
# usage: bench/moe_table.sh [REPS] [RANKS] [extra moe bench options, e.g. --tokens 128]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REPS="${1:-5}"
RANKS="${2:-2}"
shift $(( $# > 2 ? 2 : $# )) || true
SQ="$ROOT/build/release/tools/squeeze"
[ -x "$SQ" ] || { echo "moe_table: build squeeze first (scripts/test or scripts/demo)" >&2; exit 1; }
OUT="$ROOT/build/moe-bench"
mkdir -p "$OUT"
raw="$OUT/raw.txt"
: > "$raw"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun -np "$RANKS")
[ "$RANKS" -le "$(nproc)" ] || MPIRUN+=(--oversubscribe)
for rep in $(seq "$REPS"); do
  echo "moe_table: repetition $rep of $REPS" >&2
  "$SQ" moe bench --transport inproc --ranks "$RANKS" "$@" >> "$raw"
  # The InfiniBand-class link model over in-process ranks: what a remote operation would cost.
  "$SQ" moe bench --transport inproc --ranks "$RANKS" --link ib "$@" >> "$raw"
  "${MPIRUN[@]}" "$SQ" moe bench --transport mpi-shm "$@" >> "$raw"
  "${MPIRUN[@]}" "$SQ" moe bench --transport mpi-rma "$@" >> "$raw"
done
python3 - "$raw" "$REPS" "$RANKS" <<'PY'
import collections, re, statistics, sys
raw, reps, ranks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cols = ["signal_us", "known_us", "dispatch_us", "GB/s", "combine_us", "GB/s", "payload_KB", "meta_KB", "ops", "rtts"]
cells = collections.defaultdict(list)
order, shape = [], ""
num = r"(-?[0-9.]+|nan|-)"
row_re = re.compile(r"^(\S+)\s+(\S+)\s+(.+?)\s+" + r"\s+".join([num] * 10) + r"\s*$")
for line in open(raw):
    if line.startswith("# "):
        shape = line[2:].split(", transport")[0].strip()
        continue
    m = row_re.match(line)
    if not m or m.group(1) == "transport":
        continue
    key = (m.group(1), m.group(2), m.group(3))
    if key not in cells:
        order.append(key)
    cells[key].append([float(x) if x not in ("-", "nan") else None for x in m.groups()[3:]])
print(f"{shape}; R = {ranks}; median over {reps} runs of `squeeze moe bench` (each a median over its "
      f"iterations of the slowest rank), [min–max] over the runs.\n")
print("| transport | routing | method | signal µs | known µs | dispatch µs | combine µs | payload KB | meta KB | remote ops | round trips |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
def cell(runs, i, spread=True, method=""):
    if method == "MPI_Alltoallv" and i == 1:
        return "–"  # the collective has no separate "counts known" moment
    v = [r[i] for r in runs if r[i] is not None]
    if not v:
        return "–"
    med = statistics.median(v)
    return f"{med:.1f} [{min(v):.1f}–{max(v):.1f}]" if spread and len(v) > 1 else f"{med:.1f}"
for key in sorted(order, key=lambda k: (k[1], order.index(k))):
    runs = cells[key]
    print(f"| {key[0]} | {key[1]} | {key[2]} | {cell(runs, 0)} | {cell(runs, 1, method=key[2])} | {cell(runs, 2)} | "
          f"{cell(runs, 4)} | {cell(runs, 6, False)} | {cell(runs, 7, False)} | {cell(runs, 8, False)} | "
          f"{cell(runs, 9, False)} |")
PY
