#!/usr/bin/env python3
"""bench/report.py — turn Google Benchmark JSON files into the markdown tables of
docs/benchmarks.md, relating every throughput to the ceilings bench_machine measured
in the same invocation (so the fractions survive this shared machine's noise).

usage: report.py machine.json[,machine2.json] kernels.json thread_pool.json [more.json ...] > table.md
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)["benchmarks"]


def by_name(rows):
    return {r["name"]: r for r in rows if r.get("run_type", "iteration") == "iteration"}


def gb(x):
    return x / 1e9


def best(machine, prefix, threads, key="bytes_per_second"):
    """The best of the probes named prefix*/threads: each ceiling is the maximum over the
    access patterns bench_machine tried and over their repetitions, so that no kernel
    can honestly exceed it."""
    vals = {}
    for r in machine:
        n = r["name"]
        if r.get("run_type", "iteration") != "iteration" or not n.startswith(prefix) or n.split("/")[1] != str(threads):
            continue
        p = n.split("/")[0]
        vals[p] = max(vals.get(p, 0.0), r[key])
    if not vals:
        sys.exit(f"report.py: no {prefix}* probe for {threads} thread(s) in the machine JSON")
    name = max(vals, key=vals.get)
    return vals[name], name


class Fractions:
    """Every fraction of a ceiling printed; above 100% means the probe is wrong."""
    def __init__(self):
        self.over = []

    def pct(self, value, ceiling, what):
        f = 100 * value / ceiling
        if f > 100:
            self.over.append(f"{what}: {f:.0f}%")
        return f"{f:.0f}%"


def main(paths):
    # The machine probes run before and after the kernels (comma-separated files): the
    # host's bandwidth drifts over minutes on a shared VM, and a ceiling must hold for
    # every kernel measured in between.
    machine = [r for path in paths[0].split(",") for r in load(path)]
    with open(paths[0].split(",")[0]) as f:  # bench_machine names its array size (4x the L3)
        array_mib = json.load(f).get("context", {}).get("probe_array_mib", "256")
    ceil, probe = {}, {}
    for t in (1, 2):
        ceil[f"read{t}"], probe[f"read{t}"] = best(machine, "BM_read_bandwidth", t)
        ceil[f"write{t}"], probe[f"write{t}"] = max(
            (best(machine, f"BM_{p}_bandwidth", t)[0], p) for p in ("copy", "update", "triad"))
        ceil[f"fma{t}"], probe[f"fma{t}"] = best(machine, "BM_fma_peak", t, "flops")
        ceil[f"int8{t}"], probe[f"int8{t}"] = best(machine, "BM_int8_peak", t, "int_ops")
        ceil[f"triad{t}"] = best(machine, "BM_triad_bandwidth", t)[0]
    frac = Fractions()
    out = []
    out.append("### Machine ceilings (bench_machine)\n")
    out.append("Each ceiling is the best of its probes (names in brackets) over 5 repetitions each; "
               "writes are counted with their write-allocate reads.\n")
    out.append("| ceiling | 1 thread | 2 threads |\n|---|---|---|")
    out.append(f"| read bandwidth, {array_mib} MiB | {gb(ceil['read1']):.1f} GB/s ({probe['read1'][18:]}) | "
               f"{gb(ceil['read2']):.1f} GB/s ({probe['read2'][18:]}) |")
    out.append(f"| write-mixed bandwidth (copy, in-place update, triad) | {gb(ceil['write1']):.1f} GB/s ({probe['write1']}) | "
               f"{gb(ceil['write2']):.1f} GB/s ({probe['write2']}) |")
    out.append(f"| STREAM triad with write-allocate | {gb(ceil['triad1']):.1f} GB/s | {gb(ceil['triad2']):.1f} GB/s |")
    out.append(f"| peak f32 FMA | {gb(ceil['fma1']):.1f} GFLOP/s ({probe['fma1'][12:]}) | "
               f"{gb(ceil['fma2']):.1f} GFLOP/s ({probe['fma2'][12:]}) |")
    out.append(f"| peak 8-bit integer dot | {gb(ceil['int81']):.1f} GOP/s ({probe['int81'][13:]}) | "
               f"{gb(ceil['int82']):.1f} GOP/s ({probe['int82'][13:]}) |\n")

    for path in paths[1:]:
        rows = by_name(load(path))
        kernel_rows = [r for n, r in rows.items() if "/isa:" in n]
        if kernel_rows:
            out.append("### f32 kernels, one thread (bench_kernels)\n")
            out.append("In-cache rows (n = 4096) are compared with the FMA peak where the kernel's work is "
                       "multiply-adds; large rows (n = 16 Mi, 64 MiB per operand) with the 1-thread DRAM "
                       "ceiling of their kind (read for dot, write-mixed for kernels that also write a row). "
                       "Bytes count DRAM traffic: every pass over an operand, and the write-allocate read of "
                       "an output not read first.\n")
            out.append("| kernel | n | scalar | AVX2 | AVX2 / scalar | AVX2 vs ceiling |\n|---|---|---|---|---|---|")
            names = sorted({n.split("/")[0] for n in rows if "/isa:" in n}, key=lambda s: list(rows).index(next(k for k in rows if k.startswith(s + "/"))))
            for kname in names:
                for n in ("4096", "16777216"):
                    s = rows.get(f"{kname}/isa:0/n:{n}")
                    a = rows.get(f"{kname}/isa:1/n:{n}")
                    if not s or not a:
                        continue
                    bs, ba = s["bytes_per_second"], a["bytes_per_second"]
                    if n == "4096":
                        vs = (f"{frac.pct(a['flops'], ceil['fma1'], kname + ' 4096')} of FMA peak ({gb(a['flops']):.1f} GFLOP/s)"
                              if "flops" in a else "in cache: no DRAM ceiling applies")
                    else:
                        # dot only reads; every other kernel writes a row too
                        ref, label = (ceil["read1"], "read") if kname == "BM_dot" else (ceil["write1"], "write-mixed")
                        vs = f"{frac.pct(ba, ref, kname + ' 16Mi')} of 1-thread {label} bandwidth"
                    out.append(f"| {kname[3:]} | {n} | {gb(bs):.2f} GB/s | {gb(ba):.2f} GB/s | {ba / bs:.1f}x | {vs} |")
            out.append("")
        gemv = [r for n, r in rows.items() if n.startswith("BM_gemv_f32_rotating")]
        if gemv:
            out.append("### f32 GEMV 4096x4096, rotating over 4 matrices (256 MiB)\n")
            out.append("| threads | time | GB/s | % of read bandwidth (same thread count) |\n|---|---|---|---|")
            for r in gemv:
                t = r["name"].split("/")[1]
                bw = ceil["read1"] if t == "1" else ceil["read2"]
                out.append(f"| {t} | {r['real_time']:.2f} ms | {gb(r['bytes_per_second']):.1f} | {frac.pct(r['bytes_per_second'], bw, r['name'])} |")
            out.append("")
        gemm = [r for n, r in rows.items() if n.startswith("BM_gemm_f32")]
        if gemm:
            out.append("### f32 GEMM C[M,4096] = A[M,4096] W[4096,4096]^T, 2 threads\n")
            out.append("| backend | M | GFLOP/s | % of 2-thread FMA peak |\n|---|---|---|---|")
            for r in gemm:
                parts = dict(p.split(":") for p in r["name"].split("/")[1:3])
                backend = {"1": "own 4x4 tile", "2": "OpenBLAS", "3": "packed panels (prefill)"}[parts["backend"]]
                out.append(f"| {backend} | {parts['M']} | {gb(r['flops']):.1f} | {frac.pct(r['flops'], ceil['fma2'], r['name'])} |")
            out.append("")
        pool = [r for n, r in rows.items() if n.startswith("BM_empty") or n.startswith("BM_barrier") or n.startswith("BM_spawn")]
        if pool:
            out.append("### Thread pool dispatch (2 threads)\n")
            out.append("| operation | time per call |\n|---|---|")
            for r in pool:
                out.append(f"| {r['name'].split('/')[0][3:]} | {r['real_time']:.2f} {r['time_unit']} |")
            out.append("")
        quant_gemv = [r for n, r in rows.items() if n.startswith("Gemv/")]
        if quant_gemv:
            out.append("### Quantized GEMV, 2 threads, rotating over 256 MiB of matrices (bench_quant)\n")
            out.append("GB/s counts the weight bytes read per call. The ceiling is bench_machine's 2-thread "
                       "read bandwidth from the same invocation.\n")
            out.append("| type | rows x cols | time | GB/s | % of read bandwidth |\n|---|---|---|---|---|")
            for r in quant_gemv:
                _, t, shape = r["name"].split("/")[:3]
                out.append(f"| {t} | {shape} | {r['real_time']:.0f} {r['time_unit']} | {r['GB/s'] / 1e9:.1f} | "
                           f"{frac.pct(r['GB/s'], ceil['read2'], r['name'])} |")
            out.append("")
        quant_gemm = [r for n, r in rows.items() if n.startswith("Gemm/")]
        if quant_gemm:
            out.append("### Quantized GEMM Y[M,4096] = X[M,4096] W[4096,4096]^T, 2 threads (bench_quant)\n")
            out.append("Packed weights run 8-bit integer products (their fraction is of the 8-bit dot peak); "
                       "the others dequantize into the f32 GEMM (of the FMA peak).\n")
            out.append("| type | M | GOP/s | % of the 2-thread peak |\n|---|---|---|---|")
            for r in quant_gemm:
                _, t, m = r["name"].split("/")[:3]
                peak = ceil["int82"] if t.endswith("+packed") else ceil["fma2"]
                out.append(f"| {t} | {m[1:]} | {r['GFLOP/s'] / 1e9:.1f} | {frac.pct(r['GFLOP/s'], peak, r['name'])} |")
            out.append("")
        dots = [r for n, r in rows.items() if n.startswith("Dot/")]
        if dots:
            out.append("### Quantized row dot, 4096 elements in L1, one thread (bench_quant)\n")
            out.append("| type | scalar GB/s | AVX2 GB/s | AVX2 / scalar |\n|---|---|---|---|")
            types = []
            for r in dots:
                t = r["name"].split("/")[1]
                if t not in types:
                    types.append(t)
            for t in types:
                sc = rows.get(f"Dot/{t}/scalar")
                av = rows.get(f"Dot/{t}/avx2+fma")
                if sc and av and "GB/s" in sc and "GB/s" in av:
                    out.append(f"| {t} | {sc['GB/s'] / 1e9:.2f} | {av['GB/s'] / 1e9:.2f} | {av['GB/s'] / sc['GB/s']:.1f}x |")
            out.append("")
        attn = [r for n, r in rows.items() if n.startswith("BM_Attention")]
        if attn:
            out.append("### Attention, one layer, f16 KV (bench_attention)\n")
            out.append("Decode rotates over enough layers' caches to read 256 MiB of K/V, so each step streams "
                       "its layer from DRAM.\n")
            out.append("| case | time | KV read GB/s or GFLOP/s |\n|---|---|---|")
            for r in attn:
                bw = ceil["read1"] if "threads:1" in r["name"] else ceil["read2"]
                rate = (f"{r['KV_bytes/s'] / 1e9:.1f} GB/s ({frac.pct(r['KV_bytes/s'], bw, r['name'])} of read bandwidth, same threads)"
                        if "KV_bytes/s" in r else f"{r.get('FLOP/s', 0) / 1e9:.1f} GFLOP/s")
                out.append(f"| {r['name'].replace('/real_time', '')} | {r['real_time']:.2f} {r['time_unit']} | {rate} |")
            out.append("")
    print("\n".join(out))
    if frac.over:
        # A kernel above its ceiling means the probe missed an access pattern: fix the
        # probe, never clip the number.
        sys.exit("report.py: fractions above 100% of a ceiling: " + "; ".join(frac.over))


if __name__ == "__main__":
    main(sys.argv[1:])
