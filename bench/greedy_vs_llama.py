#!/usr/bin/env python3
"""bench/greedy_vs_llama.py — free-running greedy continuations of squeeze against
llama.cpp's (the fixtures of scripts/make-llama-fixtures), with a float64 forward of the
same GGUF (tests/python/test_model_reference.py) as the judge where they part.

usage: .venv/bin/python bench/greedy_vs_llama.py   (needs the models of scripts/get-models)

For each prompt: how many of llama.cpp's 64 greedy tokens squeeze reproduces before the
first difference, llama.cpp's top-2 gap there and the smallest gap before it, and whether
llama.cpp's token there is the float64 forward's argmax (with the float64 margin between
the argmax and llama.cpp's token). Prints a markdown table."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))
import test_model_reference as ref  # noqa: E402

SQ = os.environ.get("SQUEEZE_BIN", str(ROOT / "build/release/tools/squeeze"))
MODELS = pathlib.Path(os.environ.get("SQUEEZE_MODELS", ROOT / "build/models"))


def main():
    print("| model | prompt | tokens equal | llama.cpp gap there | smallest gap before | llama.cpp = float64 argmax there? |")
    print("|---|---|---|---|---|---|")
    for name in ["SmolLM2-135M-Instruct.Q4_1", "gemma-3-270m-q4_k_m"]:
        model = MODELS / f"{name}.gguf"
        if not model.exists():
            print(f"greedy_vs_llama: {model} is absent (scripts/get-models)", file=sys.stderr)
            continue
        fx = json.loads((ROOT / f"tests/fixtures/llama/expected-{name}.json").read_text(encoding="utf-8"))
        m = ref.Model(str(model))
        for k, p in enumerate(fx["prompts"]):
            pieces = [bytes.fromhex(g["piece_hex"]) for g in p["greedy"]]
            out = subprocess.run([SQ, "generate", "-m", str(model), "-p", p["text"], "-n", str(len(pieces)),
                                  "--temp", "0"], capture_output=True, check=True).stdout
            acc, div = p["text"].encode(), None
            for j, piece in enumerate(pieces):
                if not out.startswith(acc + piece):
                    div = j
                    break
                acc += piece
            short = p["text"].replace("\n", " ")[:28]
            if div is None:
                print(f"| {name[:7]} | {short} | {len(pieces)} / {len(pieces)} | — | — | — |")
                continue
            g = p["greedy"][div]
            tokens = p["tokens"] + [x["id"] for x in p["greedy"][:div]]
            logits = ref.forward(m, np.array(tokens), np.array([len(tokens) - 1]))[0]
            best = int(np.argmax(logits))
            verdict = "yes" if best == g["id"] else f"no (by {logits[best] - logits[g['id']]:.3f})"
            smallest = min([x["gap"] for x in p["greedy"][:div]], default=float("nan"))
            print(f"| {name[:7]} | {short} | {div} / {len(pieces)} | {g['gap']:.3f} | {smallest:.3f} | {verdict} |",
                  flush=True)


if __name__ == "__main__":
    main()
