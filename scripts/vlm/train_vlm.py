"""scripts/vlm/train_vlm.py — a small vision-language model of Muse Glimmer's architecture
trained here on generated UI screenshots (scripts/vlm/ui_pages.py), and a text-only model
trained the same way on the same questions without the screenshots, for comparison.

Architecture: transformers 5.25's MuseGlimmerForConditionalGeneration (the reference
implementation) at a small size: a vision tower of the released design (4 blocks of width
128, 4 heads, patch 14, a 16 x 16 position grid, windows of 16 x 16 patches, the last block
full), the 2 x 2 merge, adapter and projection into a 4-layer language model of width 256
(3 local : 1 global, window 64) with its own byte-level BPE vocabulary. Trained jointly from
random weights; loss on the answer only. Exported as a text GGUF (`squeeze convert`) and a
projector GGUF (llama.cpp's clip names), which squeeze serves.

Run by scripts/train-vlm; OUT holds data/, the checkpoints and the exported models.
"""
import argparse
import io
import json
import math
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import jinja2
import numpy as np
import torch
from PIL import Image
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import MuseGlimmerConfig, MuseGlimmerForConditionalGeneration, PreTrainedTokenizerFast
from transformers.models.muse_glimmer.image_processing_muse_glimmer import MuseGlimmerImageProcessor

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts" / "reference"))
import ui_pages  # noqa: E402
import vision_fixture  # noqa: E402

TEMPLATE = ROOT / "tests" / "fixtures" / "chat_templates" / "muse-glimmer.jinja"
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start|>", "<|message|>", "<|eom|>", "<|eot|>", "<|patch|>",
            "<|image_start|>", "<|image_end|>", "<|video|>", "<|mask|>"]
EFFORT = "low"  # what the server renders for reasoning_effort "none" (and "low")
# An explicit system message: the template's default one carries the current date (from
# strftime_now, which squeeze's renderer has), so training and serving would differ by day.
SYSTEM = "You operate a computer. Answer with one action or the text asked for."


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


# ---- data ----

def make_split(out, name, pages, seed):
    """out/data/NAME/pageN.png + tasks.jsonl (one line per page). Resumable: pages on disk stay."""
    d = out / "data" / name
    d.mkdir(parents=True, exist_ok=True)
    index = d / "tasks.jsonl"
    done = index.read_text().splitlines() if index.exists() else []
    if len(done) >= pages:
        return [json.loads(x) for x in done[:pages]]
    rng = random.Random(seed)
    renderer = ui_pages.Renderer()
    rows = []
    with open(index, "w") as f:
        for i in range(pages):
            page, _, tasks = ui_pages.make_page(rng)  # drawn in order, so a resumed run draws the same pages
            png = d / f"page{i:05d}.png"
            if i >= len(done) or not png.exists():
                png.write_bytes(renderer.render(page))
            row = {"image": png.name, "tasks": [{"kind": k, "question": q, "answer": a, "box": b}
                                                for k, q, a, b in tasks]}
            rows.append(row)
            f.write(json.dumps(row) + "\n")
            if (i + 1) % 500 == 0:
                log(f"{name}: {i + 1}/{pages} pages")
    renderer.close()
    return rows


# ---- text ----

def template():
    env = jinja2.Environment()
    env.filters["tojson"] = lambda x, **k: json.dumps(x)
    return env.from_string(TEMPLATE.read_text())


def render(tpl, question, with_image, answer=None):
    content = ([{"type": "image"}] if with_image else []) + [{"type": "text", "text": question}]
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]
    if answer is not None:
        msgs.append({"role": "assistant", "content": answer})
    return tpl.render(messages=msgs, add_generation_prompt=answer is None, reasoning_strength=EFFORT,
                      reasoning_effort=EFFORT, bos_token="<|begin_of_text|>")


def with_reading_task(rows):
    """Adds to each training page "List the buttons." -> their labels in reading order (top
    to bottom, left to right): a dense reading signal over every button, which the three
    evaluated tasks need and which a single click or label does not supervise."""
    out = []
    for r in rows:
        buttons = sorted((t["box"][1], t["box"][0], t["question"][len("Click the "):-len(" button.")])
                         for t in r["tasks"] if t["kind"] == "click")
        read = {"kind": "read", "question": "List the buttons.", "answer": ", ".join(b[2] for b in buttons),
                "box": None}
        out.append(dict(r, tasks=r["tasks"] + [read]))
    return out


def make_tokenizer(texts, vocab):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab - len(SPECIALS), initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    # Merges are learned from the text between the special tokens; the specials are added
    # after training, at the end of the vocabulary, as single tokens.
    split = re.compile("|".join(re.escape(s) for s in SPECIALS))
    tok.train_from_iterator((piece for t in texts for piece in split.split(t) if piece), trainer)
    tok.add_special_tokens(SPECIALS)
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(single="$A", special_tokens=[("<|begin_of_text|>", bos)])
    return tok


# ---- model ----

def make_config(vocab, ids):
    vision = dict(num_hidden_layers=4, hidden_size=128, intermediate_size=256, num_attention_heads=4, patch_size=14,
                  pos_emb_height=16, pos_emb_width=16, max_position_embeddings=256)
    text = dict(vocab_size=vocab, hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
                num_key_value_heads=2, head_dim=64, sliding_window=64, max_position_embeddings=512,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                bos_token_id=ids["<|begin_of_text|>"], eos_token_id=ids["<|end_of_text|>"])
    return MuseGlimmerConfig(text_config=text, vision_config=vision, out_hidden_size=4 * 128, projector_hidden_size=256,
                             image_token_id=ids["<|patch|>"], video_token_id=ids["<|video|>"])


