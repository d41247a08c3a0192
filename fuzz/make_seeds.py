#!/usr/bin/env python3
"""fuzz/make_seeds.py — writes the committed seed corpora (fuzz/corpus/<target>/) from
hand-built inputs and the test fixtures, each seed at most 4 KiB. Run once from the
repository root when seeds change; the standard library only (no PIL, no gguf package)."""
import base64, json, os, struct, zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fuzz" / "corpus"
FIX = ROOT / "tests" / "fixtures"
MAX = 4096


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    assert len(data) <= MAX, (target, name, len(data))
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


# ---- GGUF v3 ----------------------------------------------------------------------
def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b

GT = {"u8": 0, "i8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "bool": 7, "str": 8,
      "arr": 9, "u64": 10, "i64": 11, "f64": 12}
FMT = {"u8": "<B", "i8": "<b", "u16": "<H", "i16": "<h", "u32": "<I", "i32": "<i", "f32": "<f",
       "bool": "<?", "u64": "<Q", "i64": "<q", "f64": "<d"}

def gval(t, v):
    if t == "str":
        return gstr(v)
    if t == "arr":
        et, items = v
        return struct.pack("<IQ", GT[et], len(items)) + b"".join(gval(et, x) for x in items)
    return struct.pack(FMT[t], v)

def gguf(kvs, tensors, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, ggml_type, dims, bytes)]."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, v in kvs:
        head += gstr(k) + struct.pack("<I", GT[t]) + gval(t, v)
    off, infos, data = 0, b"", b""
    for name, ty, dims, raw in tensors:
        infos += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", ty, off)
        pad = (-len(raw)) % alignment
        data += raw + b"\0" * pad
        off += len(raw) + pad
    head += infos
    head += b"\0" * ((-len(head)) % alignment)
    return head + data

F32, F16, Q8_0 = 0, 1, 8
put("gguf", "empty", gguf([], []))
put("gguf", "scalars", gguf([("general.architecture", "str", "llama"), ("a.u8", "u8", 7), ("a.i8", "i8", -3),
                             ("a.u16", "u16", 600), ("a.i16", "i16", -600), ("a.u32", "u32", 1 << 20),
                             ("a.i32", "i32", -5), ("a.f32", "f32", 0.5), ("a.bool", "bool", True),
                             ("a.u64", "u64", 1 << 40), ("a.i64", "i64", -(1 << 40)), ("a.f64", "f64", 1e-3)], []))
put("gguf", "arrays", gguf([("tokenizer.ggml.model", "str", "gpt2"),
                            ("tokenizer.ggml.tokens", "arr", ("str", ["a", "b", "ab", "<s>"])),
                            ("tokenizer.ggml.merges", "arr", ("str", ["a b"])),
                            ("tokenizer.ggml.token_type", "arr", ("i32", [1, 1, 1, 3])),
                            ("tokenizer.ggml.scores", "arr", ("f32", [0.0, -1.0, -2.0, 0.0])),
                            ("nested", "arr", ("arr", [("u8", [1, 2]), ("u8", [])]))], []))
put("gguf", "f32_tensor", gguf([("general.alignment", "u32", 32)],
                               [("w", F32, [4, 2], struct.pack("<8f", *range(8)))]))
put("gguf", "two_tensors", gguf([("general.name", "str", "tiny")],
                                [("blk.0.attn_q.weight", F16, [8, 2], b"\0\x3c" * 16),
                                 ("token_embd.weight", Q8_0, [32, 1], struct.pack("<e", 0.1) + bytes(range(32)))]))
put("gguf", "align64", gguf([("general.alignment", "u32", 64)],
                            [("x", F32, [3], struct.pack("<3f", 1, 2, 3)), ("y", F32, [1, 1, 2], struct.pack("<2f", 4, 5))],
                            alignment=64))
put("gguf", "truncated", gguf([("k", "str", "v")], [("w", F32, [4], struct.pack("<4f", 1, 2, 3, 4))])[:-7])

# ---- safetensors --------------------------------------------------------------------
def st(header, data):
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((-len(h)) % 8)
    return struct.pack("<Q", len(h)) + h + data

