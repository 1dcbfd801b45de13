"""Users reach the extension through pgvector-python (the `pgvector` package on PyPI) with
psycopg 3, SQLAlchemy and Django. Through each of them this script creates the extension's
four types in a table, inserts rows (psycopg: text and binary parameters and a binary COPY),
reads them back unchanged, builds the hnsw and ivfflat indexes the libraries' own helpers
declare, and checks that each index answers the libraries' distance queries with the exact
nearest rows (ivfflat at probes = lists, hnsw at an ef_search above the row count on a small
table), compared by distance with a brute force computed here in Python.

Run by tests/clients/run.sh with the connection in the usual libpq variables
(PGHOST, PGPORT, PGUSER, PGDATABASE). Prints one line per check; exits non-zero on the first
failure.
"""

from __future__ import annotations

import math
import os
import random
import sys

import psycopg
from pgvector import Bit, HalfVector, SparseVector, Vector
from pgvector.psycopg import register_vector

ROWS = 300
DIM = 3
K = 5
LISTS = 10
rng = random.Random(11)


def conninfo() -> str:
    return (f"host={os.environ['PGHOST']} port={os.environ['PGPORT']} "
            f"user={os.environ.get('PGUSER', 'postgres')} "
            f"dbname={os.environ.get('PGDATABASE', 'postgres')}")


checks = 0


def check(cond: bool, what: str) -> None:
    global checks
    if not cond:
        print(f"FAIL: {what}")
        sys.exit(1)
    checks += 1


def rand_vec() -> list[float]:
    return [round(rng.uniform(-1, 1), 4) for _ in range(DIM)]


def rand_bits(n: int = 8) -> str:
    return "".join(rng.choice("01") for _ in range(n))


