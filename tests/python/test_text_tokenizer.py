"""tests/python/test_text_tokenizer.py — the byte-level BPE tokenizer against an
independent Python implementation.

The reference here shares no code with the C++ one: the GPT-2 byte alphabet is rebuilt
from its definition, the pre-tokenizer splits are the original regexes run by Python's
`re` (with \\p{L}, \\p{N} and \\s spelled out as character classes from unicodedata,
since `re` lacks \\p{..}), and merging is the textbook loop (merge the lowest-rank
adjacent pair, leftmost first, until none applies). A small vocabulary is trained here
on a synthetic corpus. `squeeze tokenize --batch` encodes hex lines and decodes ids.
"""
import functools
import json
import os
import random
import re
import subprocess
import sys
import unicodedata

import pytest

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")

# --- byte alphabet -------------------------------------------------------------------

def byte_alphabet():
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table

B2U = byte_alphabet()

def to_alphabet(bs: bytes) -> str:
    return "".join(B2U[b] for b in bs)

# --- pre-tokenizer regexes -----------------------------------------------------------

WHITE_SPACE = [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
               0x2028, 0x2029, 0x202F, 0x205F, 0x3000]

def category_class(first_letter):
    parts, start = [], None
    for cp in range(0x110001):
        inside = cp <= 0x10FFFF and unicodedata.category(chr(cp))[0] == first_letter
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            parts.append(f"\\U{start:08x}-\\U{cp - 1:08x}")
            start = None
    return "".join(parts)

L = category_class("L")
N = category_class("N")
W = "".join(f"\\U{cp:08x}" for cp in WHITE_SPACE)
S = f"[{W}]"
NOT_S = f"[^{W}]"
# Contractions spelled in ASCII: `re`'s IGNORECASE would also fold e.g. U+017F into 's'.
CONTRACTIONS = "'s|'t|'re|'ve|'m|'ll|'d"
CONTRACTIONS_I = "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]"
SPLITS = {
    "gpt2": re.compile(f"{CONTRACTIONS}| ?[{L}]+| ?[{N}]+| ?[^{W}{L}{N}]+|{S}+(?!{NOT_S})|{S}+"),
    "llama-bpe": re.compile(f"{CONTRACTIONS_I}|[^\\r\\n{L}{N}]?[{L}]+|[{N}]{{1,3}}| ?[^{W}{L}{N}]+[\\r\\n]*"
                            f"|{S}*[\\r\\n]+|{S}+(?!{NOT_S})|{S}+"),
    "qwen2": re.compile(f"{CONTRACTIONS_I}|[^\\r\\n{L}{N}]?[{L}]+|[{N}]| ?[^{W}{L}{N}]+[\\r\\n]*"
                        f"|{S}*[\\r\\n]+|{S}+(?!{NOT_S})|{S}+"),
}

def lenient(data: bytes) -> bytes:
    """Bytes as llama.cpp's byte-level BPE reads them: a lead byte with the continuation
    bytes it announces is its code point (overlong forms included, re-encoded shortest);
    any other byte is U+FFFD."""
    out, i = bytearray(), 0
    while i < len(data):
        b = data[i]
        n = 1 if b < 0x80 else 2 if b >> 5 == 0b110 else 3 if b >> 4 == 0b1110 else 4 if b >> 3 == 0b11110 else 0
        tail = data[i + 1:i + n]
        if n and len(tail) == n - 1 and all(c >> 6 == 0b10 for c in tail):
            cp = b if n == 1 else b & (0xFF >> (n + 1))
            for c in tail:
                cp = cp << 6 | (c & 0x3F)
            out += chr(cp).encode("utf-8", "surrogatepass") if cp <= 0x10FFFF else "\ufffd".encode()
            i += n
        else:
            out += "\ufffd".encode()
            i += 1
    return bytes(out)

def pre_tokenize(data: bytes, pre: str):
    # Undecodable bytes become lone surrogates (category Cs: "other"), one per byte,
    # which is how the engine classifies bytes that are not well-formed UTF-8.
    text = data.decode("utf-8", "surrogateescape")
    pieces = SPLITS[pre].findall(text)
    assert "".join(pieces) == text
    return [p.encode("utf-8", "surrogateescape") for p in pieces]

# --- BPE -----------------------------------------------------------------------------

def bpe(piece: bytes, ranks):
    syms = [bytes([b]) for b in piece]
    while True:
        best, best_rank = None, None
        for i in range(len(syms) - 1):
            r = ranks.get((syms[i], syms[i + 1]))
            if r is not None and (best_rank is None or r < best_rank):
                best, best_rank = i, r
        if best is None:
            return syms
        syms[best:best + 2] = [syms[best] + syms[best + 1]]