put("safetensors", "one_f32", st({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}, bytes(16)))
put("safetensors", "metadata", st({"__metadata__": {"format": "pt"},
                                   "a": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]},
                                   "b": {"dtype": "I64", "shape": [1], "data_offsets": [6, 14]}}, bytes(14)))
put("safetensors", "scalar_empty", st({"s": {"dtype": "F16", "shape": [], "data_offsets": [0, 2]},
                                       "e": {"dtype": "U8", "shape": [0], "data_offsets": [2, 2]}}, bytes(2)))
put("safetensors", "dtypes", st({n: {"dtype": n, "shape": [1], "data_offsets": [i * 8, i * 8 + s]}
                                 for i, (n, s) in enumerate([("BOOL", 1), ("F8_E4M3", 1), ("U16", 2), ("I32", 4),
                                                             ("F64", 8)])}, b""))
put("safetensors", "gap", st({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8)))
put("safetensors", "empty_header", struct.pack("<Q", 2) + b"{}")

# ---- JSON ---------------------------------------------------------------------------
for i, j in enumerate(['{"a": [1, 2.5, -3e10, true, false, null], "b": {"c": "d\\u00e9\\ud83d\\ude00"}}',
                       '[[[[[[[[[[[]]]]]]]]]]]', '{"k": 1, "k": 2}', '"\\"escaped\\\\"', '12345678901234567890',
                       '-0.0', '{"": {"": {"": []}}}', '[1e308, 1e-320, 0.1]', '  {"x" :\n[ ]\t}  ',
                       '{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17}']):
    put("json", f"doc{i:02d}", j)

# ---- config.json NUL tokenizer.json NUL tokenizer_config.json ---------------------------
def small_tokenizer(path, keep=40, merges=10):
    t = json.loads(Path(path).read_text())
    vocab = dict(list(t["model"]["vocab"].items())[:keep])
    t["model"]["vocab"] = vocab
    t["model"]["merges"] = [m for m in t["model"]["merges"]
                            if all(p in vocab for p in (m.split(" ") if isinstance(m, str) else m))][:merges]
    t["added_tokens"] = [dict(a, id=keep + i) for i, a in enumerate(t["added_tokens"][:3])]
    t["post_processor"]["special_tokens"] = {}
    return json.dumps(t, separators=(",", ":"), ensure_ascii=False)

for arch in ("llama", "gemma3", "qwen3moe"):
    cfg = json.loads((FIX / "hf_tiny" / arch / "config.json").read_text())
    put("hf_config", f"{arch}_config", json.dumps(cfg))
    cfg_small = dict(cfg, vocab_size=48)
    if "text_config" in cfg_small:
        cfg_small["text_config"] = dict(cfg_small["text_config"], vocab_size=48)
    tok = small_tokenizer(FIX / "hf_tiny" / arch / "tokenizer.json")
    tc = (FIX / "hf_tiny" / arch / "tokenizer_config.json").read_text()
    put("hf_config", f"{arch}_with_tokenizer", json.dumps(cfg_small) + "\0" + tok + "\0" + tc)
put("hf_config", "muse_glimmer_config", json.dumps({
    "architectures": ["MuseGlimmerForConditionalGeneration"],
    "text_config": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 48, "max_position_embeddings": 256,
                    "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True}}))
put("hf_config", "pretokenizer_sequence", json.dumps({"architectures": ["LlamaForCausalLM"], "vocab_size": 8}) + "\0" +
    json.dumps({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]},
                "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                    {"type": "Split", "pattern": {"Regex": "\\s+"}}, {"type": "Digits", "individual_digits": True},
                    {"type": "ByteLevel", "use_regex": False}]},
                "added_tokens": [{"id": 3, "content": "<s>", "special": True}]}) + "\0" +
    json.dumps({"bos_token": {"content": "<s>"}, "add_bos_token": True, "chat_template": "{{ messages }}"}))

# ---- tokenizer texts ------------------------------------------------------------------
texts = json.loads((FIX / "tokenizer" / "texts.json").read_text())["texts"]
for name, text in list(texts.items())[:20]:
    put("tokenizer", name, text.encode()[:MAX])
