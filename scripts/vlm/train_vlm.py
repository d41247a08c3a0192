"""scripts/vlm/train_vlm.py — a small vision-language model of Muse Glimmer's architecture
trained here on generated UI screenshots (scripts/vlm/ui_pages.py), and a text-only model
trained the same way on the same questions without the screenshots, for comparison.

Architecture: transformers 5.25's MuseGlimmerForConditionalGeneration (the reference
implementation) at a small size: a vision tower of the released design (4 blocks of width
128, 4 heads, patch 14, a 16 x 16 position grid, windows of 16 x 16 patches, the last block
full), the 2 x 2 merge, adapter and projection into a 4-layer language model of width 256
(3 local : 1 global, window 256) with its own byte-level BPE vocabulary. From random weights:
the tower first learns to read (heads on its features name each word on the page and point
at it, on the training pages and on pages dense with buttons; then frozen), then the
language model learns the tasks, loss on the answer only (--read-checked: the tower's reading
also names the checked box's label; --read-state: each checkbox label's cells also say
whether its box is checked, what the checkbox question needs; --focus: the dialog and
checkbox conversations drawn more often; --bf16: bfloat16 autocast); a run may continue
an earlier one (--continue-from), with a tower that learns to read afresh (--new-tower),
training-only grounding questions (--grounding) and the tower trained end to end with the
language model (--tower-lr), or with language models that start afresh on a kept tower
(--fresh-lm), also on the dense reading pages' questions (--lm-reading-pages), with two of
their attention heads trained to look where the answer is on the page (--attend-loss:
AttendToTarget). Exported as a text GGUF (`squeeze convert`) and a projector GGUF (llama.cpp's
clip names), which squeeze serves.

The reading pretraining and the page geometry are in scripts/vlm/reading.py; how a question
is asked and scored, in scripts/vlm/screen_questions.py. Run by scripts/train-vlm; OUT holds
data/, the checkpoints and the exported models.
"""
import argparse
import ctypes
import gc
import itertools
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
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import MuseGlimmerConfig, MuseGlimmerForConditionalGeneration, PreTrainedTokenizerFast
from transformers.modeling_outputs import BaseModelOutputWithPooling

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts" / "reference"))
import ui_pages  # noqa: E402
import vision_fixture  # noqa: E402
from reading import (Pages, ReadingHead, cache_features, cell_at, centre_cell, covered_cells,  # noqa: E402
                     in_language_model, pretrain_reading, reading_accuracy)
from screen_questions import SYSTEM  # noqa: E402

TEMPLATE = ROOT / "tests" / "fixtures" / "chat_templates" / "muse-glimmer.jinja"
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start|>", "<|message|>", "<|eom|>", "<|eot|>", "<|patch|>",
            "<|image_start|>", "<|image_end|>", "<|video|>", "<|mask|>"]
EFFORT = "low"  # what the server renders for reasoning_effort "none" (and "low")


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


# ---- data ----

TEST_PAGES, TEST_SEED = 300, 2  # the held-out pages (eval_vlm.py renders them alike)


def make_split(out, name, pages, seed, buttons=(2, 4)):
    """out/data/NAME/pageN.png + tasks.jsonl (one line per page: image, tasks, elements).
    Resumable: the pages are drawn in order from the seed, and those on disk are not rendered
    again."""
    d = out / "data" / name
    d.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    renderer = None
    rows = []
    for i in range(pages):
        page, elements, tasks = ui_pages.make_page(rng, buttons=buttons)
        png = d / f"page{i:05d}.png"
        if not png.exists():
            renderer = renderer or ui_pages.Renderer()
            part = png.with_suffix(".part")
            part.write_bytes(renderer.render(page))
            part.rename(png)
        rows.append({"image": png.name, "elements": elements,
                     "tasks": [{"kind": k, "question": q, "answer": a, "box": b} for k, q, a, b in tasks]})
        if renderer and (i + 1) % 500 == 0:
            log(f"{name}: {i + 1}/{pages} pages")
    if renderer:
        renderer.close()
    # a new file renamed into place: the data folder may be hard links shared with other runs
    part = d / "tasks.jsonl.part"
    part.write_text("".join(json.dumps(r) + "\n" for r in rows))
    part.rename(d / "tasks.jsonl")
    return rows


# ---- text ----

