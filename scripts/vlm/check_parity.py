"""scripts/vlm/check_parity.py OUT — squeeze against the reference on the trained VLM: one
held-out screenshot and question through `squeeze generate --image --dump --kv f32` (the image
through squeeze's decoder, preprocessing and encoder, its rows spliced into the prompt) and
through transformers' MuseGlimmerForConditionalGeneration (the checkpoint before export,
the reference's image processor) on the same token ids; prints the largest logit
difference relative to the largest logit, and the share of positions whose top token agrees."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from transformers import MuseGlimmerForConditionalGeneration
from transformers.models.muse_glimmer.image_processing_muse_glimmer import MuseGlimmerImageProcessor

ROOT = Path(__file__).resolve().parents[2]


def main():
    out = Path(sys.argv[1])
    squeeze = os.environ.get("SQUEEZE_BIN", str(ROOT / "build" / "release" / "tools" / "squeeze"))
    row = json.loads((out / "data" / "test" / "tasks.jsonl").read_text().splitlines()[0])
    image = out / "data" / "test" / row["image"]
    question = row["tasks"][0]["question"]
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([squeeze, "generate", "-m", str(out / "vlm.gguf"), "--mmproj", str(out / "vlm-mmproj.gguf"),
                        "--image", str(image), "--chat", "--reasoning-effort", "none", "-p", question, "-n", "1",
                        "--max-image-tokens", "4096", "--kv", "f32", "--dump", d], check=True, capture_output=True)
        ids = np.load(Path(d) / "tokens.npy").astype(np.int64)[0]
        ours = np.load(Path(d) / "logits.npy")
    model = MuseGlimmerForConditionalGeneration.from_pretrained(out / "vlm-hf", use_kernels=False).eval()
    pv = MuseGlimmerImageProcessor()(images=[Image.open(image).convert("RGB")], max_image_tokens=4096,
                                     return_tensors="pt")
    with torch.no_grad():
        ref = model(input_ids=torch.tensor(ids)[None], pixel_values=pv["pixel_values"],
                    image_grid_thw=pv["image_grid_thw"]).logits[0].float().numpy()
    rel = float(np.abs(ours - ref).max() / np.abs(ref).max())
    agree = float((ours.argmax(-1) == ref.argmax(-1)).mean())
    print(json.dumps({"image": row["image"], "question": question, "positions": int(len(ids)),
                      "max_abs_diff_over_max_abs_logit": rel, "top1_agreement": agree}))


if __name__ == "__main__":
    main()
