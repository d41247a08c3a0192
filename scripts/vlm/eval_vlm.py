"""scripts/vlm/eval_vlm.py — held-out accuracy of the small vision-language model and of the
text-only model trained the same way, per task type, through squeeze itself: each model is
served by `squeeze serve` (the VLM with its projector) and every test question is one chat
request (temperature 0, reasoning effort none), images as base64 data: URLs, asked and scored
as scripts/vlm/screen_questions.py says.

The models are OUT's (vlm.gguf with vlm-mmproj.gguf, text-only.gguf) unless --vlm,
--mmproj and --text-only name others (the shipped ones: scripts/eval-vlm); the held-out
pages are OUT/data/test, rendered there first when missing (the trainer's seed and count).
Writes OUT/eval.json, a markdown table on stdout, and docs/vlm-examples.png (test pages
with the VLM's clicks and answers drawn on them) when --examples is given.
"""
import argparse
import base64
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from serve_util import Server  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts" / "vlm"))
from screen_questions import CLICK, KINDS, ask, score, summary  # noqa: E402


def evaluate(squeeze, model, mmproj, rows, data_dir):
    args = ["-m", str(model), "-np", "1", "--ctx", "512"] + (["--mmproj", str(mmproj), "--max-image-tokens", "4096"]
                                                             if mmproj else [])
    server = Server(squeeze, *args)
    results = []
    t0 = time.time()
    try:
        for row in rows:
            image = None
            if mmproj:
                image = "data:image/png;base64," + base64.b64encode((data_dir / row["image"]).read_bytes()).decode()
            for task in row["tasks"]:
                answer = ask(server, task["question"], image)
                results.append({"image": row["image"], "kind": task["kind"], "question": task["question"],
                                "expected": task["answer"], "answer": answer, "correct": score(task, answer)})
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=60)
    return results, time.time() - t0


def draw_examples(results, rows, data_dir, path, n=8):
    from PIL import Image, ImageDraw
    tiles = []
    for row in rows[:n]:
        img = Image.open(data_dir / row["image"]).convert("RGB").resize((560, 392), Image.NEAREST)
        d = ImageDraw.Draw(img)
        lines = []
        for x in (r for r in results if r["image"] == row["image"]):
            mark = "ok" if x["correct"] else "WRONG"
            m = CLICK.fullmatch(x["answer"].strip())
            if x["kind"] == "click" and m:
                cx, cy = int(m.group(1)) * 2, int(m.group(2)) * 2
                colour = (0, 170, 0) if x["correct"] else (220, 0, 0)
                d.ellipse((cx - 6, cy - 6, cx + 6, cy + 6), outline=colour, width=3)
            lines.append(f"{x['question']} -> {x['answer']} [{mark}]")
        canvas = Image.new("RGB", (560, 392 + 16 * len(lines) + 6), "white")
        canvas.paste(img, (0, 0))
        cd = ImageDraw.Draw(canvas)
        for i, line in enumerate(lines):
            cd.text((4, 396 + 16 * i), line, fill=(0, 0, 0))
        tiles.append(canvas)
    w = 2 * 560 + 10
    rows_h = [max(t.height for t in tiles[i:i + 2]) for i in range(0, len(tiles), 2)]
    sheet = Image.new("RGB", (w, sum(rows_h) + 10 * len(rows_h)), "white")
    y = 0
    for i in range(0, len(tiles), 2):
        for j, t in enumerate(tiles[i:i + 2]):
            sheet.paste(t, (j * 570, y))
        y += rows_h[i // 2] + 10
    sheet.save(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--pages", type=int, default=0, help="test pages to use (0: all)")
    ap.add_argument("--examples", help="write a sheet of annotated test pages here")
    ap.add_argument("--vlm", type=Path, help="the VLM's language model (default OUT/vlm.gguf)")
    ap.add_argument("--mmproj", type=Path, help="its projector (default OUT/vlm-mmproj.gguf)")
    ap.add_argument("--text-only", type=Path, help="the text-only model (default OUT/text-only.gguf)")
    ap.add_argument("--only", choices=("vlm", "text-only"), help="evaluate this model alone")
    ap.add_argument("--report", type=Path, help="where the results go (default OUT/eval.json)")
    args = ap.parse_args()
    out = Path(args.out)
    squeeze = os.environ.get("SQUEEZE_BIN", str(ROOT / "build" / "release" / "tools" / "squeeze"))
    data_dir = out / "data" / "test"
    if not (data_dir / "tasks.jsonl").exists():
        import train_vlm  # torch and transformers: only to render the held-out pages
        train_vlm.make_split(out, "test", train_vlm.TEST_PAGES, seed=train_vlm.TEST_SEED)
    rows = [json.loads(x) for x in (data_dir / "tasks.jsonl").read_text().splitlines()]
    if args.pages:
        rows = rows[:args.pages]
    report = {}
    models = (("vlm", args.vlm or out / "vlm.gguf", args.mmproj or out / "vlm-mmproj.gguf"),
              ("text-only", args.text_only or out / "text-only.gguf", None))
    for name, model, mmproj in models:
        if args.only and name != args.only:
            continue
        results, seconds = evaluate(squeeze, model, mmproj, rows, data_dir)
        report[name] = {"model": str(model), "mmproj": str(mmproj) if mmproj else None, "summary": summary(results),
                        "seconds": seconds, "results": results}
        if name == "vlm" and args.examples:
            draw_examples(results, rows, data_dir, args.examples)
    (args.report or out / "eval.json").write_text(json.dumps(report, indent=1))
    names = [name for name, _, _ in models if name in report]
    print("| task | questions | " + " | ".join(names) + (" | ratio |" if len(names) == 2 else " |"))
    print("|---|---|" + "---|" * (len(names) + (len(names) == 2)))
    for kind in KINDS:
        acc = [report[name]["summary"][kind]["accuracy"] for name in names]
        cells = [f"{100 * a:.1f}%" for a in acc]
        if len(names) == 2:
            cells.append(f"{acc[0] / acc[1]:.1f}x" if acc[1] > 0 else "inf")
        print(f"| {kind} | {report[names[0]]['summary'][kind]['n']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
