"""scripts/vlm/ship_vlm.py OUT DEST — the trained VLM and its text-only twin in the forms
models/ ships: the language models in Q8_0 (`squeeze convert`), the projector with F16
matrices. Writes DEST/ui-vlm.q8_0.gguf, DEST/ui-vlm-mmproj.f16.gguf and
DEST/ui-text-only.q8_0.gguf from OUT/vlm-hf and OUT/text-only-hf; an existing file is
never replaced (move it away first). Needs the reference venv (torch, transformers).
"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

from transformers import MuseGlimmerForConditionalGeneration

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "reference"))
import vision_fixture  # noqa: E402

NAMES = {"vlm": "ui-vlm.q8_0.gguf", "mmproj": "ui-vlm-mmproj.f16.gguf", "text-only": "ui-text-only.q8_0.gguf"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("dest", type=Path)
    args = ap.parse_args()
    squeeze = os.environ.get("SQUEEZE_BIN", str(ROOT / "build" / "release" / "tools" / "squeeze"))
    targets = {k: args.dest / v for k, v in NAMES.items()}
    taken = [str(p) for p in targets.values() if p.exists()]
    if taken:
        sys.exit(f"ship_vlm: {', '.join(taken)} already exist; not replaced")
    args.dest.mkdir(parents=True, exist_ok=True)
    for name in ("vlm", "text-only"):
        subprocess.run([squeeze, "convert", str(args.out / f"{name}-hf"), str(targets[name]), "--type", "Q8_0",
                        "--quiet"], check=True)
    model = MuseGlimmerForConditionalGeneration.from_pretrained(args.out / "vlm-hf", use_kernels=False)
    cfg = model.config
    part = targets["mmproj"].with_suffix(".part")
    vision_fixture.write_projector_gguf(part, cfg.vision_config, cfg.text_config.hidden_size,
                                        cfg.text_config.rms_norm_eps, model.model, f16=True)
    part.rename(targets["mmproj"])
    for p in targets.values():
        print(f"{p}: {p.stat().st_size / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
