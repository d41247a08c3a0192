"""scripts/vlm/make_trajectory.py OUT_DIR [--steps 30] [--size 1280x800] — a recorded agent
trajectory for `squeeze agent-replay`: screenshots of generated application windows
(scripts/vlm/ui_pages.py, rendered by headless Chromium) and, per step, the action taken
(a click on one of the window's buttons, at its centre). OUT_DIR/trajectory.json lists them."""
import argparse
import json
import random
from pathlib import Path

import ui_pages


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--size", default="1280x800")
    ap.add_argument("--seed", type=int, default=30)
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    renderer = ui_pages.Renderer(width, height)
    steps = []
    for i in range(args.steps):
        page, _, tasks = ui_pages.make_page(rng, width, height)
        name = f"step{i + 1:02d}.png"
        (out / name).write_bytes(renderer.render(page))
        clicks = [t for t in tasks if t[0] == "click"]
        question, action = (clicks[0][1], clicks[0][2]) if clicks else ("Close the dialog.", "key(Escape)")
        steps.append({"screenshot": name, "text": f"Step {i + 1}. {question}", "action": action})
    renderer.close()
    (out / "trajectory.json").write_text(json.dumps({
        "system": "You operate a desktop computer. Each turn shows the current screen; answer with one action.",
        "steps": steps}, indent=1))
    print(f"wrote {args.steps} steps ({width} x {height}) to {out / 'trajectory.json'}")


if __name__ == "__main__":
    main()
