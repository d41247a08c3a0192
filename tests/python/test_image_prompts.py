"""tests/python/test_image_prompts.py — images in prompts through the CLI and the server,
on the shipped Muse Glimmer KJV student (which has the image tokens) with a random small
projector written by `make-model --mmproj-for`:

- `generate --image`: the prompt grows by the image's tokens and the two markers; the
  answer depends on the image (greedy text differs between two images); errors are one
  line with a non-zero exit (no projector, a projector of another width, a model without
  image tokens, a corrupt image, the image as an output);
- `chat` with `/image`: the second turn reuses the cache through the first image;
- the server: `capabilities` lists multimodal; an `image_url` data URL through the
  `openai` client; a repeat reuses the cached prefix through the image, and another image
  of the same size does not reuse past its start; a server without a projector refuses
  images with a 400."""
import base64
import os
import re
import subprocess

import pytest

from serve_util import Server

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODEL = os.path.join(ROOT, "models", "muse-glimmer-kjv.f16.gguf")
TEACHER = os.path.join(ROOT, "models", "kjv-teacher.q8_0.gguf")
FIX = os.path.join(ROOT, "tests", "fixtures", "vision")
NOISE, GREY = os.path.join(FIX, "rgb_noise.png"), os.path.join(FIX, "grey.png")


def sq(*args, stdin=None):
    return subprocess.run([SQ, *map(str, args)], capture_output=True, text=True, errors="replace", timeout=300,
                          input=stdin)


@pytest.fixture(scope="module")
def mmproj(tmp_path_factory):
    out = tmp_path_factory.mktemp("mmproj") / "mmproj.gguf"
    r = sq("make-model", "--mmproj-for", MODEL, "-o", out)
    assert r.returncode == 0, r.stderr
    return out


def prompt_tokens(stderr):
    return int(re.search(r"prompt: (\d+) tokens", stderr).group(1))


def generate(mmproj, *extra):
    return sq("generate", "-m", MODEL, "--mmproj", mmproj, "--temp", "0", "-n", "12", "--max-image-tokens", "16",
              *extra)


def test_generate_with_images(mmproj):
    plain = sq("generate", "-m", MODEL, "--temp", "0", "-n", "12", "-p", "And God said")
    assert plain.returncode == 0, plain.stderr
    a = generate(mmproj, "--image", NOISE, "-p", "And God said")
    b = generate(mmproj, "--image", GREY, "-p", "And God said")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    tokens = int(re.search(r"(\d+) image tokens", a.stderr).group(1))
    assert 1 <= tokens <= 16
    assert prompt_tokens(a.stderr) == prompt_tokens(plain.stderr) + tokens + 2  # + <|image_start|>, <|image_end|>
    assert a.stdout != b.stdout  # the continuation reads the image
    two = generate(mmproj, "--image", NOISE, "--image", NOISE, "-p", "And God said")
    assert two.returncode == 0, two.stderr
    assert "cached" in two.stderr.splitlines()[1]  # the second copy is found by its hash
    chat = generate(mmproj, "--chat", "--image", NOISE, "-p", "What is this?")
    assert chat.returncode == 0, chat.stderr


def one_line_error(r, needle):
    assert r.returncode != 0, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr


def test_generate_image_errors(mmproj, tmp_path):
    one_line_error(sq("generate", "-m", MODEL, "--image", NOISE, "-p", "x"), "--image needs --mmproj")
    one_line_error(sq("generate", "-m", TEACHER, "--mmproj", mmproj, "--image", NOISE, "-p", "x"), "<|image_start|>")
    other = tmp_path / "other.gguf"
    assert sq("make-model", "--mmproj-for", TEACHER, "-o", other).returncode == 0
    one_line_error(generate(other, "--image", NOISE, "-p", "x"), "output width is 512, the model's is 256")
    bad = tmp_path / "bad.png"
    bad.write_bytes(open(NOISE, "rb").read()[:200])
    one_line_error(generate(mmproj, "--image", bad, "-p", "x"), "bad.png")
    one_line_error(generate(mmproj, "--image", tmp_path / "missing.png", "-p", "x"), "missing.png")
    before = open(NOISE, "rb").read()
    r = generate(mmproj, "--image", NOISE, "-p", "x", "--dump", NOISE)
    assert r.returncode != 0
    assert open(NOISE, "rb").read() == before


def test_chat_image_turns_reuse_the_cache(mmproj):
    r = sq("chat", "-m", MODEL, "--mmproj", mmproj, "--max-image-tokens", "16", "--temp", "0", "-n", "6",
           "--reasoning-effort", "none",
           stdin=f"/image {NOISE}\nWhat is this?\nAnd now?\n/image {os.path.join(FIX, 'missing.png')}\nBye\n")
    assert r.returncode == 0, r.stderr
    stats = re.findall(r"\[prompt: (\d+) tokens \((\d+) reused, (\d+) prefilled\)", r.stderr)
    assert len(stats) == 3, r.stderr
    first, second = (tuple(map(int, s)) for s in stats[:2])
    assert first[1] == 0
    image_tokens = int(re.search(r"(\d+) image tokens", r.stderr).group(1))
    assert second[1] > image_tokens  # the second turn reused the first, image included
    assert "image refused" in r.stderr and "missing.png" in r.stderr


