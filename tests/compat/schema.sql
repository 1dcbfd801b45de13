-- Data for the pgvector 0.8.6 <-> vector compatibility test, created on pristine pgvector.
-- Values come from a deterministic generator so both sides see the same rows; edge rows cover
-- zeros, signed zeros, tiny and huge magnitudes and long vectors.
CREATE EXTENSION vector;

CREATE TABLE vec (id int PRIMARY KEY, v vector, v3 vector(3));
CREATE TABLE hvec (id int PRIMARY KEY, v halfvec, v3 halfvec(3));
CREATE TABLE svec (id int PRIMARY KEY, v sparsevec, v5 sparsevec(5));
CREATE TABLE bits (id int PRIMARY KEY, b bit(64), vb varbit);

-- x_{k} in (-2, 2) from a multiplicative hash of (row, dim): reproducible, no random().
CREATE FUNCTION compat_elem(r int, k int) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT ((((r::bigint * 1103515245 + k::bigint * 12345 + 7) % 65536) + 65536) % 65536) / 16384.0 - 2.0
$$;

INSERT INTO vec (id, v, v3)
SELECT r,
       (SELECT array_agg(compat_elem(r, k) * (1 + r % 7) ORDER BY k) FROM generate_series(1, 16 + r % 17) k)::real[]::vector,
       (SELECT array_agg(compat_elem(r, k) ORDER BY k) FROM generate_series(1, 3) k)::real[]::vector(3)
FROM generate_series(1, 3000) r;

INSERT INTO vec (id, v, v3) VALUES
  (100001, '[0,0,0]', '[0,0,0]'),
  (100002, '[-0,0,-0]', '[-0,-0,-0]'),
  (100003, '[1e-45,-1e-45,1.17549435e-38]', '[3.4028235e38,-3.4028235e38,1]'),
  (100004, '[1e38,1e38,1e38]', '[-1e-38,1e-38,0.1]'),
  (100005, '[123456.789,0.000123456,-98765.4321]', '[1.5,-2.25,3.125]');
INSERT INTO vec (id, v, v3)
SELECT 100100 + d, (SELECT array_agg(compat_elem(d, k) ORDER BY k) FROM generate_series(1, d) k)::real[]::vector, NULL
FROM unnest(ARRAY[1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 127, 128, 129, 768, 1536, 2000, 16000]) d;

INSERT INTO hvec (id, v, v3)
SELECT id, v::halfvec(3), v3::halfvec(3) FROM vec WHERE vector_dims(v) = 3 AND id < 100003;
INSERT INTO hvec (id, v, v3)
SELECT r,
       (SELECT array_agg(compat_elem(r, k) * (1 + r % 5) ORDER BY k) FROM generate_series(1, 16 + r % 17) k)::real[]::halfvec,
       (SELECT array_agg(compat_elem(r, k) ORDER BY k) FROM generate_series(1, 3) k)::real[]::halfvec(3)
FROM generate_series(1, 3000) r;
INSERT INTO hvec (id, v, v3) VALUES
  (100003, '[6e-8,-6e-8,6.1e-5]', '[65504,-65504,1]'),
  (100004, '[0.1,0.2,0.3]', '[1e-4,2e-4,3e-4]');
INSERT INTO hvec (id, v, v3)
SELECT id, v::halfvec, NULL FROM vec WHERE id > 100100 AND id < 100100 + 16000;

INSERT INTO svec (id, v, v5)
SELECT r,
       ('{' || (SELECT string_agg(k || ':' || round(compat_elem(r, k)::numeric, 3), ',' ORDER BY k)
                FROM generate_series(1, 1000, 1 + r % 97) k) || '}/1000')::sparsevec,
       ('{' || (r % 5 + 1) || ':' || compat_elem(r, 1) || '}/5')::sparsevec(5)
FROM generate_series(1, 3000) r;
INSERT INTO svec (id, v, v5) VALUES
  (100001, '{}/3', '{}/5'),
  (100002, '{1:1e-45,1000000000:3e38}/1000000000', '{1:-0,5:1}/5'),
  (100003, '{1:1,2:2,3:3}/3', '{2:0.5,4:-0.5}/5');

INSERT INTO bits (id, b, vb)
SELECT r, ((((r::bigint * 2654435761) % 2147483648) << 32) | (r::bigint * 40503 % 4294967296))::bit(64),
       repeat((r % 2)::text || '1', 1 + r % 40)::varbit
FROM generate_series(1, 2000) r;
INSERT INTO bits (id, b, vb) VALUES (100001, 0::bit(64), B''), (100002, (-1)::bit(64), B'1');

-- Indexes of both access methods, built by pgvector: the swap must keep every one usable.
CREATE INDEX vec_ivf_l2 ON vec USING ivfflat (v3 vector_l2_ops) WITH (lists = 12);
CREATE INDEX vec_ivf_ip ON vec USING ivfflat (v3 vector_ip_ops) WITH (lists = 7);
CREATE INDEX vec_ivf_cos ON vec USING ivfflat (v3 vector_cosine_ops) WITH (lists = 9);
CREATE INDEX hvec_ivf_l2 ON hvec USING ivfflat (v3 halfvec_l2_ops) WITH (lists = 8);
CREATE INDEX hvec_ivf_cos ON hvec USING ivfflat (v3 halfvec_cosine_ops) WITH (lists = 5);
CREATE INDEX bits_ivf ON bits USING ivfflat (b bit_hamming_ops) WITH (lists = 6);
CREATE INDEX vec_hnsw ON vec USING hnsw (v3 vector_l2_ops);