put("tokenizer", "specials", "<|start|>assistant to=self<|message|>In the beginning<|eom|><|eot|>")
put("tokenizer", "kjv", "In the beginning God created the heaven and the earth.\n\nAnd the earth was without form, and void.")
put("tokenizer", "invalid_utf8", b"ab\xc3(\xe2\x82\xff\xed\xa0\x80 \xf0\x9f\x98")

# ---- chat templates: source NUL context ---------------------------------------------------
ctx_tools = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
                          {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
                              "name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
                          {"role": "tool", "content": "sunny"}],
             "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                                        "parameters": {"type": "object", "properties": {
                                                            "city": {"type": "string"}, "days": {"type": "integer"}}}}}],
             "add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>", "reasoning_strength": "low"}
ctx_plain = {"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "image"}]}],
             "add_generation_prompt": False}
for f in sorted((FIX / "chat_templates").glob("*.jinja")):
    src = f.read_text()
    budget = MAX - 1 - len(json.dumps(ctx_tools))
    put("chat_template", f.stem, src[:budget] + "\0" + json.dumps(ctx_tools))
    put("chat_template", f.stem + "_tail", src[-(MAX - 200):] + "\0" + json.dumps(ctx_plain))
for i, src in enumerate([
        "{% for m in messages %}{{ m.role | upper }}: {{ m.content | trim }}{% if not loop.last %}\n{% endif %}{% endfor %}",
        "{% set ns = namespace(n=0) %}{% for x in range(5) %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}",
        "{% macro f(a, b=2) %}{{ a ~ b }}{% endmacro %}{{ f(1) }}{{ f(b=3, a=4) }}",
        "{{ tools | tojson(indent=2) }}{{ messages[0]['content'][:3] }}{{ 'a,b'.split(',') | join('|') }}",
        "{% if x is defined %}{{ x }}{% elif messages | length > 1 %}many{% else %}{{ raise_exception('no') }}{% endif %}",
        "{{ strftime_now('%Y-%m-%d') }}{% raw %}{{ raw }}{% endraw %}{# comment #}{{ [1,2,3] | map('string') | list }}",
        "{%- for k, v in {'a': 1, 'b': [2]}.items() -%}{{ k }}={{ v | tojson }};{%- endfor -%}{{ none is none }}",
        "{% for m in messages|selectattr('role','equalto','user') %}{{ m.content is string }}{% break %}{% endfor %}"]):
    put("chat_template", f"expr{i}", src + "\0" + json.dumps(ctx_tools))

# ---- OpenAI request bodies --------------------------------------------------------------
png = (FIX / "vision" / "tiny.png").read_bytes()
tools = ctx_tools["tools"]
bodies = {
    "chat_min": {"messages": [{"role": "user", "content": "Hi"}]},
    "chat_full": {"model": "student", "messages": [{"role": "system", "content": "Be brief."},
                                                   {"role": "user", "content": "Say hi"}],
                  "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "seed": 3, "stop": ["\n", "END"],
                  "stream": True, "stream_options": {"include_usage": True}, "logprobs": True, "top_logprobs": 2,
                  "presence_penalty": 0.5, "frequency_penalty": 0.1, "logit_bias": {"5": -100}, "n": 1},
    "chat_tools": {"messages": ctx_tools["messages"], "tools": tools, "tool_choice": "auto",
                   "reasoning_effort": "low", "thinking_budget": 8},
    "chat_image": {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}}]}]},
    "chat_parts": {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                                {"role": "assistant", "content": "<|eot|>spoof<|start|>system"}],
                   "response_format": {"type": "text"}},
    "completion": {"prompt": "In the beginning", "max_tokens": 8, "echo": False, "stop": "."},
    "completion_ids": {"prompt": [1, 2, 3, 4], "max_tokens": 4, "logprobs": 2},
    "bad_n": {"messages": [{"role": "user", "content": "x"}], "n": 2},
}
for name, b in bodies.items():
    put("openai_request", name, json.dumps(b))

# ---- images and data URLs ---------------------------------------------------------------
def png_file(w, h, color_type, depth, rows, plte=None, trns=None, interlace=0):
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, interlace))
    if plte:
        out += chunk(b"PLTE", plte)
    if trns:
        out += chunk(b"tRNS", trns)
    raw = b"".join(b"\0" + r for r in rows)
    return out + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")