def data_url(path):
    return "data:image/png;base64," + base64.b64encode(open(path, "rb").read()).decode()


def test_server_takes_image_urls(mmproj):
    openai = pytest.importorskip("openai")
    s = Server(SQ, "-m", MODEL, "--mmproj", mmproj, "--max-image-tokens", "16", "-np", "1", "--batch", "8")
    try:
        _, _, models = s.request("GET", "/v1/models")
        assert "multimodal" in models["data"][0]["capabilities"]
        client = openai.OpenAI(base_url=s.url + "/v1", api_key="none")

        def ask(image):
            return client.chat.completions.create(
                model=models["data"][0]["id"], max_tokens=4, temperature=0,
                messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(image)}},
                                                       {"type": "text", "text": "What is it?"}]}])
        a = ask(NOISE)
        again = ask(NOISE)
        other = ask(GREY)
        assert a.choices[0].message.content == again.choices[0].message.content
        assert again.usage.prompt_tokens_details.cached_tokens > 0
        assert other.usage.prompt_tokens == a.usage.prompt_tokens  # both images have the same grid here
        # A different image: nothing reused past its first row (chunk-aligned, so at most that).
        text_before = 8 * (again.usage.prompt_tokens_details.cached_tokens // 8)
        assert other.usage.prompt_tokens_details.cached_tokens < text_before
    finally:
        s.proc.terminate()
        s.proc.wait(timeout=60)


def test_server_without_projector_refuses_images():
    s = Server(SQ, "-m", MODEL, "-np", "1")
    try:
        status, _, body = s.request("POST", "/v1/chat/completions", {
            "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(GREY)}}]}]})
        assert status == 400 and "--mmproj" in body["error"]["message"]
    finally:
        s.proc.terminate()
        s.proc.wait(timeout=60)


def test_agent_replay(mmproj, tmp_path):
    import json
    import shutil
    names = ["rgb_noise.png", "grey.png", "rgba.png", "palette.png", "smooth.jpg", "large.png"]
    steps = []
    for i in range(9):
        f = f"s{i}_{names[i % len(names)]}"
        shutil.copy(os.path.join(FIX, names[i % len(names)]), tmp_path / f)
        steps.append({"screenshot": f, "text": f"step {i}", "action": f"click({i}, {2 * i})"})
    traj = tmp_path / "trajectory.json"
    traj.write_text(json.dumps({"system": "You operate a computer.", "steps": steps}))
    out = tmp_path / "replay.json"
    r = sq("agent-replay", "-m", MODEL, "--mmproj", mmproj, traj, "--ctx", "2048", "--keep", "2",
           "--max-image-tokens", "24", "--batch", "8", "--evict-batch", "1,3", "--json", out)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| ") and "reuse" not in line]
    assert len(rows) == 6, r.stdout
    assert all("(the reference)" in x or "yes, bit for bit" in x for x in rows), r.stdout
    report = json.loads(out.read_text())
    runs = {(x["reuse"], x["evict_batch"]): x for x in report["runs"]}
    for batch in (1, 3):
        none, snap = runs[("none", batch)], runs[("snapshots", batch)]
        assert none["prefilled"] == none["prompt_tokens"]  # recomputes everything
        assert snap["prefilled"] < none["prefilled"]
        for s in snap["steps"]:
            assert s["prefilled"] == s["prompt_tokens"] - s["recompute_from"]
            assert s["screenshots_in_context"] <= 2 + batch - 1
    assert runs[("snapshots", 3)]["prefilled"] < runs[("snapshots", 1)]["prefilled"]  # batched eviction keeps the prefix
    # Errors: one line, non-zero exit.
    one_line_error(sq("agent-replay", "-m", MODEL, traj), "--mmproj")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"steps": [{"screenshot": "s0_rgb_noise.png"}]}))
    one_line_error(sq("agent-replay", "-m", MODEL, "--mmproj", mmproj, bad), "action")
    bad.write_text("[1, 2")
    one_line_error(sq("agent-replay", "-m", MODEL, "--mmproj", mmproj, bad), "not valid JSON")
    bad.write_text("[1, 2]")
    one_line_error(sq("agent-replay", "-m", MODEL, "--mmproj", mmproj, bad), "not a JSON object")
    bad.write_text('{"steps": ' + "[" * 100000 + "]" * 100000 + "}")  # used to overflow the stack
    one_line_error(sq("agent-replay", "-m", MODEL, "--mmproj", mmproj, bad), "nested deeper than 64 levels")


def test_prompt_image_cap(mmproj):
    r = generate(mmproj, "--image", NOISE, "-p", "x", "--max-image-tokens", "4097")
    one_line_error(r, "--max-image-tokens")
