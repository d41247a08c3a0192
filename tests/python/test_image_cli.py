"""tests/python/test_image_cli.py — `squeeze image`: the reference's token count for a
picture, the dumped patches in the documented layout, and bad input (not an image, a
truncated or corrupt file, a declared size past the limit, a missing file, the image as
its own dump target) as a one-line error with a non-zero exit that leaves the image as it
was. The patches' values against the reference are tests/vision/test_preprocess.cpp."""
import os
import struct
import subprocess
import zlib

import numpy as np

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "vision")


def run(*args):
    return subprocess.run([SQ, "image", *map(str, args)], capture_output=True, text=True, errors="replace",
                          timeout=120)


def assert_one_line_error(r, needle):
    assert r.returncode != 0, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert needle in lines[0], r.stderr


def png(width, height, rgb_rows):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\0" + row for row in rgb_rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_sizes_tokens_and_patch_layout(tmp_path):
    # 56 x 28: exactly 2 x 1 cells, so no resampling: the patches are the pixels
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, (28, 56, 3), dtype=np.uint8)
    f = tmp_path / "screen.png"
    f.write_bytes(png(56, 28, [pixels[y].tobytes() for y in range(28)]))
    out = tmp_path / "patches.npy"
    r = run(f, "--dump-patches", out)
    assert r.returncode == 0, r.stderr
    assert "56 x 28 -> 56 x 28 pixels (lanczos), 4 x 2 patches of 14, 2 image tokens" in r.stdout
    p = np.load(out)
    assert p.shape == (8, 3 * 14 * 14)
    back = p.reshape(2, 4, 3, 14, 14).transpose(0, 3, 1, 4, 2).reshape(28, 56, 3) * 127.5 + 127.5
    assert np.abs(back - pixels).max() < 1e-3


def test_the_cap_shrinks_a_screenshot_sized_image(tmp_path):
    f = tmp_path / "wide.png"
    row = bytes(1920 * 3)
    f.write_bytes(png(1920, 1080, [row] * 1080))
    r = run(f, "--max-image-tokens", 1024)
    assert r.returncode == 0, r.stderr
    # the reference's smart_resize: 1920 x 1080 under 1024 cells of 28 px is 42 x 24 cells
    assert "1920 x 1080 -> 1176 x 672 pixels" in r.stdout and "1008 image tokens" in r.stdout, r.stdout


def test_bad_images_are_one_line_errors(tmp_path):
    good = open(os.path.join(FIX, "rgb_noise.png"), "rb").read()
    cases = {
        "notes.png": (b"just some text, not an image\n", "not a PNG or JPEG image"),
        "cut.png": (good[: len(good) // 2], "corrupt PNG"),
        "cut.jpg": (open(os.path.join(FIX, "smooth.jpg"), "rb").read()[:400], "corrupt JPEG"),
        "bomb.png": (png(100000, 100000, [])[:33], "exceeds the limit"),
        "empty.png": (b"", "not a PNG or JPEG image"),
    }
    for name, (data, needle) in cases.items():
        f = tmp_path / name
        f.write_bytes(data)
        assert_one_line_error(run(f), needle)
    assert_one_line_error(run(tmp_path / "missing.png"), "cannot open the image")
    assert_one_line_error(run(tmp_path / "cut.png", "--resample", "nearest"), "unknown resampling filter")
    assert_one_line_error(run(tmp_path / "cut.png", "--max-image-tokens", 0), "--max-image-tokens")


def test_the_image_is_never_its_own_dump(tmp_path):
    f = tmp_path / "img.png"
    data = open(os.path.join(FIX, "rgb_noise.png"), "rb").read()
    f.write_bytes(data)
    r = run(f, "--dump-patches", f)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f.read_bytes() == data


def test_encoder_runs_on_a_projector_file(tmp_path):
    mmproj = os.path.join(FIX, "encoder", "mmproj.gguf")
    out = tmp_path / "features.npy"
    r = run(os.path.join(FIX, "large.png"), "--max-image-tokens", 16, "--mmproj", mmproj, "--dump-features", out)
    assert r.returncode == 0, r.stderr
    assert "encoder: 15 image tokens x 40" in r.stdout, r.stdout
    f = np.load(out)
    assert f.shape == (15, 40) and np.isfinite(f).all()
    rms = np.sqrt((f ** 2).mean(1))  # RMS-normalised (up to the norm's epsilon), as the reference
    assert (rms > 0.98).all() and (rms <= 1.0 + 1e-6).all(), rms
    assert_one_line_error(run(os.path.join(FIX, "large.png"), "--dump-features", out), "--dump-features needs --mmproj")
    assert_one_line_error(run(os.path.join(FIX, "large.png"), "--mmproj", os.path.join(FIX, "rgb_noise.png")),
                          "not a GGUF file")
    before = open(mmproj, "rb").read()
    r = run(os.path.join(FIX, "large.png"), "--mmproj", mmproj, "--dump-features", mmproj)
    assert r.returncode != 0 and open(mmproj, "rb").read() == before


def _projector_copy(path, drop_key=None, drop_tensor=None, short_tensor=None):
    """The fixture projector rewritten with one thing wrong."""
    import gguf
    src = gguf.GGUFReader(os.path.join(FIX, "encoder", "mmproj.gguf"))
    w = gguf.GGUFWriter(str(path), "clip")
    for k, f in src.fields.items():
        if k.startswith("GGUF.") or k in ("general.architecture", drop_key):
            continue
        t = f.types[0]
        if t == gguf.GGUFValueType.STRING:
            w.add_string(k, bytes(f.parts[f.data[0]]).decode())
        elif t == gguf.GGUFValueType.ARRAY:
            w.add_array(k, [f.parts[i].tolist()[0] for i in f.data])
        elif t == gguf.GGUFValueType.BOOL:
            w.add_bool(k, bool(f.parts[f.data[0]][0]))
        elif t == gguf.GGUFValueType.UINT32:
            w.add_uint32(k, int(f.parts[f.data[0]][0]))
        elif t == gguf.GGUFValueType.FLOAT32:
            w.add_float32(k, float(f.parts[f.data[0]][0]))
    for t in src.tensors:
        if t.name == drop_tensor:
            continue
        a = np.array(t.data).reshape([int(x) for x in reversed(t.shape)])
        w.add_tensor(t.name, a[:-1] if t.name == short_tensor else a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_malformed_projectors_are_named(tmp_path):
    image = os.path.join(FIX, "large.png")
    cases = [
        (dict(drop_key="clip.vision.block_count"), "metadata key 'clip.vision.block_count' is missing"),
        (dict(drop_key="clip.projector_type"), "projector type '' is not supported"),
        (dict(drop_tensor="v.blk.2.attn_q.weight"), "missing tensor 'v.blk.2.attn_q.weight'"),
        (dict(short_tensor="mm.1.weight"), "tensor 'mm.1.weight' is [48, 47], expected [48, 48]"),
    ]
    for i, (wrong, needle) in enumerate(cases):
        f = tmp_path / f"mmproj{i}.gguf"
        _projector_copy(f, **wrong)
        assert_one_line_error(run(image, "--mmproj", f), needle)