def template():
    env = jinja2.Environment()
    env.filters["tojson"] = lambda x, **k: json.dumps(x)
    return env.from_string(TEMPLATE.read_text())


def render(tpl, question, with_image, answer=None):
    return render_turns(tpl, [(question, answer)], with_image)


def render_turns(tpl, turns, with_image):
    """A conversation of (question, answer) turns about one screenshot (in the first user
    message); a last answer of None ends with the generation prompt."""
    msgs = [{"role": "system", "content": SYSTEM}]
    for i, (question, answer) in enumerate(turns):
        content = ([{"type": "image"}] if with_image and i == 0 else []) + [{"type": "text", "text": question}]
        msgs.append({"role": "user", "content": content})
        if answer is not None:
            msgs.append({"role": "assistant", "content": answer})
    return tpl.render(messages=msgs, add_generation_prompt=turns[-1][1] is None, reasoning_strength=EFFORT,
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


def grounding_tasks(row):
    """Training-only questions that bind a word on the page to its place or state, the skill
    the evaluated click and checkbox questions need, on every other labelled element: "Click
    the File menu.", "Click the OK button." (a dialog's), "Click the Sound checkbox." (its
    box) and "Is Sound checked?" -> yes / no. The evaluated tasks are not among them."""
    tasks, elements = [], row["elements"]
    for i, e in enumerate(elements):
        if e["kind"] == "menu":
            tasks.append(("Click the {} menu.".format(e["label"]), ui_pages.click_answer(e["box"])))
        elif e["kind"] == "button" and e["label"] == "OK":
            tasks.append(("Click the OK button.", ui_pages.click_answer(e["box"])))
        elif e["kind"] == "label":  # follows its checkbox
            box = elements[i - 1]
            tasks.append(("Click the {} checkbox.".format(e["label"]), ui_pages.click_answer(box["box"])))
            tasks.append(("Is {} checked?".format(e["label"]), "yes" if box["label"] == "checked" else "no"))
    return [{"kind": "ground", "question": q, "answer": a, "box": None} for q, a in tasks]


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
                num_key_value_heads=2, head_dim=64, sliding_window=256, max_position_embeddings=512,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                bos_token_id=ids["<|begin_of_text|>"], eos_token_id=ids["<|end_of_text|>"])
    return MuseGlimmerConfig(text_config=text, vision_config=vision, out_hidden_size=4 * 128, projector_hidden_size=256,
                             image_token_id=ids["<|patch|>"], video_token_id=ids["<|video|>"])


class Examples(Pages):
    """Token ids with their answers' spans, and the pages' pixel values. conversations=True:
    one item per page, all its tasks as turns of one conversation in a random order (every
    turn's answer supervised: several times the answer tokens per step for little more
    compute, the first turn laid out as a single question is); else one item per task.
    grounding=True adds a second conversation per page of grounding_tasks(page) (kept apart so
    that no conversation outgrows the local layers' window); max_turns > 0 cuts conversations
    into pieces of at most that many turns (pages dense with buttons would outgrow it too).
    Each item is (page, token ids, answer spans, each answer's attention_targets or None);
    reads[i]: whether item i asks one of READ_QUESTIONS."""

    def __init__(self, out, split, rows, tok, tpl, with_image, conversations=False, grounding=False, max_turns=0,
                 attend_clicks_only=False, attend_spans=False, attend_checked_row=False, read_checked=False,
                 read_state=False):
        super().__init__(out, split, rows if with_image else [], half=True, read_checked=read_checked,
                         read_state=read_state)
        self.items, self.reads = [], []
        ids = {s: tok.token_to_id(s) for s in SPECIALS}
        order = random.Random(5)
        for p, row in enumerate(rows):
            tokens = len(self.cells[p]) if with_image else 0

            def encode(turns):
                out_ids = tok.encode(render_turns(tpl, turns, with_image)).ids
                return expand_image(out_ids, tokens, ids) if with_image else out_ids

            qa = [(t["question"], t["answer"]) for t in row["tasks"]]
            looks = attention_targets(row, attend_clicks_only, attend_spans, attend_checked_row)
            groups = [qa]
            if grounding:
                groups.append([(t["question"], t["answer"]) for t in grounding_tasks(row)])
            if conversations:
                for g in groups:
                    order.shuffle(g)
                if max_turns:
                    groups = [g[i:i + max_turns] for g in groups for i in range(0, len(g), max_turns)]
            for group in (groups if conversations else [[x] for x in qa]):
                full = encode(group)
                spans = []
                for k in range(len(group)):
                    prompt = encode(group[:k] + [(group[k][0], None)])
                    upto = encode(group[:k + 1])
                    assert full[:len(upto)] == upto and upto[:len(prompt)] == prompt, (prompt, upto, full)
                    spans.append((len(prompt), len(upto)))
                self.items.append((p, full, spans, [looks.get(q) for q, _ in group]))
                self.reads.append(any(q in READ_QUESTIONS for q, _ in group))


