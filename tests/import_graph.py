#!/usr/bin/env python3
"""The file-level import graph of the Rust sources, from the code's own paths.

Every `use` tree and every `crate::`, `super::` and `self::` path in a file (and a path that
starts with one of its child modules) is resolved to the module file it names (the longest
prefix that is a module of the same crate); an edge goes from the file to that module's file. A
module's `mod child;` declaration is not an import, but its `pub use child::Item` is.

Checks (exit 1 and a list when one fails):
  * no import cycle: no two files reach each other (strongly connected components of one file);
  * layering, top to bottom (docs/design.md, "Layout"): the callbacks (src/am/ but am/shared),
    what both methods share (src/am/shared/), the page stores (src/stores/), then the type and
    the FFI guards (src/opclass/, src/types/, src/storage/, src/fmgr.rs, src/out_of_memory.rs).
    No file imports one of a layer above its own. (The crates cannot import the extension.)

    python3 tests/import_graph.py            # check
    python3 tests/import_graph.py --cycles   # list every cycle's files, even when checking fails
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The extension's layers, top (0) to bottom; files outside them (lib.rs, the pg_test modules)
# are not ranked.
LAYERS = [
    ("src/am/shared/", 1),
    ("src/am/", 0),
    ("src/stores/", 2),
    ("src/opclass/", 3),
    ("src/types/", 3),
    ("src/storage/", 3),
    ("src/fmgr.rs", 3),
    ("src/out_of_memory.rs", 3),
]


def layer(path: str) -> int | None:
    for prefix, rank in LAYERS:
        if path.startswith(prefix):
            return rank
    return None


def crates() -> list[Path]:
    """Source roots: the extension's src/ and each crate's src/."""
    roots = [ROOT / "src"]
    roots += sorted(p / "src" for p in (ROOT / "crates").iterdir() if (p / "src").is_dir())
    return roots


def strip(text: str) -> str:
    """Code without comments, string and char literals (kept as blanks)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == '"' or (c == "r" and re.match(r'r#*"', text[i:i + 10]) and not text[i - 1:i].isalnum()):
            m = re.match(r'r(#*)"', text[i:])
            if m:
                end = text.find('"' + m.group(1), i + len(m.group(0)))
                i = n if end < 0 else end + 1 + len(m.group(1))
            else:
                i += 1
                while i < n and text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
                i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            i += len(re.match(r"'(\\[^']*|[^\\'])'", text[i:]).group(0))
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def use_paths(tree: str, prefix: list[str]) -> list[list[str]]:
    """The full paths of a use tree such as `a::{b, c::{d, e as f}, self}`."""
    tree = tree.strip()
    if not tree:
        return []
    # split top-level on '::' up to a brace group
    m = re.match(r"^((?:[\w]+\s*::\s*)*)\{(.*)\}$", tree, re.S)
    if m:
        head = [s.strip() for s in m.group(1).split("::") if s.strip()]
        body, parts, depth, cur = m.group(2), [], 0, ""
        for ch in body:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        out = []
        for p in parts:
            out += use_paths(p, prefix + head)
        return out
    path = re.sub(r"\s+as\s+\w+$", "", tree)
    segs = [s.strip() for s in path.split("::") if s.strip()]
    if segs and segs[-1] in ("self", "*"):
        segs = segs[:-1]
    return [prefix + segs]


def inline_modules(code: str):
    """A function of a position in `code`: the names of the inline modules (`mod name { ... }`)
    it lies in, outermost first."""
    spans = []
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{", code):
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        spans.append((m.end(), i, m.group(1)))
    return lambda pos: [name for start, end, name in spans if start <= pos < end]


def module_files(root: Path) -> dict[tuple[str, ...], Path]:
    mods: dict[tuple[str, ...], Path] = {}
    for f in root.rglob("*.rs"):
        rel = f.relative_to(root).with_suffix("").parts
        if rel in (("lib",), ("main",)):
            mods[()] = f
        elif rel[-1] == "mod":
            mods[tuple(rel[:-1])] = f
        else:
            mods[tuple(rel)] = f
    return mods


def graph() -> dict[Path, set[Path]]:
    edges: dict[Path, set[Path]] = {}
    for root in crates():
        mods = module_files(root)
        by_file = {f: m for m, f in mods.items()}
        for f, mod in by_file.items():
            code = strip(f.read_text())
            inline = inline_modules(code)
            # (path, the module path it is written in): a file's own module path, deeper inside
            # an inline `mod name { ... }`; for super:: and self::
            paths: list[tuple[list[str], list[str]]] = []
            for m in re.finditer(r"\buse\s+([^;]+);", code):
                where = list(mod) + inline(m.start())
                paths += [(p, where) for p in use_paths(m.group(1), [])]
            for m in re.finditer(r"\b(?:crate|super|self)(?:\s*::\s*\w+)+", code):
                where = list(mod) + inline(m.start())
                paths.append(([s.strip() for s in m.group(0).split("::")], where))
            targets: set[Path] = set()
            for p, here in paths:
                if not p:
                    continue
                if p[0] == "crate":
                    full = p[1:]
                elif p[0] in ("super", "self"):
                    base = here[:]
                    segs = p[:]
                    while segs and segs[0] in ("super", "self"):
                        if segs[0] == "super":
                            base = base[:-1]
                        segs = segs[1:]
                    full = base + segs
                elif tuple(here + [p[0]]) in mods:
                    full = here + p  # a child module, by its relative path
                else:
                    continue  # another crate, std, or a name in scope
                for k in range(len(full), -1, -1):
                    target = mods.get(tuple(full[:k]))
                    if target is not None:
                        break
                if target is None or target == f:
                    continue
                # a path through an ancestor module to one of its items is an import of it,
                # but naming only the crate root (`crate::`) to reach a sibling is not
                if tuple(full[:k]) == () and len(full) > 0 and mods.get((full[0],)) is None:
                    targets.add(target)
                elif tuple(full[:k]) != ():
                    targets.add(target)
            edges[f] = targets
    return edges


def cycles(edges: dict[Path, set[Path]]) -> list[list[Path]]:
    """Strongly connected components of more than one file (Tarjan)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    out: list[list[Path]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def main() -> int:
    edges = graph()
    rel = lambda p: str(p.relative_to(ROOT))  # noqa: E731
    problems = []
    for comp in cycles(edges):
        problems.append("import cycle: " + " <-> ".join(rel(p) for p in comp))
        for a in comp:
            for b in sorted(edges[a]):
                if b in comp:
                    problems.append(f"    {rel(a)} -> {rel(b)}")
    for a, targets in sorted(edges.items()):
        for b in sorted(targets):
            la, lb = layer(rel(a)), layer(rel(b))
            if la is not None and lb is not None and lb < la:
                problems.append(f"upward import: {rel(a)} -> {rel(b)}")
    files = len(edges)
    n_edges = sum(len(t) for t in edges.values())
    if problems:
        print("\n".join(problems))
        print(f"{files} files, {n_edges} imports")
        return 1
    print(f"import graph: {files} files, {n_edges} imports, no cycle, no upward import")
    return 0


if __name__ == "__main__":
    sys.exit(main())
