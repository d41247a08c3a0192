"""scripts/vlm/screen_questions.py — how a screenshot question is put to a model served by
`squeeze serve` and how its answer is scored, shared by scripts/vlm/eval_vlm.py and the
shipped-model test (tests/python/test_shipped_models.py). Needs neither torch nor
transformers, so the test command can import it.

  click    correct when the answer's click(x, y) lies inside the target button's box
  dialog   the message, exactly
  checkbox the checked box's label, exactly
"""
import re

# An explicit system message: the template's default one carries the current date (from
# strftime_now, which squeeze's renderer has), so training and serving would differ by day.
SYSTEM = "You operate a computer. Answer with one action or the text asked for."
CLICK = re.compile(r"click\((-?\d+),\s*(-?\d+)\)")
KINDS = ("click", "dialog", "checkbox")


def score(task, answer):
    """Whether answer is right for task (a tasks.jsonl task: kind, answer, and for a click
    the button's box x, y, w, h)."""
    if task["kind"] == "click":
        m = CLICK.fullmatch(answer.strip())
        if not m:
            return False
        x, y = int(m.group(1)), int(m.group(2))
        bx, by, bw, bh = task["box"]
        return bx <= x < bx + bw and by <= y < by + bh
    return answer.strip() == task["answer"]


def ask(server, question, image=None):
    """The served model's answer to one question (greedy, reasoning effort none, at most 16
    tokens), with the screenshot as a data: URL when image is given. server: serve_util's
    Server."""
    content = ([{"type": "image_url", "image_url": {"url": image}}] if image else []) + [{"type": "text", "text": question}]
    status, _, body = server.request("POST", "/v1/chat/completions", {
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}],
        "temperature": 0, "max_tokens": 16, "reasoning_effort": "none"})
    if status != 200:
        raise RuntimeError(f"HTTP {status}: {body}")
    return body["choices"][0]["message"].get("content") or ""


def summary(results):
    """{kind: {n, correct, accuracy}} over results (dicts with kind and correct)."""
    out = {}
    for kind in KINDS:
        r = [x for x in results if x["kind"] == kind]
        out[kind] = {"n": len(r), "correct": sum(x["correct"] for x in r),
                     "accuracy": sum(x["correct"] for x in r) / max(1, len(r))}
    return out
