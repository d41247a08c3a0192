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
    return f"vision: {len(cases)} preprocessing cases, {len(grid)} smart_resize cases; " + make_encoder_case()




# ---- the encoder: a tiny random tower + adapter + projection, and its projector GGUF ----

def interleave_rows(w, heads):
    """Rows of q / k (and their biases) per head from the reference's half-split rotary
    layout (pairs i, i + d/2) to adjacent pairs (2i, 2i + 1): llama.cpp's interleaved
    layout for the projector file."""
    d = w.shape[0] // heads
    w = w.reshape(heads, 2, d // 2, *w.shape[1:])
    return np.ascontiguousarray(np.swapaxes(w, 1, 2)).reshape(heads * d, *w.shape[3:])


def write_projector_gguf(path, vcfg, text_hidden, text_eps, model, f16=False):
    """The projector GGUF (llama.cpp's clip keys and v.* / mm.* names) of a Muse Glimmer
    model's tower, adapter and projection; f16: matrices in F16 (norms and biases stay F32,
    as llama.cpp's converter leaves them)."""
    import gguf
    tower, adapter, proj = model.vision_tower, model.vision_adapter, model.vision_projection
    w = gguf.GGUFWriter(str(path), "clip")

    def put(name, x):
        w.add_tensor(name, x.astype(np.float16) if f16 and x.ndim >= 2 else x)

    w.add_string("clip.projector_type", "muse-glimmer")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_uint32("clip.vision.image_size", vcfg.pos_emb_height * vcfg.patch_size * vcfg.merge_size)
    w.add_uint32("clip.vision.patch_size", vcfg.patch_size)
    w.add_uint32("clip.vision.embedding_length", vcfg.hidden_size)
    w.add_uint32("clip.vision.feed_forward_length", vcfg.intermediate_size)
    w.add_uint32("clip.vision.block_count", vcfg.num_hidden_layers)
    w.add_uint32("clip.vision.projection_dim", text_hidden)
    w.add_uint32("clip.vision.attention.head_count", vcfg.num_attention_heads)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", vcfg.layer_norm_eps)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    w.add_uint32("clip.vision.spatial_merge_size", vcfg.merge_size)
    w.add_uint32("clip.vision.window_size", vcfg.pos_emb_height * vcfg.patch_size)
    w.add_array("clip.vision.fullatt_block_indexes",
                [i for i, t in enumerate(vcfg.layer_types) if t == "full_attention"])
    w.add_float32("clip.vision.rope.freq_base", float(vcfg.rope_parameters["rope_theta"]))
    w.add_float32("clip.vision.projector.rms_norm_epsilon", float(text_eps))
    t = lambda x: x.detach().float().numpy()
    # the two temporal slabs of the patch embedding summed: one conv [D, 3, p, p] for stills
    pe = t(tower.patch_embedder.patch_embedding.weight)
    half = pe.shape[1] // 2
    p = vcfg.patch_size
    put("v.patch_embd.weight", (pe[:, :half] + pe[:, half:]).reshape(-1, 3, p, p))
    put("v.position_embd.weight", t(tower.patch_embedder.position_embedding_table.weight))
    put("v.pre_ln.weight", t(tower.ln_pre.weight))
    put("v.pre_ln.bias", t(tower.ln_pre.bias))
    heads = vcfg.num_attention_heads
    for i, layer in enumerate(tower.layers):
        b = f"v.blk.{i}"
        a = layer.attn
        put(f"{b}.ln1.weight", t(layer.norm1.weight))
        put(f"{b}.ln1.bias", t(layer.norm1.bias))
        put(f"{b}.attn_q.weight", interleave_rows(t(a.q_proj.weight), heads))
        put(f"{b}.attn_q.bias", interleave_rows(t(a.q_proj.bias), heads))
        put(f"{b}.attn_k.weight", interleave_rows(t(a.k_proj.weight), heads))
        put(f"{b}.attn_k.bias", interleave_rows(t(a.k_proj.bias), heads))
        put(f"{b}.attn_v.weight", t(a.v_proj.weight))
        put(f"{b}.attn_v.bias", t(a.v_proj.bias))
        put(f"{b}.attn_out.weight", t(a.proj.weight))
        put(f"{b}.attn_out.bias", t(a.proj.bias))
        put(f"{b}.ln2.weight", t(layer.norm2.weight))
        put(f"{b}.ln2.bias", t(layer.norm2.bias))
        put(f"{b}.ffn_up.weight", t(layer.mlp.fc1.weight))
        put(f"{b}.ffn_up.bias", t(layer.mlp.fc1.bias))
        put(f"{b}.ffn_down.weight", t(layer.mlp.fc2.weight))
        put(f"{b}.ffn_down.bias", t(layer.mlp.fc2.bias))
    put("v.post_ln.weight", t(tower.ln_post.weight))
    put("v.post_ln.bias", t(tower.ln_post.bias))
    put("mm.0.weight", t(adapter.fc1.weight))
    put("mm.1.weight", t(adapter.fc2.weight))
    put("mm.2.weight", t(proj.weight))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def make_encoder_case():
    import torch
    from transformers.models.muse_glimmer.configuration_muse_glimmer import MuseGlimmerConfig
    from transformers.models.muse_glimmer.modeling_muse_glimmer import MuseGlimmerModel
    d = OUT / "encoder"
    d.mkdir(parents=True, exist_ok=True)
    # 5 blocks: windowed 0-2, full 3 (every 4th) and 4 (the last); a 4 x 4 position grid so
    # that windows are 4 x 4 patches and a 6 x 10 grid has 6 of them, cut at its edges; head
    # 16 (4 rotary frequencies per axis); a non-square grid, where the reference's position
    # lookup is not a plain transpose.
    vision = dict(num_hidden_layers=5, hidden_size=32, intermediate_size=48, num_attention_heads=2, patch_size=14,
                  pos_emb_height=4, pos_emb_width=4, max_position_embeddings=16)
    text = dict(vocab_size=64, hidden_size=40, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1, head_dim=20, sliding_window=8, max_position_embeddings=64,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    config = MuseGlimmerConfig(text_config=text, vision_config=vision, out_hidden_size=128, projector_hidden_size=48,
                               image_token_id=5, video_token_id=6)
    torch.manual_seed(0)
    model = MuseGlimmerModel(config).eval()
    gen = torch.Generator().manual_seed(77)
    with torch.no_grad():
        for name, prm in model.named_parameters():
            if name.startswith("language_model"):
                continue
            if name.endswith("weight") and prm.dim() == 1:  # norms near 1
                prm.copy_(1.0 + 0.1 * torch.randn(prm.shape, generator=gen))
            else:
                prm.copy_(torch.randn(prm.shape, generator=gen) * (0.5 / max(1, prm.shape[-1]) ** 0.5))
    gh, gw = 6, 10
    pixels = torch.randn(gh * gw, 3 * 14 * 14, generator=gen)
    pixel_values = torch.cat([pixels, pixels], dim=1)  # a still image: two equal temporal slabs
    grid = torch.tensor([[1, gh, gw]])
    with torch.no_grad():
        out = model.get_image_features(pixel_values=pixel_values, image_grid_thw=grid)
    tower = out.last_hidden_state.float().numpy()
    features = torch.cat(list(out.pooler_output)).float().numpy()
    pixels.numpy().astype("<f4").tofile(d / "pixels.f32")
    tower.astype("<f4").tofile(d / "tower.f32")
    features.astype("<f4").tofile(d / "features.f32")
    write_projector_gguf(d / "mmproj.gguf", config.vision_config, config.text_config.hidden_size,
                         config.text_config.rms_norm_eps, model)
    meta = {"grid_h": gh, "grid_w": gw, "tower_shape": list(tower.shape), "features_shape": list(features.shape),
            "vision": vision, "out_hidden_size": 128, "projector_hidden_size": 48, "text_hidden_size": 40,
            "rope_theta": float(config.vision_config.rope_parameters["rope_theta"]),
            "layer_types": config.vision_config.layer_types}
    (d / "case.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"vision encoder: {gh} x {gw} patches -> tower {tower.shape}, features {features.shape}"


if __name__ == "__main__":
    print(make_vision_case())