def l2(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def neg_ip(a, b):
    return -sum(x * y for x, y in zip(a, b))


def cosine(a, b):
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return 1 - sum(x * y for x, y in zip(a, b)) / (na * nb)


def l1(a, b):
    return sum(abs(x - y) for x, y in zip(a, b))


def hamming(a: str, b: str):
    return sum(x != y for x, y in zip(a, b))


def jaccard(a: str, b: str):
    both = sum(x == y == "1" for x, y in zip(a, b))
    either = sum(x == "1" or y == "1" for x, y in zip(a, b))
    return 1 - both / either if either else 0.0


def same_distances(got: list[float], rows: list, query, fn, what: str, tol: float = 1e-3) -> None:
    """The index's top-K distances are the K smallest of the brute force (ties need not
    come out in one order, so distances are compared, not ids)."""
    want = sorted(fn(r, query) for r in rows)[:K]
    ok = len(got) == K and all(abs(g - w) <= tol * max(1.0, abs(w)) for g, w in zip(got, want))
    check(ok, f"{what}: index distances {got} != brute force {want}")


def plan_uses(cur, sql: str, params, index: str, what: str) -> None:
    cur.execute("EXPLAIN (COSTS OFF) " + sql, params)
    plan = "\n".join(r[0] for r in cur.fetchall())
    check(f"Index Scan using {index}" in plan, f"{what}: {index} not used:\n{plan}")


def exact_settings(cur) -> None:
    cur.execute(f"SET ivfflat.probes = {LISTS}")
    cur.execute("SET hnsw.ef_search = 1000")
    cur.execute("SET enable_seqscan = off")


# ------------------------------------------------------------------------------------------
# psycopg 3


def test_psycopg() -> None:
    vecs = [rand_vec() for _ in range(ROWS)]
    bits = [rand_bits() for _ in range(ROWS)]
    with psycopg.connect(conninfo(), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        conn.execute("DROP TABLE IF EXISTS py_items")
        conn.execute("CREATE TABLE py_items (id int PRIMARY KEY, v vector(3), h halfvec(3), "
                     "b bit(8), s sparsevec(3))")
        half = len(vecs) // 2
        with conn.cursor() as cur:
            for i in range(half):
                v = vecs[i]
                cur.execute("INSERT INTO py_items VALUES (%s, %s, %s, %s, %s)",
                            (i, Vector(v), HalfVector(v), Bit(bits[i]), SparseVector(v)),
                            binary=(i % 2 == 0))
        with conn.cursor().copy("COPY py_items (id, v, h, b, s) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "vector", "halfvec", "bit", "sparsevec"])
            for i in range(half, ROWS):
                v = vecs[i]
                copy.write_row((i, Vector(v), HalfVector(v), Bit(bits[i]), SparseVector(v)))
        with conn.cursor() as cur:
            for binary in (False, True):
                cur.execute("SELECT id, v, h, b, s FROM py_items ORDER BY id", binary=binary)
                rows = cur.fetchall()
                check(len(rows) == ROWS, f"psycopg: {len(rows)} rows back")
                bad = [r[0] for r in rows
                       if [round(x, 4) for x in to_list(r[1])] != vecs[r[0]]
                       or any(abs(x - y) > 1e-3 for x, y in zip(to_list(r[2]), vecs[r[0]]))
                       or bit_text(r[3]) != bits[r[0]]
                       or any(abs(x - y) > 1e-6 for x, y in zip(r[4].to_list(), vecs[r[0]]))]
                check(not bad, f"psycopg (binary={binary}): rows {bad[:5]} changed")
            cur.execute("SELECT avg(v), sum(v) FROM py_items")
            avg, total = cur.fetchone()
            want = [sum(v[d] for v in vecs) / ROWS for d in range(DIM)]
            check(all(abs(a - w) < 1e-4 for a, w in zip(to_list(avg), want)), "psycopg: avg(v)")
            check(all(abs(a - w * ROWS) < 1e-2 for a, w in zip(to_list(total), want)), "psycopg: sum(v)")

            indexes = [
                ("py_v_l2", "hnsw", "v vector_l2_ops", "v", "<->", Vector, l2),
                ("py_v_ip", "ivfflat", "v vector_ip_ops", "v", "<#>", Vector, neg_ip),
                ("py_v_cos", "hnsw", "v vector_cosine_ops", "v", "<=>", Vector, cosine),
                ("py_v_l1", "hnsw", "v vector_l1_ops", "v", "<+>", Vector, l1),
                ("py_h_l2", "ivfflat", "h halfvec_l2_ops", "h", "<->", HalfVector, l2),
                ("py_s_l2", "hnsw", "s sparsevec_l2_ops", "s", "<->", SparseVector, l2),
            ]
            exact_settings(cur)
            for name, am, key, col, op, wrap, fn in indexes:
                opts = f"WITH (lists = {LISTS})" if am == "ivfflat" else ""
                cur.execute(f"CREATE INDEX {name} ON py_items USING {am} ({key}) {opts}")
                for _ in range(10):
                    q = rand_vec()
                    sql = f"SELECT {col} {op} %s FROM py_items ORDER BY {col} {op} %s LIMIT {K}"
                    params = (wrap(q), wrap(q))
                    plan_uses(cur, sql, params, name, f"psycopg {name}")
                    cur.execute(sql, params)
                    same_distances([r[0] for r in cur.fetchall()], vecs, q, fn, f"psycopg {name}")
                cur.execute(f"DROP INDEX {name}")
            for name, am, key, op, fn in [("py_b_ham", "ivfflat", "b bit_hamming_ops", "<~>", hamming),
                                          ("py_b_jac", "hnsw", "b bit_jaccard_ops", "<%%>", jaccard)]:
                opts = "WITH (lists = 4)" if am == "ivfflat" else ""
                cur.execute(f"CREATE INDEX {name} ON py_items USING {am} ({key}) {opts}")
                cur.execute("SET ivfflat.probes = 4")
                for _ in range(10):
                    q = rand_bits()
                    sql = f"SELECT b {op} %s FROM py_items ORDER BY b {op} %s LIMIT {K}"
                    plan_uses(cur, sql, (Bit(q), Bit(q)), name, f"psycopg {name}")
                    cur.execute(sql, (Bit(q), Bit(q)))
                    same_distances([r[0] for r in cur.fetchall()], bits, q, fn, f"psycopg {name}")
                cur.execute(f"DROP INDEX {name}")
    print(f"psycopg: ok ({checks} checks so far)")


def to_list(value) -> list[float]:
    if isinstance(value, list):
        return value
    return value.tolist() if hasattr(value, "tolist") else value.to_list()


def bit_text(value) -> str:
    """bit comes back as text, or in binary as psycopg's raw bytes (bit count, then bits)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Bit.from_binary(bytes(value)).to_text()
    return value.to_text()


# ------------------------------------------------------------------------------------------
# SQLAlchemy


def explain(session, engine, stmt) -> str:
    """EXPLAIN of a statement as SQLAlchemy sends it (its parameters through the column
    types' own bind processors)."""
    compiled = stmt.compile(engine)
    params = {}
    for name, value in compiled.params.items():
        process = compiled.binds[name].type._cached_bind_processor(engine.dialect)
        params[name] = process(value) if process else value
    rows = session.connection().exec_driver_sql(f"EXPLAIN (COSTS OFF) {compiled}", params)
    return "\n".join(r[0] for r in rows)


def test_sqlalchemy() -> None:
    from sqlalchemy import URL, Index, Integer, create_engine, select, text
    from sqlalchemy.orm import DeclarativeBase, Session, mapped_column
    from pgvector.sqlalchemy import BIT, HALFVEC, SPARSEVEC, VECTOR, avg

    class Base(DeclarativeBase):
        pass

    class Item(Base):
        __tablename__ = "sa_items"
        id = mapped_column(Integer, primary_key=True)
        v = mapped_column(VECTOR(DIM))
        h = mapped_column(HALFVEC(DIM))
        b = mapped_column(BIT(8))
        s = mapped_column(SPARSEVEC(DIM))
        __table_args__ = (
            Index("sa_v_hnsw", "v", postgresql_using="hnsw",
                  postgresql_with={"m": 16, "ef_construction": 64},
                  postgresql_ops={"v": "vector_l2_ops"}),
            Index("sa_h_ivfflat", "h", postgresql_using="ivfflat",
                  postgresql_with={"lists": LISTS}, postgresql_ops={"h": "halfvec_cosine_ops"}),
            Index("sa_b_ivfflat", "b", postgresql_using="ivfflat",
                  postgresql_with={"lists": 4}, postgresql_ops={"b": "bit_hamming_ops"}),
            Index("sa_s_hnsw", "s", postgresql_using="hnsw",
                  postgresql_ops={"s": "sparsevec_ip_ops"}),
        )

    engine = create_engine(URL.create(
        "postgresql+psycopg", username=os.environ.get("PGUSER", "postgres"),
        host=os.environ["PGHOST"], port=int(os.environ["PGPORT"]),
        database=os.environ.get("PGDATABASE", "postgres")))
    with engine.begin() as conn:
        conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        conn.execute(text("DROP TABLE IF EXISTS sa_items"))
    Base.metadata.create_all(engine)
    vecs = [rand_vec() for _ in range(ROWS)]
    bits = [rand_bits() for _ in range(ROWS)]
    with Session(engine) as session:
        session.add_all(Item(id=i, v=v, h=v, b=bits[i], s=SparseVector(v))
                        for i, v in enumerate(vecs))
        session.commit()
        back = {i.id: i for i in session.scalars(select(Item))}
        check(len(back) == ROWS, "sqlalchemy: rows back")
        check(all([round(x, 4) for x in to_list(back[i].v)] == vecs[i] for i in back),
              "sqlalchemy: vectors changed")
        got = to_list(session.scalars(select(avg(Item.v))).first())
        want = [sum(v[d] for v in vecs) / ROWS for d in range(DIM)]
        check(all(abs(a - w) < 1e-4 for a, w in zip(got, want)), "sqlalchemy: avg")
        for setting in (f"SET ivfflat.probes = {LISTS}", "SET hnsw.ef_search = 1000",
                        "SET enable_seqscan = off"):
            session.execute(text(setting))
        cases = [
            ("sa_v_hnsw", lambda q: Item.v.l2_distance(q), lambda: rand_vec(), vecs, l2),
            ("sa_h_ivfflat", lambda q: Item.h.cosine_distance(q), lambda: rand_vec(), vecs, cosine),
            ("sa_b_ivfflat", lambda q: Item.b.hamming_distance(q), lambda: rand_bits(), bits, hamming),
            ("sa_s_hnsw", lambda q: Item.s.max_inner_product(SparseVector(q)), lambda: rand_vec(),
             vecs, neg_ip),
        ]
        for name, dist, make, rows, fn in cases:
            session.execute(text("SET ivfflat.probes = 4" if name == "sa_b_ivfflat"
                                 else f"SET ivfflat.probes = {LISTS}"))
            for _ in range(10):
                q = make()
                stmt = select(dist(q)).order_by(dist(q)).limit(K)
                plan = explain(session, engine, stmt)
                check(f"Index Scan using {name}" in plan, f"sqlalchemy {name} not used:\n{plan}")
                same_distances(list(session.scalars(stmt)), rows, q, fn, f"sqlalchemy {name}")
    engine.dispose()
    print(f"sqlalchemy: ok ({checks} checks so far)")


# ------------------------------------------------------------------------------------------
# Django


def test_django() -> None:
    import django
    from django.conf import settings

    settings.configure(
        DATABASES={"default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("PGDATABASE", "postgres"),
            "USER": os.environ.get("PGUSER", "postgres"),
            "HOST": os.environ["PGHOST"],
            "PORT": os.environ["PGPORT"],
        }},
        INSTALLED_APPS=["pgvector.django"],
        USE_TZ=True,
    )
    django.setup()
    from django.db import connection, models
    from pgvector.django import (BitField, CosineDistance, HalfVectorField, HammingDistance,
                                 HnswIndex, IvfflatIndex, L2Distance, MaxInnerProduct,
                                 SparseVectorField, VectorField)

    class DjItem(models.Model):
        v = VectorField(dimensions=DIM)
        h = HalfVectorField(dimensions=DIM)
        b = BitField(length=8)
        s = SparseVectorField(dimensions=DIM)

        class Meta:
            app_label = "django_clients"
            db_table = "dj_items"
            indexes = [
                IvfflatIndex(name="dj_v_ivfflat", fields=["v"], lists=LISTS,
                             opclasses=["vector_l2_ops"]),
                HnswIndex(name="dj_h_hnsw", fields=["h"], m=16, ef_construction=64,
                          opclasses=["halfvec_ip_ops"]),
                IvfflatIndex(name="dj_b_ivfflat", fields=["b"], lists=4,
                             opclasses=["bit_hamming_ops"]),
                HnswIndex(name="dj_s_hnsw", fields=["s"], opclasses=["sparsevec_cosine_ops"]),
            ]

    with connection.cursor() as cur:
        cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
        cur.execute("DROP TABLE IF EXISTS dj_items")
    with connection.schema_editor() as editor:
        editor.create_model(DjItem)
    vecs = [rand_vec() for _ in range(ROWS)]
    bits = [rand_bits() for _ in range(ROWS)]
    DjItem.objects.bulk_create(DjItem(id=i + 1, v=v, h=v, b=bits[i], s=SparseVector(v))
                               for i, v in enumerate(vecs))
    back = {o.id: o for o in DjItem.objects.all()}
    check(len(back) == ROWS, "django: rows back")
    check(all([round(x, 4) for x in to_list(back[i + 1].v)] == vecs[i] for i in range(ROWS)),
          "django: vectors changed")
    cases = [
        ("dj_v_ivfflat", "v", L2Distance, lambda q: q, rand_vec, vecs, l2),
        ("dj_h_hnsw", "h", MaxInnerProduct, lambda q: HalfVector(q), rand_vec, vecs, neg_ip),
        ("dj_b_ivfflat", "b", HammingDistance, lambda q: q, rand_bits, bits, hamming),
        ("dj_s_hnsw", "s", CosineDistance, lambda q: SparseVector(q), rand_vec, vecs, cosine),
    ]
    with connection.cursor() as cur:
        cur.execute("SET hnsw.ef_search = 1000")
        cur.execute("SET enable_seqscan = off")
        for name, field, dist, wrap, make, rows, fn in cases:
            cur.execute("SET ivfflat.probes = 4" if name == "dj_b_ivfflat"
                        else f"SET ivfflat.probes = {LISTS}")
            for _ in range(10):
                q = make()
                qs = DjItem.objects.annotate(d=dist(field, wrap(q))).order_by("d")[:K]
                plan = qs.explain()
                check(f"Index Scan using {name}" in plan, f"django {name} not used:\n{plan}")
                same_distances([o.d for o in qs], rows, q, fn, f"django {name}")
    print(f"django: ok ({checks} checks so far)")


if __name__ == "__main__":
    test_psycopg()
    test_sqlalchemy()
    test_django()
    print(f"pgvector-python clients: {checks} checks passed")
