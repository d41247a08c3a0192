#!/usr/bin/env python3
"""bench/distill_report.py — the tables of docs/distillation-results.md from what
scripts/train-models and scripts/distill-report left in build/models/kjv, and the loss
plot (matplotlib).

usage: distill_report.py build/models/kjv docs/distill-loss.png > docs/distillation-results.md
"""
import csv
import json
import math
import os
import re
import sys

RUNS = [  # name, what it is, tokens per step
    ("kjv-teacher", "teacher, from scratch (cross-entropy)", 4096),
    ("glimmer-kjv-scratch", "student, from scratch (cross-entropy)", 4096),
    ("glimmer-kjv-logit", "student, logit distillation, full vocabulary (forward KL, τ=1)", 4096),
    ("glimmer-kjv-logit-top64", "student, logit distillation, teacher's top-64 (+ tail), stored while training", 4096),
    ("glimmer-kjv-logit-top64-hard", "student, the stored top-64 read back, mixed 1:1 with the data's cross-entropy", 4096),
    ("glimmer-kjv-onpolicy", "student, logit distillation to step {start}, then on-policy (reverse KL)", 2048),
]
QUANT_TYPES = ["F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "dyn4.5", "dyn5.3"]


def on_policy_start(d):
    """The logit step the on-policy stage started from (glimmer-kjv-logit-at-N.ckpt.gguf)."""
    for f in os.listdir(d):
        m = re.match(r"glimmer-kjv-logit-at-(\d+)\.ckpt\.gguf$", f)
        if m:
            return int(m.group(1))
    return 0


def load_json(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def read_seconds(d, name):
    total = 0
    for suffix in (".seconds", ".part1.seconds"):
        p = os.path.join(d, name + suffix)
        if os.path.exists(p):
            total += int(open(p).read().strip())
    return total


def read_params(d, name):
    for log in (name + ".log", name + ".part1.log"):
        p = os.path.join(d, log)
        if os.path.exists(p):
            m = re.search(r"([0-9.]+)M parameters", open(p, errors="replace").read())
            if m:
                return float(m.group(1))
    return None


def read_loss(d, name):
    p = os.path.join(d, name + ".loss.csv")
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return list(csv.DictReader(f))


def pct(x):
    return "" if x is None else f"{100 * x:.1f}%"


def fmt(x, spec):
    return "" if x is None else format(x, spec)


def models_table(d):
    print("| run | params | steps | train time | test ppl | top-1 | next-word | verse-ending "
          "| KL(teacher‖student) test | top-1 agree | reverse KL on own samples | teacher ppl of own samples |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    start = on_policy_start(d)
    rows = [(n, w.format(start=start)) for n, w, _ in RUNS]
    rows.insert(5, ("glimmer-kjv-logit-onpolicy-start", f"student, logit distillation stopped at step {start} (on-policy start)"))
    for name, what in rows:
        e = load_json(os.path.join(d, "eval", name + ".json"))
        if e is None:
            continue
        loss = read_loss(d, name)
        secs = read_seconds(d, name)
        steps = loss[-1]["step"] if loss else ""
        if name == "glimmer-kjv-onpolicy" and loss:
            steps = f"{start} + {loss[-1]['step']}"
        print(f"| **{name}** — {what} | {fmt(read_params(d, name), '.2f')}M | {steps} "
              f"| {secs / 60:.1f} min | {e['perplexity']:.2f} | {pct(e['top1'])} | {pct(e.get('task_next_word'))} "
              f"| {pct(e.get('task_verse_ending'))} | {fmt(e.get('kl'), '.4f')} | {pct(e.get('top1_agreement'))} "
              f"| {fmt(e.get('sampled_reverse_kl'), '.4f')} | {fmt(e.get('sampled_base_perplexity'), '.2f')} |"
              if secs else
              f"| **{name}** — {what} | | | | {e['perplexity']:.2f} | {pct(e['top1'])} | {pct(e.get('task_next_word'))} "
              f"| {pct(e.get('task_verse_ending'))} | {fmt(e.get('kl'), '.4f')} | {pct(e.get('top1_agreement'))} "
              f"| {fmt(e.get('sampled_reverse_kl'), '.4f')} | {fmt(e.get('sampled_base_perplexity'), '.2f')} |")
    print()


def quant_table(d, name):
    ref = load_json(os.path.join(d, "eval", name + ".F16.json"))
    if ref is None:
        return
    print(f"### {name}\n")
    print("| type | size | bpw | test ppl | relative loss vs F16 | mean KL(F16‖q) | top-1 agreement "
          "| next-word | verse-ending |")
    print("|---|---|---|---|---|---|---|---|---|")
    ref_nll = math.log(ref["perplexity"])
    for t in QUANT_TYPES:
        e = load_json(os.path.join(d, "eval", f"{name}.{t}.json"))
        if e is None:
            continue
        if t == "F16":
            size = os.path.getsize(os.path.join(d, "quant", f"{name}.F16.gguf"))
            bpw, kl, agree = 16.0, 0.0, 1.0
        else:
            r = load_json(os.path.join(d, "quant", f"{name}.{t}.report.json"))
            size, bpw = r["file_bytes"], r["bpw"]
            kl, agree = e["kl"], e["top1_agreement"]
        label = f"dynamic {t[3:]} bpw" if t.startswith("dyn") else t
        rel = (math.log(e["perplexity"]) - ref_nll) / ref_nll
        print(f"| {label} | {size / 2**20:.2f} MiB | {bpw:.2f} | {e['perplexity']:.3f} | {100 * rel:+.2f}% "
              f"| {kl:.5f} | {pct(agree)} | {pct(e['task_next_word'])} | {pct(e['task_verse_ending'])} |")
    print()


def plot(d, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.8))
    for name, _, tokens_per_step in RUNS:
        rows = read_loss(d, name)
        if not rows:
            continue
        offset = on_policy_start(d) * 4096 if name == "glimmer-kjv-onpolicy" else 0
        x = [(offset + int(r["step"]) * tokens_per_step) / 1e6 for r in rows]
        ax1.plot(x, [float(r["loss"]) for r in rows], label=name, lw=1)
        vx = [xx for xx, r in zip(x, rows) if r["val_loss"]]
        ax2.plot(vx, [float(r["val_loss"]) for r in rows if r["val_loss"]], marker="o", ms=3, label=name)
    ax1.set_title("training objective (cross-entropy, or KL for distillation)")
    ax1.set_xlabel("training tokens (M)")
    ax1.set_yscale("log")
    ax2.set_title("validation cross-entropy (nats/token)")
    ax2.set_xlabel("training tokens (M)")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(d, png):
    print("<!-- generated by scripts/distill-report (bench/distill_report.py); do not edit -->\n")
    print("## Models (test split: Ruth, Jonah, Philippians, James)\n")
    models_table(d)
    print("## Quantization quality (test split, against the F16 model)\n")
    quant_table(d, "kjv-teacher")
    quant_table(d, "glimmer-kjv")
    plot(d, png)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
