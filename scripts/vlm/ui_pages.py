"""scripts/vlm/ui_pages.py — generated UI screenshots with their tasks, rendered by headless
Chromium (Debian's package, driven over the DevTools protocol with tests/python/cdp_util.py;
nothing downloads a browser).

A page is a small application window: a title bar, a menu bar, buttons with labels, and
either a dialog with a message and an OK button or a group of checkboxes with exactly one
checked. Fonts (the DejaVu families), sizes, colours and positions vary. Every element is
placed at absolute pixel coordinates, so its box is known without asking the browser.

Tasks per page, each a (question, answer) pair:
  click    "Click the Save button."          -> "click(x, y)" (the button's centre; correct
                                                 when the answer's point lies inside its box)
  dialog   "What does the dialog say?"       -> the message, exactly
  checkbox "Which checkbox is checked?"      -> its label, exactly
"""
import base64
import html
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "python"))
import cdp_util  # noqa: E402

WIDTH, HEIGHT = 280, 196  # 10 x 7 cells of 28 pixels: 70 image tokens, no resampling

BUTTONS = ["Save", "Cancel", "Open", "Close", "Print", "Delete", "Help", "Next", "Back", "Apply", "Send", "Edit",
           "Copy", "Paste", "Undo", "Find", "Share", "Reset"]
MESSAGES = ["File saved", "Disk is full", "Update ready", "No network", "Print done", "Wrong password",
            "Sync failed", "Upload complete", "Low battery", "New message", "Access denied", "Changes lost",
            "Try again", "Out of memory", "Task finished", "Not found"]
CHECKS = ["Bold", "Italic", "Wrap", "Sync", "Email", "Alerts", "Dark", "Sound", "Grid", "Lock", "Auto", "Share"]
TITLES = ["Editor", "Settings", "Mail", "Files", "Notes", "Photos", "Music", "Tasks"]
MENUS = [["File", "Edit", "View"], ["File", "Edit", "Help"], ["App", "Tools", "Help"], ["File", "View", "Go"]]
FONTS = ["DejaVu Sans", "DejaVu Serif", "DejaVu Sans Mono", "DejaVu Sans Condensed"]
BACKS = ["#f4f4f4", "#ffffff", "#eef2f7", "#f7f3ea", "#e9f0e9", "#fbeff2"]
BUTTON_COLOURS = [("#dddddd", "#000"), ("#2d6cdf", "#fff"), ("#e8e8e8", "#222"), ("#3c8d40", "#fff"),
                  ("#c0392b", "#fff"), ("#fafafa", "#111")]

QUESTIONS = {
    "click": "Click the {label} button.",
    "dialog": "What does the dialog say?",
    "checkbox": "Which checkbox is checked?",
}


def _overlaps(a, b, gap=4):
    return not (a[0] + a[2] + gap <= b[0] or b[0] + b[2] + gap <= a[0] or a[1] + a[3] + gap <= b[1] or
                b[1] + b[3] + gap <= a[1])


def click_answer(box):
    """The answer to a click question on the element with this box: its centre."""
    return f"click({box[0] + box[2] // 2}, {box[1] + box[3] // 2})"


def _text_width(text, size, font):
    per = 0.62 if "Mono" in font else 0.55 if "Condensed" in font else 0.6
    return int(len(text) * size * per) + 2