# The evaluated questions answered with a word read from the page: one page in two has one
# of them, and pages dense with buttons add only clicks (train's focus samples them more).
READ_QUESTIONS = (ui_pages.QUESTIONS["dialog"], ui_pages.QUESTIONS["checkbox"])


def expand_image(token_ids, tokens, ids):
    """The processor's expansion of the image placeholder in a rendered prompt's token ids:
    <|image_start|>, one <|patch|> per image token, <|image_end|>. ids: SPECIALS' ids."""
    at = token_ids.index(ids["<|patch|>"])
    return (token_ids[:at] + [ids["<|image_start|>"]] + [ids["<|patch|>"]] * tokens + [ids["<|image_end|>"]] +
            token_ids[at + 1:])


def attention_targets(row, clicks_only=False, spans=False, checked_row=False):
    """{question: (cells for the first supervised head, cells for the second)} for the page's
    questions whose answer is found at a place on it (AttendToTarget): a click (any clicked
    element) looks at the clicked cell twice; the dialog's message at the message; "Which
    checkbox is checked?" first at the checked box, then at its label; "Is X checked?" first
    at the label X, then at its box. "List the buttons." has none. clicks_only: the clicks
    alone. An element is its centre cell, or with spans every cell its box covers (a linear
    probe names 86% of held-out messages from the mean of those, 57% from the centre cell:
    docs/vision.md). checked_row: "Which checkbox is checked?" looks first at the checked box
    and its label together, so that the label's word enters a layer earlier, with more
    layers left to decode it."""
    looks, elements = {}, row["elements"]
    place = covered_cells if spans else (lambda box: [centre_cell(box)])
    for t in row["tasks"] + grounding_tasks(row):
        m = re.fullmatch(r"click\((\d+), (\d+)\)", t["answer"])
        if m:
            looks[t["question"]] = ([cell_at(int(m.group(1)), int(m.group(2)))],) * 2
    for i, e in enumerate([] if clicks_only else elements):
        if e["kind"] == "message":
            looks[ui_pages.QUESTIONS["dialog"]] = (place(e["box"]),) * 2
        elif e["kind"] == "label":  # follows its checkbox
            box, label = place(elements[i - 1]["box"]), place(e["box"])
            if elements[i - 1]["label"] == "checked":
                looks[ui_pages.QUESTIONS["checkbox"]] = (sorted(set(box + label)) if checked_row else box, label)
            looks["Is {} checked?".format(e["label"])] = (label, box)
    return looks


class AttendToTarget:
    """Attention supervision, a training signal for the VLM's language model: at each position
    that predicts the answer's tokens of a question answered at a place on the page
    (attention_targets), the first head of each of `layers` is asked to put its attention on
    the image tokens of that layer's target cells (the loss: minus the log of their summed
    weight). The lookup a click needs, from the question's word to the cell that shows it
    (which the tower's features make possible: docs/vision.md), is then learned directly
    rather than discovered through the answer's loss alone; the head's value brings that
    cell's features, its word, column and row among them, to where the answer is written
    (layers 1 and 2 of 4: the first can gather the question's word, the last two decode the
    answer). Needs the eager attention (the weights returned)."""

    def __init__(self, layers=(1, 2)):
        self.layers = layers

    def loss(self, attentions, input_ids, seqs, patch_id):
        """-> (loss, share of those positions and heads whose most attended image token is
        one of their targets), or (None, None) without such a question in the batch."""
        weights, tops = [], []
        for b, (_, _, spans, targets) in enumerate(seqs):
            image = (input_ids[b] == patch_id).nonzero().squeeze(1)
            for (begin, end), looks in zip(spans, targets):
                if looks is None:
                    continue
                for layer, cells in zip(self.layers, looks):
                    rows = attentions[layer][b, 0, begin - 1:end - 1].float()  # [query, key]
                    cells = torch.tensor(cells)
                    weights.append(rows[:, image[cells]].sum(1))
                    tops.append(torch.isin(rows[:, image].argmax(1), cells))
        if not weights:
            return None, None
        return -torch.log(torch.cat(weights) + 1e-6).mean(), float(torch.cat(tops).float().mean())