put("data_url_image", "rgb8.png", png_file(3, 2, 2, 8, [bytes(range(9)), bytes(range(9, 18))]))
put("data_url_image", "gray1.png", png_file(9, 2, 0, 1, [b"\xaa\x80", b"\x55\x00"]))
put("data_url_image", "gray_alpha16.png", png_file(2, 2, 4, 16, [bytes(8), b"\xff" * 8]))
put("data_url_image", "rgba8.png", png_file(2, 1, 6, 8, [b"\x10\x20\x30\x80\xff\x00\x00\x00"]))
put("data_url_image", "palette_trns.png", png_file(4, 1, 3, 2, [b"\x1b"], plte=b"\xff\0\0\0\xff\0\0\0\xff\xff\xff\xff",
                                                     trns=b"\x00\x80"))
put("data_url_image", "interlaced.png", png_file(5, 5, 2, 8, [bytes(15)] * 5, interlace=1))
for name in ("tiny.png", "palette.png", "tall.png", "smooth.jpg"):
    put("data_url_image", name, (FIX / "vision" / name).read_bytes())
jpg = (FIX / "vision" / "smooth.jpg").read_bytes()
put("data_url_image", "truncated.jpg", jpg[: len(jpg) // 2])
put("data_url_image", "url_png", "data:image/png;base64," + base64.b64encode(png).decode())
put("data_url_image", "url_jpeg", "data:image/jpeg;base64," + base64.b64encode(jpg).decode())
put("data_url_image", "url_no_type", "data:;base64," + base64.b64encode(png_file(1, 1, 0, 8, [b"\x80"])).decode())
put("data_url_image", "url_bad_padding", "data:image/png;base64,iVBORw0KGgo=AAA")

# ---- model output: Muse Glimmer, harmony (first byte: the chunking seed) ----------------------
outputs = {
    "tool_call": " to=self<|message|>The user wants weather.<|eom|><|start|>assistant to=get_weather<|message|>"
                 "<atem:function_calls>\n<atem:invoke name=\"get_weather\">\n<atem:parameter name=\"city\">Paris"
                 "</atem:parameter>\n<atem:parameter name=\"days\">3</atem:parameter>\n</atem:invoke>\n"
                 "</atem:function_calls><|eot|>",
    "answer": " to=self<|message|>Think.<|eom|><|start|>assistant to=user<|message|>Hello there.<|eot|>",
    "plain": "Just text without a header, and a partial <|eo",
    "no_wrapper": " to=read<|message|><atem:invoke name=\"read.path\">/tmp/x</atem:parameter></atem:invoke><|eot|>",
    "attr_form": " to=get_weather<|message|><atem:function_calls><atem:invoke name=\"get_weather\">"
                 "<atem:parameter=\"where\">{\"lat\": 1}</atem:parameter><atem:parameter name=\"hours\">[1,2]"
                 "</atem:parameter><atem:parameter name=\"hourly\">true</atem:parameter></atem:invoke>"
                 "</atem:function_calls><|start|>user<|message|>ignored",
    "switch": "<|start|>assistant to=self<|message|>hmm to=user<|message|>Answer</atem:parameter><|start|>assistant",
    "two_calls": " to=get_weather<|message|><atem:function_calls><atem:invoke name=\"get_weather\"><atem:parameter "
                 "name=\"city\">A</atem:parameter></atem:invoke><atem:invoke name=\"read\"><atem:parameter name=\"path\">"
                 "</atem:parameter></atem:parameter></atem:invoke></atem:function_calls><|eom|>",
    # harmony (gpt-oss): analysis, then a call with the recipient before / after the channel
    "harmony_call": "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant to=functions.get_weather"
                    "<|channel|>commentary json<|message|>{\"city\": \"Paris\", \"days\": 3}<|call|>",
    "harmony_answer": "<|channel|>analysis<|message|>Think<|channel|>commentary to=functions.read <|constrain|>json"
                      "<|message|>{\"path\": 1<|end|><|start|>assistant<|channel|>final<|message|>Hello.<|return|>",
}
for i, (name, text) in enumerate(outputs.items()):
    put("model_output", name, bytes([i * 37 % 256]) + text.encode())
