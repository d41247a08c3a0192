"""scripts/vlm/reading.py — the first stage of the small VLM's training (scripts/vlm/train_vlm.py):
the vision tower, adapter and projection learn to read a screenshot before any language model
sees their features. Per image token (a 28 x 28-pixel cell of the page) the targets say which
words and controls the cell shows and where it is; per word on the page, which word it is and
where its centre is (ReadingHead). Also the page geometry the conversations' attention targets
use (cell_at, centre_cell, covered_cells) and the split's pages as the tower sees them (Pages).
"""
import math
import random
import time

import numpy as np
import torch
from PIL import Image
from transformers.models.muse_glimmer.image_processing_muse_glimmer import MuseGlimmerImageProcessor

import ui_pages

WORDS = sorted(set(ui_pages.BUTTONS + ["OK"] + ui_pages.MESSAGES + ui_pages.CHECKS + ui_pages.TITLES +
                   [m for menu in ui_pages.MENUS for m in menu]))
CELL = 28  # pixels per image token: a 2 x 2 merge of 14-pixel patches
GRID_W, GRID_H = ui_pages.WIDTH // CELL, ui_pages.HEIGHT // CELL


def cell_at(x, y):
    """The image token (raster order) whose cell holds pixel (x, y)."""
    return min(y // CELL, GRID_H - 1) * GRID_W + min(x // CELL, GRID_W - 1)


def centre_cell(box):
    """The cell of this box's centre (where a click on it points)."""
    x, y, w, h = box
    return cell_at(x + w // 2, y + h // 2)


def covered_cells(box):
    """The cells (raster order) this box covers by at least 4 x 4 pixels."""
    x, y, w, h = box
    return [cy * GRID_W + cx for cy in range(GRID_H) for cx in range(GRID_W)
            if min(x + w, (cx + 1) * CELL) - max(x, cx * CELL) >= 4 and
            min(y + h, (cy + 1) * CELL) - max(y, cy * CELL) >= 4]


# The words and controls in a cell, and the cell's column and row: a click is answered in
# pixels, so the features must keep where they are as well as what they show.
WORD_INDEX = {w: i for i, w in enumerate(WORDS)}
CELL_CLASSES = (WORDS + ["button", "dialog", "checked", "unchecked"] + [f"column {i}" for i in range(GRID_W)] +
                [f"row {i}" for i in range(GRID_H)])
# With read_checked, the checked box's cells also name the label of its row: the checkbox
# question binds a box's state to the word beside it, which cells that hold parts of two
# checkbox rows blur when state and word are read apart (docs/vision.md).
CHECKED_CLASSES = [f"checked {label}" for label in ui_pages.CHECKS]
# With read_state, a checkbox label's cells also say whether its row's box is checked: one
# bit carried a cell to the right, where the label's word already is, so that the label
# cells of the checked row differ from the others (a probe found the state in 70% of boxes
# against the 67% of always "unchecked", docs/vision.md).
STATE_CLASSES = ["checked label", "unchecked label"]


def cell_classes(read_checked=False, read_state=False):
    return CELL_CLASSES + (CHECKED_CLASSES if read_checked else []) + (STATE_CLASSES if read_state else [])


def checked_box(elements):
    """(label, box) of the page's checked checkbox, or None (a label follows its box)."""
    for i, e in enumerate(elements):
        if e["kind"] == "checkbox" and e["label"] == "checked":
            return elements[i + 1]["label"], e["box"]
    return None


def cell_targets(elements, width, height, read_checked=False, read_state=False):
    """[cells, classes] multi-hot, cells in the image tokens' raster order: the words and
    controls whose box covers at least 4 x 4 pixels of the cell (covered_cells), its column and
    its row; with read_checked, on the checked box's cells also its label (CHECKED_CLASSES);
    with read_state, on a checkbox label's cells also its box's state (STATE_CLASSES)."""
    gw, gh = width // CELL, height // CELL
    assert (gw, gh) == (GRID_W, GRID_H), (width, height)
    classes_of_cells = cell_classes(read_checked, read_state)
    t = torch.zeros(gh * gw, len(classes_of_cells))
    index = {c: i for i, c in enumerate(classes_of_cells)}
    for cy in range(gh):
        for cx in range(gw):
            t[cy * gw + cx, index[f"column {cx}"]] = t[cy * gw + cx, index[f"row {cy}"]] = 1
    for e in elements:
        classes = [e["label"]] if e["label"] else []
        if e["kind"] in ("button", "dialog"):
            classes.append(e["kind"])
        for cell in covered_cells(e["box"]):
            for c in classes:
                t[cell, index[c]] = 1
    checked = checked_box(elements) if read_checked else None
    if checked:
        t[covered_cells(checked[1]), index[f"checked {checked[0]}"]] = 1
    for cells, state in (label_states(elements) if read_state else []):
        t[cells, index[STATE_CLASSES[1 - state]]] = 1
    return t


def label_states(elements):
    """[(the cells a checkbox label's box covers, 1 if its box is checked else 0)] (a label
    follows its box)."""
    return [(covered_cells(e["box"]), int(elements[i - 1]["label"] == "checked"))
            for i, e in enumerate(elements) if e["kind"] == "label" and covered_cells(e["box"])]


def word_spans(elements, width, height):
    """[(word index, the cells its box covers by at least 4 x 4 pixels, its element's kind,
    the cell of its centre)] for every word on the page, cells in raster order."""
    assert (width // CELL, height // CELL) == (GRID_W, GRID_H), (width, height)
    spans = []
    for e in elements:
        if e["label"] not in WORD_INDEX:  # a dialog, or a checkbox (its label is its state)
            continue
        cells = covered_cells(e["box"])
        if cells:
            spans.append((WORD_INDEX[e["label"]], cells, e["kind"], centre_cell(e["box"])))
    return spans


class ReadingHead(torch.nn.Module):
    """Heads on the features that enter the language model, trained with the tower so that
    those features say what each cell shows and where each word is (dropped after training:
    not part of the exported model):
      cells  per cell, the words, controls, column and row it holds (multi-hot);
      words  per word on the page, which word it is, from the mean of its cells' features;
      point  per word on the page, a learned query for that word scores every cell, the
             word's centre cell the target: the lookup a click question asks of the model;
      checked  (read_checked) the checked box's label, from the mean of the box's cells;
      state    (read_state) per checkbox label, whether its box is checked, from the mean of
             the label's cells.
    Trained on the cells alone, the features named 18% of held-out button-label cells; with
    the per-word losses and the dense reading pages the pointing finds 94% (docs/vision.md)."""

    def __init__(self, width, read_checked=False, read_state=False):
        super().__init__()
        self.proj = torch.nn.Linear(width, len(cell_classes(read_checked, read_state)))
        self.word = torch.nn.Linear(width, len(WORDS))
        self.query = torch.nn.Embedding(len(WORDS), width)
        self.checked = torch.nn.Linear(width, len(ui_pages.CHECKS)) if read_checked else None
        self.state = torch.nn.Linear(width, 2) if read_state else None

    def point_logits(self, page_features, word):
        return page_features @ self.query.weight[word] / math.sqrt(page_features.shape[1])

    def loss(self, features, cells, pages):
        """features and cells: the batch's pages' cells, concatenated; pages: (cells, word_spans,
        checked_span, label_states) per page. -> (loss, {"cell": share of word cells whose top
        word is one of theirs, "word", "point": shares of words named / pointed at, "checked":
        share of checked boxes whose label is named, "state": share of checkbox labels whose
        box's state is named})."""
        logits = self.proj(features)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, cells, reduction="sum") / cells.shape[0]
        words = cells[:, :len(WORDS)]
        has = words.sum(1) > 0
        stats = {"cell": float(words[has].gather(1, logits[has, :len(WORDS)].argmax(1, keepdim=True)).mean())}
        pooled, point, targets, centres, boxes, labels, rows, states, at = [], [], [], [], [], [], [], [], 0
        for n, spans, checked, label_rows in pages:
            f = features[at:at + n]
            at += n
            if self.state is not None:
                rows += [f[cells].mean(0) for cells, _ in label_rows]
                states += [state for _, state in label_rows]
            if checked and self.checked is not None:
                boxes.append(f[checked[1]].mean(0))
                labels.append(checked[0])
            for word, covered, _, centre in spans:
                pooled.append(f[covered].mean(0))
                point.append(self.point_logits(f, word))
                targets.append(word)
                centres.append(centre)
        assert at == features.shape[0], (at, features.shape)
        if targets:
            named, pointed = self.word(torch.stack(pooled)), torch.stack(point)
            targets, centres = torch.tensor(targets), torch.tensor(centres)
            loss = (loss + torch.nn.functional.cross_entropy(named, targets) +
                    torch.nn.functional.cross_entropy(pointed, centres))
            stats["word"] = float((named.argmax(1) == targets).float().mean())
            stats["point"] = float((pointed.argmax(1) == centres).float().mean())
        if labels:
            named, labels = self.checked(torch.stack(boxes)), torch.tensor(labels)
            loss = loss + torch.nn.functional.cross_entropy(named, labels)
            stats["checked"] = float((named.argmax(1) == labels).float().mean())
        if states:
            named, states = self.state(torch.stack(rows)), torch.tensor(states)
            loss = loss + torch.nn.functional.cross_entropy(named, states)
            stats["state"] = float((named.argmax(1) == states).float().mean())
        return loss, stats


class Pages:
    """A split's screenshots as the tower sees them: pixel values (stored in float16 when half,
    within 2.5e-4 of float32 for these [-1, 1] values, so that thousands of pages fit in memory), their
    grids, cell targets (read_checked, read_state: cell_targets') and word spans, the checked
    box's span (its label's index in CHECKS, the cells its box covers) or None, and the
    checkbox labels' states (label_states). A row with a "split" key is read from that split."""

    def __init__(self, out, split, rows, half=False, read_checked=False, read_state=False):
        proc = MuseGlimmerImageProcessor()
        self.pixels, self.grids, self.cells, self.spans, self.checked, self.states = [], [], [], [], [], []
        self.features = None  # the tower's output per page, once cached
        for row in rows:
            img = Image.open(out / "data" / row.get("split", split) / row["image"]).convert("RGB")
            pv = proc(images=[img], max_image_tokens=4096, return_tensors="pt")
            self.pixels.append(pv["pixel_values"].half() if half else pv["pixel_values"])
            self.grids.append(pv["image_grid_thw"])
            self.cells.append(cell_targets(row["elements"], img.width, img.height, read_checked, read_state))
            self.states.append(label_states(row["elements"]))
            self.spans.append(word_spans(row["elements"], img.width, img.height))
            checked = checked_box(row["elements"])
            self.checked.append((ui_pages.CHECKS.index(checked[0]), covered_cells(checked[1])) if checked else None)
            assert self.cells[-1].shape[0] == int(pv["image_grid_thw"][0].prod()) // 4

    def tower_input(self, picks):
        return torch.cat([self.pixels[p] for p in picks]).float(), torch.cat([self.grids[p] for p in picks])


def in_language_model(name):
    """Whether a parameter belongs to the language model (else to the tower, adapter or
    projection)."""
    return "language_model" in name or "lm_head" in name


def image_features(model, pixels, grids):
    out = model.model.get_image_features(pixels, grids).pooler_output
    return torch.cat(list(out)) if isinstance(out, (list, tuple)) else out


def pretrain_reading(model, head, sets, steps, batch, lr, log=print, bf16=False, log_every=100):
    """Stage 1: the vision tower, adapter and projection learn to read (ReadingHead: what each
    image token's cell shows, which word each word on the page is, and where each word is),
    with the language model untouched, on pages drawn uniformly from the Pages in sets.
    Without it the jointly trained model never used the image (two runs of 3,000 steps: its
    answers ignored the screenshot, see docs/vision.md). bf16: the forward under bfloat16
    autocast (the weights and the optimizer stay float32)."""
    params = [p for n, p in model.named_parameters() if not in_language_model(n)]
    opt = torch.optim.AdamW(params + list(head.parameters()), lr=lr, weight_decay=0.01)
    rng = random.Random(11)
    pool = [(s, p) for s in sets for p in range(len(s.pixels))]
    curve, stats, t0 = [], [], time.time()
    model.train()
    for step in range(1, steps + 1):
        for g in opt.param_groups:
            g["lr"] = lr * min(1.0, step / 100) * 0.5 * (1 + math.cos(math.pi * step / steps))
        picks = [pool[rng.randrange(len(pool))] for _ in range(batch)]
        pixels = torch.cat([s.pixels[p] for s, p in picks]).float()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            feats = image_features(model, pixels, torch.cat([s.grids[p] for s, p in picks]))
            loss, st = head.loss(feats.float(), torch.cat([s.cells[p] for s, p in picks]),
                                 [(len(s.cells[p]), s.spans[p], s.checked[p], s.states[p]) for s, p in picks])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        curve.append(loss.item())
        stats.append(st)
        if step % log_every == 0 or step == steps:
            recent = {k: np.mean([x[k] for x in stats[-log_every:] if k in x]) for k in st}
            log(f"reading: step {step}/{steps} loss {np.mean(curve[-log_every:]):.4f} " +
                " ".join(f"{k} {v:.3f}" for k, v in recent.items()) + f" ({time.time() - t0:.0f} s)")
    model.eval()
    return curve, stats, time.time() - t0


def reading_accuracy(model, head, pages):
    """On pages the tower did not train on: the share of words whose centre cell the pointing
    head picks among all the page's cells, and the share it names, for button labels and for
    the other words; with the checked-label head, the share of checked boxes whose label it
    names; with the state head, the share of checkbox labels whose box's state it names (and
    what always "unchecked" scores)."""
    if pages.features is None:
        cache_features(model, pages)
    counts = {}
    with torch.no_grad():
        for f, spans, checked, states in zip(pages.features, pages.spans, pages.checked, pages.states):
            for word, covered, kind, centre in spans:
                c = counts.setdefault("button" if kind == "button" else "other", [0, 0, 0])
                c[0] += 1
                c[1] += int(head.point_logits(f, word).argmax()) == centre
                c[2] += int(head.word(f[covered].mean(0)).argmax()) == word
            if checked and head.checked is not None:
                c = counts.setdefault("checked", [0, 0])
                c[0] += 1
                c[1] += int(head.checked(f[checked[1]].mean(0)).argmax()) == checked[0]
            for cells, state in (states if head.state is not None else []):
                c = counts.setdefault("state", [0, 0, 0])
                c[0] += 1
                c[1] += int(head.state(f[cells].mean(0)).argmax()) == state
                c[2] += state == 0
    checked, state = counts.pop("checked", None), counts.pop("state", None)
    return {**{k: {"words": n, "point": pointed / n, "named": named / n} for k, (n, pointed, named) in counts.items()},
            **({"checked": {"boxes": checked[0], "named": checked[1] / checked[0]}} if checked else {}),
            **({"state": {"labels": state[0], "named": state[1] / state[0], "always unchecked": state[2] / state[0]}}
               if state else {})}


def cache_features(model, ex, batch=32):
    """Each page's image features from the (now frozen) tower, computed once for stage 2."""
    ex.features = []
    with torch.no_grad():
        for i in range(0, len(ex.pixels), batch):
            pages = range(i, min(i + batch, len(ex.pixels)))
            feats = image_features(model, *ex.tower_input(pages))
            ex.features += list(torch.split(feats, [len(ex.cells[p]) for p in pages]))