def batch_of(ex, picks, with_image, pad):
    seqs = [ex.items[i] for i in picks]
    n = max(len(s[1]) for s in seqs)
    input_ids = torch.full((len(seqs), n), pad, dtype=torch.long)
    labels = torch.full((len(seqs), n), -100, dtype=torch.long)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for b, (_, full, spans, _) in enumerate(seqs):
        input_ids[b, :len(full)] = torch.tensor(full)
        for begin, end in spans:
            labels[b, begin:end] = torch.tensor(full[begin:end])
        mask[b, :len(full)] = 1
    kw = dict(input_ids=input_ids, attention_mask=mask, labels=labels)
    if with_image and ex.features is None:  # the tower trains too: the pages' pixels
        kw["pixel_values"], kw["image_grid_thw"] = ex.tower_input([s[0] for s in seqs])
    elif with_image:  # the cached features of stage 1's tower
        kw["mm_encoder_outputs"] = {"image": BaseModelOutputWithPooling(pooler_output=[ex.features[s[0]] for s in seqs])}
    return kw


def release_freed_memory():
    """Hands memory freed by Python back to the system (glibc keeps freed heap pages
    otherwise: thousands of pages' pixels)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def train(name, model, ex, steps, batch, lr, with_image, pad, tower_lr=0.0, attend_loss=0.0, patch_id=None,
          focus=1.0, bf16=False, log_every=50):
    """Stage 2: the language model on the tasks, loss on the answer only. The tower, adapter
    and projection stay as stage 1 left them (their features cached per page) unless tower_lr
    > 0: then they train with the language model at that rate, end to end on the tasks.
    attend_loss > 0 adds AttendToTarget's loss at that weight (the VLM only). focus: the
    conversations that ask a READ_QUESTION are drawn that many times as often as the others.
    bf16: the forward under bfloat16 autocast (1.65x faster a step here; the weights and the
    optimizer stay float32)."""
    groups = [{"params": [p for n, p in model.named_parameters() if in_language_model(n)], "base_lr": lr}]
    attend = AttendToTarget() if with_image and attend_loss > 0 else None
    if attend:
        model.set_attn_implementation("eager")
    if with_image and tower_lr > 0:
        groups.append({"params": [p for n, p in model.named_parameters() if not in_language_model(n)],
                       "base_lr": tower_lr})
        assert ex.features is None, "a trained tower needs the pages' pixels, not cached features"
    params = [p for g in groups for p in g["params"]]
    opt = torch.optim.AdamW(groups, lr=lr, weight_decay=0.01)
    rng = random.Random(7)
    cumulative = list(itertools.accumulate(focus if r else 1.0 for r in ex.reads)) if focus != 1.0 else None
    curve, attended = [], []
    t0 = time.time()
    model.train()
    for step in range(1, steps + 1):
        warm = min(1.0, step / 100)
        for g in opt.param_groups:
            g["lr"] = g["base_lr"] * warm * 0.5 * (1 + math.cos(math.pi * step / steps))
        picks = (rng.choices(range(len(ex.items)), cum_weights=cumulative, k=batch) if cumulative else
                 [rng.randrange(len(ex.items)) for _ in range(batch)])
        kw = batch_of(ex, picks, with_image, pad)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out = model(**kw, output_attentions=attend is not None)
        loss = out.loss
        if attend:
            aux, hit = attend.loss(out.attentions, kw["input_ids"], [ex.items[i] for i in picks], patch_id)
            if aux is not None:
                loss = loss + attend_loss * aux
                attended.append(hit)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        curve.append(out.loss.item())  # the answers' loss alone, as the text-only model's
        if step % log_every == 0 or step == steps:
            probed = f" attended {np.mean(attended[-log_every:]):.3f}" if attended else ""
            log(f"{name}: step {step}/{steps} loss {np.mean(curve[-log_every:]):.4f}{probed} "
                f"({time.time() - t0:.0f} s)")
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
    ap.add_argument("--test-pages", type=int, default=TEST_PAGES)
    ap.add_argument("--reading-pages", type=int, default=6000,
                    help="pages of 6 to 10 buttons each, for the reading pretraining only (with the training pages)")
    ap.add_argument("--reading-steps", type=int, default=3000)
    ap.add_argument("--reading-lr", type=float, default=2e-3)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--text-steps", type=int, default=None,
                    help="the text-only model's steps (default --steps; 0 with --continue-from: kept as it is)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--tower-lr", type=float, default=0.0,
                    help="> 0: the VLM's tower, adapter and projection train with its language model on the tasks "
                         "at this rate (else frozen after the reading pretraining)")
    ap.add_argument("--grounding", action="store_true",
                    help="add a conversation of grounding_tasks per training page (menus, the dialog's OK, "
                         "checkboxes by label)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--continue-from", type=Path, default=None,
                    help="an earlier run's OUT: start both models from its checkpoints (no reading pretraining; the "
                         "VLM's tower as it is, frozen unless --tower-lr) and train them --steps more")
    ap.add_argument("--fresh-lm", action="store_true",
                    help="with --continue-from: both language models start from random weights; the VLM keeps "
                         "its tower, adapter and projection (frozen)")
    ap.add_argument("--lm-reading-pages", action="store_true",
                    help="the language models also train on the reading pages' tasks (about 8 buttons a page)")
    ap.add_argument("--max-turns", type=int, default=0,
                    help="> 0: training conversations of at most this many turns")
    ap.add_argument("--attend-loss", type=float, default=0.0,
                    help="> 0: a head in two layers of the VLM's language model is also trained to attend to where "
                         "the answer is on the page (AttendToTarget), at this weight")
    ap.add_argument("--attend-clicks-only", action="store_true",
                    help="with --attend-loss: only the click questions' heads are supervised")
    ap.add_argument("--attend-spans", action="store_true",
                    help="with --attend-loss: the heads attend over every cell of the message, label or checkbox "
                         "(else its centre cell)")
    ap.add_argument("--attend-checked-row", action="store_true",
                    help="with --attend-loss: for \"Which checkbox is checked?\" the first head attends over the "
                         "checked box and its label together (else the box)")
    ap.add_argument("--read-checked", action="store_true",
                    help="the tower's reading pretraining also names, on the checked box's cells, the label of its "
                         "row (CHECKED_CLASSES, ReadingHead.checked)")
    ap.add_argument("--read-state", action="store_true",
                    help="the tower's reading pretraining also says, on each checkbox label's cells, whether its "
                         "box is checked (STATE_CLASSES, ReadingHead.state)")
    ap.add_argument("--focus", type=float, default=1.0,
                    help="the conversations asking what the dialog says or which checkbox is checked are drawn this "
                         "many times as often as the others (both language models)")
    ap.add_argument("--bf16", action="store_true",
                    help="forward passes under bfloat16 autocast (weights and optimizer float32)")
    ap.add_argument("--new-tower", action="store_true",
                    help="with --continue-from: the VLM's tower, adapter and projection start afresh and learn to read "
                         "again; its language model keeps its training")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    t_all = time.time()
    train_rows = with_reading_task(make_split(out, "train", args.train_pages, seed=1))
    test_rows = make_split(out, "test", args.test_pages, seed=TEST_SEED)
    log(f"data: {len(train_rows)} train pages")
    tpl = template()
    texts = [render(tpl, t["question"], True, t["answer"]) for r in train_rows for t in r["tasks"]]
    # the earlier run's vocabulary when continuing (the same texts train the same one, but
    # the checkpoint's own file rules out any drift)
    tok = (Tokenizer.from_file(str(args.continue_from / "vlm-hf" / "tokenizer.json")) if args.continue_from
           else make_tokenizer(texts, 1024))
    ids = {s: tok.token_to_id(s) for s in SPECIALS}
    assert all(i >= tok.get_vocab_size() - len(SPECIALS) for i in ids.values()), ids
    report = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k not in ("out", "threads")}
    assert not (args.fresh_lm and args.new_tower), "--fresh-lm keeps the tower that --new-tower replaces"
    lm_rows = train_rows
    if args.lm_reading_pages:
        reading_rows = make_split(out, "reading", args.reading_pages, seed=3, buttons=(6, 10))
        lm_rows = train_rows + [dict(r, split="reading") for r in with_reading_task(reading_rows)]
    for with_image, name in ((True, "vlm"), (False, "text-only")):
        ex = Examples(out, "train", lm_rows, tok, tpl, with_image, conversations=True, grounding=args.grounding,
                      max_turns=args.max_turns, attend_clicks_only=args.attend_clicks_only,
                      attend_spans=args.attend_spans, attend_checked_row=args.attend_checked_row,
                      read_checked=args.read_checked and with_image, read_state=args.read_state and with_image)
        cfg = make_config(tok.get_vocab_size(), ids)
        torch.manual_seed(0)
        if args.continue_from:
            model = MuseGlimmerForConditionalGeneration.from_pretrained(args.continue_from / f"{name}-hf",
                                                                        use_kernels=False)
            cfg = model.config
        else:
            model = MuseGlimmerForConditionalGeneration(cfg)
        if args.continue_from and args.fresh_lm:
            fresh = MuseGlimmerForConditionalGeneration(cfg).state_dict()
            model.load_state_dict({k: v for k, v in fresh.items() if in_language_model(k)}, strict=False)
        if with_image and args.continue_from and args.new_tower:
            fresh = MuseGlimmerForConditionalGeneration(cfg).state_dict()
            model.load_state_dict({k: v for k, v in fresh.items() if not in_language_model(k)}, strict=False)
        n_params = sum(p.numel() for p in model.parameters())
        log(f"{name}: {len(ex.items)} examples (longest {max(len(i[1]) for i in ex.items)} tokens), "
            f"{n_params / 1e6:.2f}M parameters")
        if with_image and (args.new_tower or not args.continue_from):
            sets = [ex]
            if args.reading_pages and not args.lm_reading_pages:  # else they are among ex's pages already
                rows = make_split(out, "reading", args.reading_pages, seed=3, buttons=(6, 10))
                sets.append(Pages(out, "reading", rows, half=True, read_checked=args.read_checked,
                                  read_state=args.read_state))
            head = ReadingHead(cfg.text_config.hidden_size, args.read_checked, args.read_state)
            curve, stats, seconds = pretrain_reading(model, head, sets, args.reading_steps, args.batch,
                                                     args.reading_lr, log, bf16=args.bf16)
            del sets
            held_out = reading_accuracy(model, head, Pages(out, "test", test_rows, read_checked=args.read_checked,
                                                           read_state=args.read_state))
            log(f"reading, held-out pages: {held_out}")
            report["reading"] = {"seconds": seconds, "loss_curve": curve[::10],
                                 "stats_curve": [{k: float(np.mean([x[k] for x in stats[i:i + 10] if k in x]))
                                                  for k in stats[i]} for i in range(0, len(stats), 10)],
                                 "held_out": held_out}
        if with_image and not args.tower_lr:
            cache_features(model, ex)
            ex.pixels = None  # not needed again: thousands of pages' worth of memory
            gc.collect()
            release_freed_memory()
        steps = args.steps if with_image or args.text_steps is None else args.text_steps
        curve, seconds = train(name, model, ex, steps, args.batch, args.lr, with_image, ids["<|end_of_text|>"],
                               tower_lr=args.tower_lr, attend_loss=args.attend_loss, patch_id=ids["<|patch|>"],
                               focus=args.focus, bf16=args.bf16)
        export(model, tok, cfg, out / f"{name}-hf", out / f"{name}.gguf", out / f"{name}-mmproj.gguf", with_image)
        report[name] = {"examples": len(ex.items), "parameters": n_params, "seconds": seconds, "steps": steps,
                        "loss_curve": curve[::10], "final_loss": float(np.mean(curve[-100:])) if curve else None}
        # the VLM's pages, features and model are not needed by the text-only model: without
        # this the process kept ~19.6 GB through the text-only training
        del ex, model
        gc.collect()
        release_freed_memory()
    report["total_seconds"] = time.time() - t_all
    (out / "train_report.json").write_text(json.dumps(report))
    log(f"done in {report['total_seconds']:.0f} s")


if __name__ == "__main__":
    main()
