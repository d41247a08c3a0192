"""Muse Glimmer image preprocessing fixtures (case `vision` of make-muse-glimmer-fixtures).

Writes tests/fixtures/vision/: small deterministic PNG / JPEG images (RGB, RGBA, grey,
palette; downscaled, upscaled, capped), and for each the reference's outputs, checked by
tests/vision/test_preprocess.cpp:
  - transformers 5.25 MuseGlimmerImageProcessor (its torchvision backend: LANCZOS mapped
    to antialiased BICUBIC) pixel_values, first temporal slab, as little-endian float32;
  - Pillow's LANCZOS resize of the decoded image to the same grid, uint8 (the filter
    squeeze offers besides the reference's bicubic);
  - smart_resize over many sizes and caps (cases.json).
"""
import itertools
import json
from pathlib import Path

import numpy as np
import torchvision
import transformers
from torchvision.transforms.v2 import functional as tvF
from PIL import Image
from transformers.image_transforms import convert_to_rgb
from transformers.models.muse_glimmer.image_processing_muse_glimmer import MuseGlimmerImageProcessor, smart_resize

OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "vision"


def make_images(rng):
    """name -> (file name, PIL image written)."""
    rgb = (rng.random((45, 61, 3)) * 255).astype(np.uint8)
    # smooth structure too, so the filters' shapes matter, not just noise
    yy, xx = np.mgrid[0:33, 0:97]
    smooth = np.stack([(xx * 2.6) % 256, (yy * 7.7) % 256, ((xx + yy) * 1.9) % 256], -1).astype(np.uint8)
    images = {
        "rgb_noise.png": Image.fromarray(rgb),
        "rgba.png": Image.fromarray(np.dstack([rgb, (rng.random((45, 61)) * 255).astype(np.uint8)]), "RGBA"),
        "grey.png": Image.fromarray(rgb[:, :, 1]),
        "palette.png": Image.fromarray(smooth).convert("P", palette=Image.ADAPTIVE, colors=37),
        "smooth.jpg": Image.fromarray(smooth),
        "tiny.png": Image.fromarray(rgb[:15, :20]),
        "tall.png": Image.fromarray(np.ascontiguousarray(np.transpose(smooth, (1, 0, 2)))),
        # 198 x 97: smooth bands over noise; capped at 2 tokens it shrinks 3.5x
        "large.png": Image.fromarray(np.concatenate([np.tile(smooth, (3, 1, 1)),
                                                     (rng.random((99, 97, 3)) * 255).astype(np.uint8)], 0)),
    }
    for name, im in images.items():
        if name.endswith(".jpg"):
            im.save(OUT / name, quality=92)
        else:
            im.save(OUT / name)
    return images


def processor_case(name, max_tokens):
    img = Image.open(OUT / name)
    img.load()
    proc = MuseGlimmerImageProcessor()
    out = proc(images=[img], max_image_tokens=max_tokens, return_tensors="np")
    pv = out["pixel_values"]
    _, gh, gw = [int(v) for v in out["image_grid_thw"][0]]
    assert np.array_equal(pv[:, : 3 * 14 * 14], pv[:, 3 * 14 * 14 :]), "a still image's two temporal slabs differ"
    # The backend resizes uint8 and normalises (x − 127.5) / 127.5 in float32, so the
    # pixel values map back to the resized uint8 image exactly: stored as such (4× smaller).
    pixels = pv[:, : 3 * 14 * 14].astype(np.float64) * 127.5 + 127.5
    as_u8 = np.rint(pixels)
    assert np.abs(pixels - as_u8).max() < 1e-3, "pixel values are not (u8 − 127.5) / 127.5"
    stem = f"{Path(name).stem}_{max_tokens}"
    as_u8.astype(np.uint8).tofile(OUT / f"{stem}.pixel_values.u8")
    rgb = convert_to_rgb(img)  # the processor's own conversion (alpha over white)
    # torchvision's antialiased BICUBIC of the same image to the same size: what the
    # processor falls back to without torchvision >= 0.27 on the CPU (squeeze's --resample bicubic)
    t = tvF.pil_to_tensor(rgb)[None]
    bicubic = tvF.resize(t, [gh * 14, gw * 14], interpolation=tvF.InterpolationMode.BICUBIC, antialias=True)
    bicubic[0].permute(1, 2, 0).contiguous().numpy().astype(np.uint8).tofile(OUT / f"{stem}.tv_bicubic.u8")
    return {"image": name, "max_image_tokens": max_tokens, "grid_h": gh, "grid_w": gw, "stem": stem,
            "width": img.width, "height": img.height}


def make_vision_case():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261205)
    images = make_images(rng)
    cases = []
    for name in images:
        for max_tokens in (4096, 2):
            cases.append(processor_case(name, max_tokens))
    sizes = [(1080, 1920), (1920, 1080), (1, 1), (1, 5000), (5000, 1), (28, 28), (27, 29), (45, 61), (768, 1366),
             (4000, 3000), (333, 777), (2160, 3840), (100, 100), (57, 10000)]
    caps = [4096, 1024, 16, 1, 7]
    grid = []
    for (h, w), cap in itertools.product(sizes, caps):
        th, tw = smart_resize(h, w, 28, cap)
        grid.append({"height": h, "width": w, "max_tokens": cap, "target_height": th, "target_width": tw})
    meta = {"versions": {"transformers": transformers.__version__, "torchvision": torchvision.__version__,
                         "pillow": Image.__version__,
                         "numpy": np.__version__},
            "cases": cases, "smart_resize": grid}
    (OUT / "cases.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"vision: {len(cases)} preprocessing cases, {len(grid)} smart_resize cases"


if __name__ == "__main__":
    print(make_vision_case())
