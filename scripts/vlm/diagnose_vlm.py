"""scripts/vlm/diagnose_vlm.py OUT [--train-pages N] — where a trained VLM's dialog and
checkbox answers fail: in what the frozen tower's features carry, or in the language model.

1. Linear probes on the tower's image tokens (fitted on N training pages, scored on the 300
   held-out ones): the dialog's message (one of 16) from its centre cell and from the mean of
   every cell its box covers; a checkbox's state from its box's and its label's cells (one box
   in three is checked, so 67% is what the majority class scores); the checked box's label
   (one of 12) from its box's cells alone.
2. Teacher-forced on every held-out question, one question per prompt as served: per task,
   the share whose whole answer is the argmax at every answer position (for a click, its
   exact centre, which the evaluation does not ask: any point inside the box), and the share where
   each supervised head's most attended image token is one of its targets (AttendToTarget,
   the targets as the run's --attend-* options in OUT/train_report.json give them), over the
   positions that write the answer.

Writes OUT/diagnosis.json and prints it. Needs the reference venv (torch, transformers).
"""
import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import torch
from tokenizers import Tokenizer
from transformers import MuseGlimmerForConditionalGeneration
from transformers.modeling_outputs import BaseModelOutputWithPooling

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reading  # noqa: E402
import train_vlm  # noqa: E402
import ui_pages  # noqa: E402


def split_rows(out, split, n=None):
    rows = [json.loads(x) for x in (out / "data" / split / "tasks.jsonl").read_text().splitlines()]
    return rows[:n] if n else rows


def probe_examples(rows, features):
    """(message from the centre cell, message from the covered cells' mean, checked from the
    box's and the label's covered means, the checked box's label from its box's covered
    mean), each a list of (feature, class)."""
    centre, mean, checked, label_of_checked = [], [], [], []
    for row, f in zip(rows, features):
        f = f.float()
        elements = row["elements"]
        box = reading.checked_box(elements)
        if box:
            label_of_checked.append((f[reading.covered_cells(box[1])].mean(0), ui_pages.CHECKS.index(box[0])))
        for i, e in enumerate(elements):
            if e["kind"] == "message":
                word = ui_pages.MESSAGES.index(e["label"])
                centre.append((f[reading.centre_cell(e["box"])], word))
                mean.append((f[reading.covered_cells(e["box"])].mean(0), word))
            elif e["kind"] == "label":  # follows its checkbox
                box = elements[i - 1]
                both = torch.cat([f[reading.covered_cells(box["box"])].mean(0),
                                  f[reading.covered_cells(e["box"])].mean(0)])
                checked.append((both, int(box["label"] == "checked")))
    return centre, mean, checked, label_of_checked


def linear_probe(train, test, classes, steps=500):
    """-> (training accuracy, held-out accuracy) of a softmax regression on standardised
    features (Adam, a little weight decay)."""
    x, y = torch.stack([a for a, _ in train]), torch.tensor([c for _, c in train])
    xt, yt = torch.stack([a for a, _ in test]), torch.tensor([c for _, c in test])
    mu, sd = x.mean(0), x.std(0) + 1e-5
    torch.manual_seed(0)
    lin = torch.nn.Linear(x.shape[1], classes)
    opt = torch.optim.Adam(lin.parameters(), 1e-2, weight_decay=1e-4)
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(lin((x - mu) / sd), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return (float((lin((x - mu) / sd).argmax(1) == y).float().mean()),
                float((lin((xt - mu) / sd).argmax(1) == yt).float().mean()))


def teacher_forced(model, tok, rows, features, attend, layers=(1, 2)):
    """attend: attention_targets' options, as the run was trained with them."""
    tpl = train_vlm.template()
    ids = {s: tok.token_to_id(s) for s in train_vlm.SPECIALS}
    counts = defaultdict(lambda: [0, 0] + [0] * len(layers))
    for row, f in zip(rows, features):
        looks = train_vlm.attention_targets(row, **attend)
        for t in row["tasks"]:
            prompt = tok.encode(train_vlm.render(tpl, t["question"], True)).ids
            full = tok.encode(train_vlm.render(tpl, t["question"], True, t["answer"])).ids
            assert full[:len(prompt)] == prompt
            x = torch.tensor(train_vlm.expand_image(full, len(f), ids))[None]
            shift = x.shape[1] - len(full)
            begin, end = len(prompt) + shift, len(full) + shift
            with torch.no_grad():
                out = model(input_ids=x, output_attentions=True,
                            mm_encoder_outputs={"image": BaseModelOutputWithPooling(pooler_output=[f])})
            c = counts[t["kind"]]
            c[0] += 1
            c[1] += bool((out.logits[0, begin - 1:end - 1].argmax(-1) == x[0, begin:end]).all())
            image = (x[0] == ids["<|patch|>"]).nonzero().squeeze(1)
            for k, (layer, cells) in enumerate(zip(layers, looks.get(t["question"], ()))):
                top = out.attentions[layer][0, 0, begin - 1:end - 1, image].argmax(1)
                c[2 + k] += float(torch.isin(top, torch.tensor(cells)).float().mean())
    return {kind: {"questions": c[0], "answer": c[1] / c[0],
                   **{f"head_layer{layer}": c[2 + k] / c[0] for k, layer in enumerate(layers)}}
            for kind, c in counts.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--train-pages", type=int, default=3000)
    args = ap.parse_args()
    torch.set_num_threads(2)
    model = MuseGlimmerForConditionalGeneration.from_pretrained(args.out / "vlm-hf", use_kernels=False).eval()
    model.set_attn_implementation("eager")
    tok = Tokenizer.from_file(str(args.out / "vlm-hf" / "tokenizer.json"))
    # the heads' targets as the run's options set them (--attend-spans alone when unrecorded)
    trained = json.loads((args.out / "train_report.json").read_text()) if (args.out / "train_report.json").exists() \
        else {"attend_spans": True}
    attend = {"clicks_only": trained.get("attend_clicks_only", False), "spans": trained.get("attend_spans", False),
              "checked_row": trained.get("attend_checked_row", False)}
    sets = {}
    for split, n in (("train", args.train_pages), ("test", None)):
        rows = split_rows(args.out, split, n)
        pages = reading.Pages(args.out, split, rows, half=True)
        reading.cache_features(model, pages)
        sets[split] = rows, pages.features
    train, test = probe_examples(*sets["train"]), probe_examples(*sets["test"])
    report = {"probes": {name: dict(zip(("train", "held_out"), linear_probe(a, b, classes)))
                         for name, a, b, classes in zip(("message_centre_cell", "message_covered_mean",
                                                         "checked_box_and_label", "label_of_checked_box"),
                                                        train, test, (16, 16, 2, len(ui_pages.CHECKS)))},
              "heads_targets": attend, "teacher_forced": teacher_forced(model, tok, *sets["test"], attend)}
    (args.out / "diagnosis.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
