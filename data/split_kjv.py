#!/usr/bin/env python3
"""data/split_kjv.py — splits `bible -f` output (one "BookC:V text" line per verse) by book.

Whole books are held out so that validation and test text is never seen in training,
not even as a neighbouring verse: test = Ruth, Jonah, Philippians, James; validation =
Esther, Micah, Colossians, Jude; every other book trains. Verse references are dropped
(the text alone is the corpus); verses of one book are joined with newlines and books
are separated by a blank line."""
import pathlib
import re
import sys

TEST = {"Ruth", "Jonah", "Phi", "Jas"}
VALID = {"Est", "Mic", "Col", "Jude"}

out = pathlib.Path(sys.argv[1])
books = {}
order = []
for line in sys.stdin:
    m = re.match(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$", line.rstrip("\n"))
    if not m:
        continue
    book = m.group(1)
    if book not in books:
        books[book] = []
        order.append(book)
    books[book].append(m.group(4))
missing = (TEST | VALID) - set(books)
if missing:
    sys.exit(f"split_kjv: books not found in the input: {sorted(missing)}")
parts = {"train": [], "valid": [], "test": []}
for book in order:
    part = "test" if book in TEST else "valid" if book in VALID else "train"
    parts[part].append("\n".join(books[book]))
for name, texts in parts.items():
    (out / f"{name}.txt").write_text("\n\n".join(texts) + "\n")
print(f"{len(order)} books: " + ", ".join(f"{k} {len(v)}" for k, v in parts.items()), file=sys.stderr)
