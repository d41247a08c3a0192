"""scripts/vlm/eval_reference.py OUT — the held-out accuracy of the trained checkpoints in
transformers itself (greedy, the training prompts), beside scripts/vlm/eval_vlm.py's figures
through squeeze serve: writes OUT/torch_eval.json and prints each model's summary and its
most frequent answers."""
import json, sys, time
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import torch
from pathlib import Path
from PIL import Image
from transformers import MuseGlimmerForConditionalGeneration, PreTrainedTokenizerFast
from transformers.models.muse_glimmer.image_processing_muse_glimmer import MuseGlimmerImageProcessor
import train_vlm, eval_vlm
torch.set_num_threads(2)
out = Path(sys.argv[1]); d = out / "data" / "test"
rows = [json.loads(x) for x in (d / "tasks.jsonl").read_text().splitlines()]
tpl = train_vlm.template(); proc = MuseGlimmerImageProcessor()
rep = {}
for name, with_image in (("vlm", True), ("text-only", False)):
    m = MuseGlimmerForConditionalGeneration.from_pretrained(out / f"{name}-hf", use_kernels=False).eval()
    tok = PreTrainedTokenizerFast.from_pretrained(out / f"{name}-hf")
    ids_sp = {s: tok.convert_tokens_to_ids(s) for s in train_vlm.SPECIALS}
    eot = ids_sp["<|eot|>"]
    res = []
    t0 = time.time()
    for row in rows:
        kw = {}
        if with_image:
            pv = proc(images=[Image.open(d / row["image"]).convert("RGB")], max_image_tokens=4096, return_tensors="pt")
            kw = dict(pixel_values=pv["pixel_values"], image_grid_thw=pv["image_grid_thw"])
            n_img = int(pv["image_grid_thw"][0].prod()) // 4
        for t in row["tasks"]:
            ids = tok(train_vlm.render(tpl, t["question"], with_image), add_special_tokens=False).input_ids
            if with_image:
                ids = train_vlm.expand_image(ids, n_img, ids_sp)
            x = torch.tensor(ids)[None]; outt = []
            with torch.no_grad():
                for _ in range(16):
                    nxt = int(m(input_ids=x, **kw).logits[0, -1].argmax())
                    if nxt == eot: break
                    outt.append(nxt); x = torch.cat([x, torch.tensor([[nxt]])], 1)
            text = tok.decode(outt)
            ans = text.split("<|message|>", 1)[1] if "<|message|>" in text else text
            res.append({"kind": t["kind"], "answer": ans, "correct": eval_vlm.score(t, ans)})
    rep[name] = eval_vlm.summary(res)
    from collections import Counter
    print(name, rep[name], time.time() - t0, Counter(r["answer"] for r in res).most_common(4), flush=True)
json.dump(rep, open(out / "torch_eval.json", "w"))