class Examples:
    """Every (page, task) as token ids with the answer's span, and the pages' pixel values."""

    def __init__(self, out, split, rows, tok, tpl, with_image):
        self.items = []
        proc = MuseGlimmerImageProcessor()
        self.pixels, self.grids = [], []
        ids = {s: tok.token_to_id(s) for s in SPECIALS}
        for p, row in enumerate(rows):
            tokens = 0
            if with_image:
                img = Image.open(out / "data" / split / row["image"]).convert("RGB")
                pv = proc(images=[img], max_image_tokens=4096, return_tensors="pt")
                self.pixels.append(pv["pixel_values"])
                self.grids.append(pv["image_grid_thw"])
                tokens = int(pv["image_grid_thw"][0].prod()) // 4
            for t in row["tasks"]:
                prompt = tok.encode(render(tpl, t["question"], with_image)).ids
                full = tok.encode(render(tpl, t["question"], with_image, t["answer"])).ids
                assert full[:len(prompt)] == prompt, (prompt, full)
                if with_image:  # the processor's expansion of the placeholder
                    at = prompt.index(ids["<|patch|>"])
                    widen = [ids["<|image_start|>"]] + [ids["<|patch|>"]] * tokens + [ids["<|image_end|>"]]
                    prompt = prompt[:at] + widen + prompt[at + 1:]
                    full = full[:at] + widen + full[at + 1:]
                self.items.append((p, full, len(prompt)))


def batch_of(ex, picks, with_image, pad):
    seqs = [ex.items[i] for i in picks]
    n = max(len(s[1]) for s in seqs)
    input_ids = torch.full((len(seqs), n), pad, dtype=torch.long)
    labels = torch.full((len(seqs), n), -100, dtype=torch.long)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for b, (_, full, answer_at) in enumerate(seqs):
        input_ids[b, :len(full)] = torch.tensor(full)
        labels[b, answer_at:len(full)] = torch.tensor(full[answer_at:])
        mask[b, :len(full)] = 1
    kw = dict(input_ids=input_ids, attention_mask=mask, labels=labels)
    if with_image:
        kw["pixel_values"] = torch.cat([ex.pixels[s[0]] for s in seqs])
        kw["image_grid_thw"] = torch.cat([ex.grids[s[0]] for s in seqs])
    return kw


def train(name, model, ex, steps, batch, lr, with_image, pad, out, log_every=50):
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    rng = random.Random(7)
    curve = []
    t0 = time.time()
    model.train()
    for step in range(1, steps + 1):
        warm = min(1.0, step / 100)
        for g in opt.param_groups:
            g["lr"] = lr * warm * 0.5 * (1 + math.cos(math.pi * step / steps))
        picks = [rng.randrange(len(ex.items)) for _ in range(batch)]
        loss = model(**batch_of(ex, picks, with_image, pad)).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        curve.append(loss.item())
        if step % log_every == 0 or step == steps:
            log(f"{name}: step {step}/{steps} loss {np.mean(curve[-log_every:]):.4f} ({time.time() - t0:.0f} s)")
    model.eval()
    return curve, time.time() - t0


def export(model, tok, cfg, out_dir, gguf_path, mmproj_path, with_image):
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>")
    fast.save_pretrained(out_dir)
    (out_dir / "chat_template.jinja").write_text(TEMPLATE.read_text())
    squeeze = os.environ.get("SQUEEZE_BIN", str(ROOT / "build" / "release" / "tools" / "squeeze"))
    subprocess.run([squeeze, "convert", str(out_dir), str(gguf_path), "--type", "f32", "--quiet"], check=True)
    if with_image:
        vision_fixture.write_projector_gguf(mmproj_path, cfg.vision_config, cfg.text_config.hidden_size,
                                            cfg.text_config.rms_norm_eps, model.model)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--train-pages", type=int, default=3000)
    ap.add_argument("--test-pages", type=int, default=300)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    t_all = time.time()
    train_rows = with_reading_task(make_split(out, "train", args.train_pages, seed=1))
    make_split(out, "test", args.test_pages, seed=2)
    log(f"data: {len(train_rows)} train pages")
    tpl = template()
    texts = [render(tpl, t["question"], True, t["answer"]) for r in train_rows for t in r["tasks"]]
    tok = make_tokenizer(texts, 1024)
    ids = {s: tok.token_to_id(s) for s in SPECIALS}
    assert all(i >= tok.get_vocab_size() - len(SPECIALS) for i in ids.values()), ids
    report = {"train_pages": args.train_pages, "steps": args.steps, "batch": args.batch, "lr": args.lr}
    for with_image, name in ((True, "vlm"), (False, "text-only")):
        ex = Examples(out, "train", train_rows, tok, tpl, with_image)
        cfg = make_config(tok.get_vocab_size(), ids)
        torch.manual_seed(0)
        model = MuseGlimmerForConditionalGeneration(cfg)
        n_params = sum(p.numel() for p in model.parameters())
        log(f"{name}: {len(ex.items)} examples, {n_params / 1e6:.2f}M parameters")
        curve, seconds = train(name, model, ex, args.steps, args.batch, args.lr, with_image, ids["<|end_of_text|>"], out)
        export(model, tok, cfg, out / f"{name}-hf", out / f"{name}.gguf", out / f"{name}-mmproj.gguf", with_image)
        report[name] = {"examples": len(ex.items), "parameters": n_params, "seconds": seconds,
                        "loss_curve": curve[::10], "final_loss": float(np.mean(curve[-100:]))}
    report["total_seconds"] = time.time() - t_all
    (out / "train_report.json").write_text(json.dumps(report))
    log(f"done in {report['total_seconds']:.0f} s")


if __name__ == "__main__":
    main()
