"""bench/convert_golden_table.py — the golden-check table of docs/muse-glimmer.md: for
every fixture under tests/fixtures/{muse_glimmer,hf_tiny}/, squeeze convert at F32, F16,
BF16, Q8_0 and Q4_K and squeeze's logits against transformers' (worst / median position
of max |Δ| / max |reference|, and the share of positions with the same top token).

    SQUEEZE_BIN=build/release/tools/squeeze .venv/bin/python bench/convert_golden_table.py
"""
import pathlib
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "python"))
import test_convert_golden as golden  # noqa: E402  (the test's own conversion and comparison)

TYPES = ["F32", "F16", "BF16", "Q8_0", "Q4_K"]
print("| case | " + " | ".join(TYPES) + " |\n|---|" + "---|" * len(TYPES))
with tempfile.TemporaryDirectory() as tmp:
    for case in golden.CASES:
        ref = np.load(case + "/logits.npy").astype(np.float64)
        cells = []
        for t in TYPES:
            ours, _ = golden.squeeze_logits(case, pathlib.Path(tmp), t)
            e = golden.relative_errors(ours, ref)
            cells.append(f"{e.max():.1e} / {np.median(e):.1e} / {(ours.argmax(1) == ref.argmax(1)).mean() * 100:.0f}%")
        print(f"| {pathlib.Path(case).name} | " + " | ".join(cells) + " |")
