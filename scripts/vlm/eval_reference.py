"""scripts/vlm/eval_reference.py OUT — the held-out accuracy of the trained checkpoints in
transformers itself (greedy, the training prompts), beside scripts/vlm/eval_vlm.py's figures
through squeeze serve: writes OUT/torch_eval.json and prints each model's summary and its
most frequent answers."""
import json
import sys
import time
from collections import Counter
from pathlib import Path

import torch
from PIL import Image
from transformers import MuseGlimmerForConditionalGeneration, PreTrainedTokenizerFast
from transformers.models.muse_glimmer.image_processing_muse_glimmer import MuseGlimmerImageProcessor

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_vlm  # noqa: E402
from screen_questions import score, summary  # noqa: E402


def greedy_answer(model, tok, ids, eot, image_inputs, max_tokens=16):
    """The model's greedy continuation of ids up to <|eot|>, its final message's text."""
    x = torch.tensor(ids)[None]
    out = []
    with torch.no_grad():
        for _ in range(max_tokens):
            nxt = int(model(input_ids=x, **image_inputs).logits[0, -1].argmax())
            if nxt == eot:
                break
            out.append(nxt)
            x = torch.cat([x, torch.tensor([[nxt]])], 1)
    text = tok.decode(out)
    return text.split("<|message|>", 1)[1] if "<|message|>" in text else text


def main():
    torch.set_num_threads(2)
    out = Path(sys.argv[1])
    data = out / "data" / "test"
    rows = [json.loads(x) for x in (data / "tasks.jsonl").read_text().splitlines()]
    tpl = train_vlm.template()
    proc = MuseGlimmerImageProcessor()
    report = {}
    for name, with_image in (("vlm", True), ("text-only", False)):
        model = MuseGlimmerForConditionalGeneration.from_pretrained(out / f"{name}-hf", use_kernels=False).eval()
        tok = PreTrainedTokenizerFast.from_pretrained(out / f"{name}-hf")
        specials = {s: tok.convert_tokens_to_ids(s) for s in train_vlm.SPECIALS}
        results, t0 = [], time.time()
        for row in rows:
            image_inputs, image_tokens = {}, 0
            if with_image:
                pv = proc(images=[Image.open(data / row["image"]).convert("RGB")], max_image_tokens=4096,
                          return_tensors="pt")
                image_inputs = dict(pixel_values=pv["pixel_values"], image_grid_thw=pv["image_grid_thw"])
                image_tokens = int(pv["image_grid_thw"][0].prod()) // 4
            for t in row["tasks"]:
                ids = tok(train_vlm.render(tpl, t["question"], with_image), add_special_tokens=False).input_ids
                if with_image:
                    ids = train_vlm.expand_image(ids, image_tokens, specials)
                answer = greedy_answer(model, tok, ids, specials["<|eot|>"], image_inputs)
                results.append({"kind": t["kind"], "answer": answer, "correct": score(t, answer)})
        report[name] = summary(results)
        print(name, report[name], f"{time.time() - t0:.0f} s",
              Counter(r["answer"] for r in results).most_common(4), flush=True)
    (out / "torch_eval.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()