def make_page(rng, width=WIDTH, height=HEIGHT, buttons=(2, 4)):
    """(html, elements, tasks), with buttons[0] to buttons[1] buttons (fewer where they do not
    fit). elements: every text and control on the page as dicts with kind
    (title, menu, button, dialog, message, checkbox, label), label and box (x, y, w, h); a text's
    box is estimated from its font size (the reading pretraining's targets need no more)."""
    font = rng.choice(FONTS)
    size = rng.randint(13, 16)
    back = rng.choice(BACKS)
    title = rng.choice(TITLES)
    parts = [f'<div style="position:absolute;left:0;top:0;width:{width}px;height:22px;background:#3a3f4b;color:#fff;'
             f'font:bold 13px \'{font}\';line-height:22px;padding-left:8px">{html.escape(title)}</div>']
    elements, tasks = [{"kind": "title", "label": title, "box": (8, 4, _text_width(title, 13, font), 15)}], []
    x = 6
    for m in rng.choice(MENUS):
        parts.append(f'<div style="position:absolute;left:{x}px;top:24px;font:12px \'{font}\';color:#333">{m}</div>')
        elements.append({"kind": "menu", "label": m, "box": (x, 25, _text_width(m, 12, font), 13)})
        x += _text_width(m, 12, font) + 12
    taken = [(0, 0, width, 40)]

    def place(w, h, area=(4, 42, width - 4, height - 4)):
        for _ in range(200):
            bx = rng.randint(area[0], area[2] - w)
            by = rng.randint(area[1], area[3] - h)
            box = (bx, by, w, h)
            if not any(_overlaps(box, t) for t in taken):
                taken.append(box)
                return box
        return None

    kind = rng.choice(["dialog", "checkbox"])
    if kind == "dialog":
        message = rng.choice(MESSAGES)
        w = max(_text_width(message, size, font) + 24, 120)
        box = place(w, 64)
        if box:
            bx, by, bw, bh = box
            parts.append(f'<div style="position:absolute;left:{bx}px;top:{by}px;width:{bw - 2}px;height:{bh - 2}px;'
                         f'background:#fff;border:1px solid #888;box-shadow:2px 2px 4px #999"></div>')
            parts.append(f'<div style="position:absolute;left:{bx}px;top:{by + 8}px;width:{bw}px;text-align:center;'
                         f'font:{size}px \'{font}\';color:#000">{html.escape(message)}</div>')
            parts.append(f'<div style="position:absolute;left:{bx + bw // 2 - 18}px;top:{by + 36}px;width:36px;'
                         f'height:20px;background:#ddd;border:1px solid #777;font:12px \'{font}\';text-align:center;'
                         f'line-height:20px">OK</div>')
            tw = _text_width(message, size, font)
            elements += [{"kind": "dialog", "label": None, "box": box},
                         {"kind": "message", "label": message, "box": (bx + (bw - tw) // 2, by + 9, tw, size + 2)},
                         {"kind": "button", "label": "OK", "box": (bx + bw // 2 - 18, by + 36, 36, 20)}]
            tasks.append(("dialog", QUESTIONS["dialog"], message, None))
    else:
        labels = rng.sample(CHECKS, 3)
        checked = rng.randrange(3)
        w = max(_text_width(t, size, font) for t in labels) + 26
        box = place(w, 3 * (size + 8) + 4)
        if box:
            bx, by, _, _ = box
            for i, label in enumerate(labels):
                y = by + 2 + i * (size + 8)
                mark = "&#10003;" if i == checked else ""
                parts.append(f'<div style="position:absolute;left:{bx}px;top:{y}px;width:{size}px;height:{size}px;'
                             f'border:1px solid #444;background:#fff;font:bold {size}px \'DejaVu Sans\';'
                             f'line-height:{size}px;text-align:center;color:#1a5fd0">{mark}</div>')
                parts.append(f'<div style="position:absolute;left:{bx + size + 8}px;top:{y}px;'
                             f'font:{size}px \'{font}\';color:#111;line-height:{size + 2}px">{html.escape(label)}</div>')
                elements += [{"kind": "checkbox", "label": "checked" if i == checked else "unchecked",
                              "box": (bx, y, size + 2, size + 2)},
                             {"kind": "label", "label": label,
                              "box": (bx + size + 8, y + 1, _text_width(label, size, font), size + 1)}]
            tasks.append(("checkbox", QUESTIONS["checkbox"], labels[checked], None))

    for label in rng.sample(BUTTONS, rng.randint(*buttons)):
        w, h = _text_width(label, size, font) + rng.randint(14, 24), size + rng.randint(10, 14)
        box = place(w, h)
        if not box:
            continue
        bg, fg = rng.choice(BUTTON_COLOURS)
        bx, by, bw, bh = box
        parts.append(f'<div style="position:absolute;left:{bx}px;top:{by}px;width:{bw - 2}px;height:{bh - 2}px;'
                     f'background:{bg};color:{fg};border:1px solid #666;border-radius:{rng.choice([0, 3, 6])}px;'
                     f'font:{rng.choice(["", "bold "])}{size}px \'{font}\';text-align:center;'
                     f'line-height:{bh - 2}px">{html.escape(label)}</div>')
        elements.append({"kind": "button", "label": label, "box": box})
        tasks.append(("click", QUESTIONS["click"].format(label=label), click_answer(box), box))

    page = (f'<html><body style="margin:0;width:{width}px;height:{height}px;background:{back};overflow:hidden">'
            + "".join(parts) + "</body></html>")
    return page, elements, tasks


class Renderer:
    """One headless Chromium; render(html) -> PNG bytes of width x height."""

    def __init__(self, width=WIDTH, height=HEIGHT):
        self.width, self.height = width, height
        binary = cdp_util.find_chromium()
        if binary is None:
            raise RuntimeError("no chromium on PATH (scripts/common.sh installs Debian's package)")
        self.browser = cdp_util.Browser(binary)
        self.browser.command("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                             mobile=False)

    def render(self, page):
        url = "data:text/html;base64," + base64.b64encode(page.encode()).decode()
        self.browser.goto(url)
        shot = self.browser.command("Page.captureScreenshot", format="png",
                                    clip={"x": 0, "y": 0, "width": self.width, "height": self.height, "scale": 1})
        return base64.b64decode(shot["data"])

    def close(self):
        self.browser.close()


if __name__ == "__main__":  # a few pages for a look: python3 scripts/vlm/ui_pages.py OUT_DIR
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    r = Renderer()
    rng = random.Random(1)
    for i in range(4):
        page, elements, tasks = make_page(rng)
        with open(os.path.join(out, f"page{i}.png"), "wb") as f:
            f.write(r.render(page))
        print(i, tasks)
    r.close()