def train(corpus, pre, n_merges):
    words = {}
    for line in corpus:
        for p in pre_tokenize(line, pre):
            words[p] = words.get(p, 0) + 1
    seqs = {w: [bytes([b]) for b in w] for w in words}
    merges = []
    for _ in range(n_merges):
        counts = {}
        for w, seq in seqs.items():
            for a, b in zip(seq, seq[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + words[w]
        if not counts:
            break
        pair = max(sorted(counts), key=lambda k: counts[k])
        merges.append(pair)
        for w, seq in seqs.items():
            out, i = [], 0
            while i < len(seq):
                if i + 1 < len(seq) and (seq[i], seq[i + 1]) == pair:
                    out.append(seq[i] + seq[i + 1])
                    i += 2
                else:
                    out.append(seq[i])
                    i += 1
            seqs[w] = out
    return merges

class Reference:
    def __init__(self, pre, seed):
        rng = random.Random(seed)
        corpus = [sentence(rng) for _ in range(300)] + [utf8_text(rng, 40) for _ in range(40)]
        self.pre = pre
        self.merges = train(corpus, pre, 250)
        self.ranks = {pair: i for i, pair in enumerate(self.merges)}
        byte_ids = list(range(256))
        rng.shuffle(byte_ids)  # byte tokens in a scrambled order, as in real vocabularies
        tokens = [None] * 256
        for b, i in zip(range(256), byte_ids):
            tokens[i] = to_alphabet(bytes([b]))
        types = [1] * 256
        for a, b in self.merges:
            t = to_alphabet(a + b)
            if t not in tokens:
                tokens.append(t)
                types.append(1)
        self.specials = {"<|endoftext|>": 3, "<|end|>": 3, "<s>": 3, "<|user|>": 4}
        for text, ty in self.specials.items():
            tokens.append(text)
            types.append(ty)
        self.tokens, self.types = tokens, types
        self.normal_id = {t: i for i, t in enumerate(tokens) if types[i] == 1}
        self.special_id = {t: tokens.index(t) for t in self.specials}
        self.bos = self.special_id["<s>"]

    def vocab_json(self, add_bos):
        return {"tokens": self.tokens, "token_types": self.types, "pre": self.pre,
                "merges": [to_alphabet(a) + " " + to_alphabet(b) for a, b in self.merges],
                "bos_id": self.bos, "eos_id": self.special_id["<|endoftext|>"], "add_bos": add_bos}

    def encode(self, data: bytes, add_bos):
        ids = [self.bos] if add_bos else []
        alternatives = sorted(self.specials, key=len, reverse=True)
        pattern = re.compile(b"(" + b"|".join(re.escape(s.encode()) for s in alternatives) + b")")
        for k, chunk in enumerate(pattern.split(data)):
            if k % 2 == 1:
                ids.append(self.special_id[chunk.decode()])
                continue
            for piece in pre_tokenize(lenient(chunk), self.pre):
                for sym in bpe(piece, self.ranks):
                    ids.append(self.normal_id[to_alphabet(sym)])
        return ids

# --- random text ---------------------------------------------------------------------

WORDS = ("the of and to in is it you that he was for on are with as I his they be at one have "
         "this from or had by hot word but what some we can out other were all there when up use "
         "your how said an each she which do their time if will way about many then them write "
         "naïve café über straße Ελλάδα Москва 東京 서울 مرحبا नमस्ते").split()

def sentence(rng):
    out = []
    for _ in range(rng.randint(1, 14)):
        w = rng.choice(WORDS)
        r = rng.random()
        if r < 0.1:
            w = w.capitalize() + rng.choice(["'s", "'t", "'re", "'LL", "'D", "’s"])
        elif r < 0.2:
            w = str(rng.randint(0, 10 ** rng.randint(1, 7)))
        elif r < 0.3:
            w += rng.choice([",", ".", "!", "?!", "...", ")", ":"])
        out.append(w)
    text = ""
    for w in out:
        text += w + rng.choice([" ", " ", " ", "  ", "\n", "\t", " \n\n", "\r\n", "\u00a0", "\u3000"])
    return text.encode()

BLOCKS = [(0x20, 0x7E), (0xA0, 0xFF), (0x391, 0x3C9), (0x410, 0x44F), (0x621, 0x64A), (0x660, 0x669),
          (0x905, 0x939), (0x966, 0x96F), (0x4E00, 0x4FFF), (0xAC00, 0xACFF), (0x1F600, 0x1F64F),
          (0x09, 0x0A), (0x2000, 0x200B), (0xFF10, 0xFF19), (0x2160, 0x2188)]

def utf8_text(rng, n):
    chars = []
    for _ in range(n):
        lo, hi = rng.choice(BLOCKS)
        chars.append(chr(rng.randint(lo, hi)))
    return "".join(chars).encode()

def random_bytes(rng, n):
    return bytes(rng.choice([rng.randrange(256), 0x20, 0x27, 0x0A, 0x73, 0xC3, 0xE6, 0x80])
                 for _ in range(n))

def samples(seed):
    rng = random.Random(seed)
    out = [b"", b" ", b"\n\n", b"hello world", b"I'm here, you're there; it'LL be 1234567 o'clock",
           b"<|endoftext|>", b"a<|end|>b<|endoftext|><s><|user|>c<|en", b"\xff\xfe\x80abc \xe6\x9d",
           "  leading and trailing  \t\n".encode()]
    out += [sentence(rng) for _ in range(150)]
    out += [utf8_text(rng, rng.randint(1, 40)) for _ in range(120)]
    out += [random_bytes(rng, rng.randint(1, 60)) for _ in range(120)]
    out += [sentence(rng) + rng.choice([b"<|endoftext|>", b"<s>", b"<|user|>"]) + sentence(rng) for _ in range(30)]
    return out

# --- the tests -----------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def reference(pre, seed):
    return Reference(pre, seed)

def run_batch(vocab_path, lines, *flags):
    r = subprocess.run([SQ, "tokenize", "--vocab", str(vocab_path), "--batch", *flags],
                       input="".join(l + "\n" for l in lines), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout.split("\n")
    assert out[-1] == ""
    return out[:-1]

@pytest.mark.parametrize("pre", ["gpt2", "llama-bpe", "qwen2"])
@pytest.mark.parametrize("add_bos", [False, True])
def test_encode_matches_reference_and_round_trips(tmp_path, pre, add_bos):
    ref = reference(pre, seed=len(pre))
    assert len(ref.merges) == 250
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps(ref.vocab_json(add_bos)))
    texts = samples(seed=len(pre) + add_bos)
    got = run_batch(vocab, [t.hex() for t in texts])
    assert len(got) == len(texts)
    merged_somewhere = False
    for text, line in zip(texts, got):
        ids = [int(x) for x in line.split()]
        want = ref.encode(text, add_bos)
        assert ids == want, f"{pre}: {text!r}"
        merged_somewhere |= any(i >= 256 and ref.types[i] == 1 for i in ids)
    assert merged_somewhere
    # Decoding gives back every input byte for byte (BOS renders as its text), invalid
    # UTF-8 as it was read.
    decoded = run_batch(vocab, got, "--decode")
    for text, hx in zip(texts, decoded):
        assert bytes.fromhex(hx) == (b"<s>" if add_bos else b"") + lenient(text)
    decoded = run_batch(vocab, got, "--decode", "--no-render-control")
    for text, hx in zip(texts, decoded):
        assert bytes.fromhex(hx) == re.sub(b"<\\|endoftext\\|>|<\\|end\\|>|<s>", b"", lenient(text))
    assert any(lenient(t) != t for t in texts)  # invalid UTF-8 was among the inputs

def test_plain_cli_modes(tmp_path):
    ref = reference("gpt2", seed=3)
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps(ref.vocab_json(False)))
    r = subprocess.run([SQ, "tokenize", "--vocab", str(vocab), "-p", "the cat<|endoftext|>"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ids = [int(x) for x in r.stdout.split()]
    assert ids == ref.encode(b"the cat<|endoftext|>", False)
    r = subprocess.run([SQ, "tokenize", "--vocab", str(vocab), "--decode", "-p", " ".join(map(str, ids))],
                       capture_output=True)
    assert r.stdout == b"the cat<|endoftext|>"

@pytest.mark.parametrize("content,needle", [
    ("{", "vocab.json"), ("[]", "JSON object"), ('{"merges": []}', "tokens"),
    ('{"tokens": ["a"], "pre": "nope"}', "nope"), ('{"tokens": ["a"], "merges": ["a"]}', "merge 0"),
    ('{"tokens": ["a"], "bos_id": 5}', "BOS"),
])
def test_bad_vocabularies_are_one_line_errors(tmp_path, content, needle):
    vocab = tmp_path / "vocab.json"
    vocab.write_text(content)
    r = subprocess.run([SQ, "tokenize", "--vocab", str(vocab), "-p", "x"], capture_output=True, text=True)
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1
    assert needle in r.stderr

def test_bad_ids_and_hex_are_errors(tmp_path):
    ref = reference("gpt2", seed=3)
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps(ref.vocab_json(False)))
    for args, stdin in [(["--batch"], "zz\n"), (["--batch", "--decode"], "1 x\n"),
                        (["--batch", "--decode"], f"{len(ref.tokens)}\n")]:
        r = subprocess.run([SQ, "tokenize", "--vocab", str(vocab), *args], input=stdin,
                           capture_output=True, text=True)
        assert r.returncode == 1, args
        assert len(r.stderr.strip().splitlines()) == 1
