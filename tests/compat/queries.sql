-- Every operator and function over the compatibility data. Run on pgvector 0.8.6 and on our
-- library against the same data directory; the outputs must be byte-identical.
\pset format unaligned
\pset null '(null)'
SET extra_float_digits = 3;

-- vector: text and binary forms, pairwise functions, unary functions
SELECT id, v::text, v3::text, vector_dims(v), vector_norm(v), md5(vector_send(v)::text)
FROM vec ORDER BY id;
SELECT a.id, b.id, a.v <-> b.v, a.v <#> b.v, a.v <=> b.v, a.v <+> b.v,
       l2_distance(a.v, b.v), inner_product(a.v, b.v), cosine_distance(a.v, b.v), l1_distance(a.v, b.v),
       vector_l2_squared_distance(a.v, b.v), vector_negative_inner_product(a.v, b.v),
       vector_spherical_distance(l2_normalize(a.v), l2_normalize(b.v)),
       a.v < b.v, a.v <= b.v, a.v = b.v, a.v <> b.v, a.v >= b.v, a.v > b.v, vector_cmp(a.v, b.v)
FROM vec a JOIN vec b ON b.id = a.id + 17 AND vector_dims(a.v) = vector_dims(b.v) ORDER BY a.id;
SELECT a.id, (a.v + b.v)::text, (a.v - b.v)::text, (a.v * b.v)::text, (a.v || b.v)::text
FROM vec a JOIN vec b ON b.id = a.id + 17 AND vector_dims(a.v) = vector_dims(b.v)
WHERE a.id <= 3000 ORDER BY a.id;
SELECT id, l2_normalize(v)::text, binary_quantize(v)::text, subvector(v, 2, 3)::text,
       v::real[]::text, CASE WHEN id NOT IN (100004, 100005) THEN v::halfvec::text END, v::sparsevec::text, vector_to_float4(v, -1, false)::text
FROM vec WHERE id <= 3000 OR id < 100100 ORDER BY id;
SELECT id, (v3 <-> '[1,2,3]'), (v3 <=> '[0,0,0]') FROM vec WHERE v3 IS NOT NULL ORDER BY id;
SELECT avg(v3)::text, sum(v3)::text, avg(v) FILTER (WHERE vector_dims(v) = 20)::text FROM vec;
SELECT vector_dims(v), avg(v)::text, sum(v)::text FROM vec GROUP BY 1 ORDER BY 1;
SELECT id FROM vec WHERE v3 IS NOT NULL ORDER BY v3, id LIMIT 200;
SELECT ARRAY[1,2,3]::vector::text, ARRAY[1.5,2.5]::real[]::vector::text,
       ARRAY[1.25,2.5]::float8[]::vector::text, ARRAY[1.1,2.2]::numeric[]::vector::text,
       '[1,2,3]'::vector(3)::text, vector('[1,2]'::vector, 2, true)::text;

-- halfvec
SELECT id, v::text, v3::text, vector_dims(v), l2_norm(v), md5(halfvec_send(v)::text)
FROM hvec ORDER BY id;
SELECT a.id, b.id, a.v <-> b.v, a.v <#> b.v, a.v <=> b.v, a.v <+> b.v,
       l2_distance(a.v, b.v), inner_product(a.v, b.v), cosine_distance(a.v, b.v), l1_distance(a.v, b.v),
       halfvec_l2_squared_distance(a.v, b.v), halfvec_negative_inner_product(a.v, b.v),
       halfvec_spherical_distance(l2_normalize(a.v), l2_normalize(b.v)),
       a.v < b.v, a.v <= b.v, a.v = b.v, a.v <> b.v, a.v >= b.v, a.v > b.v, halfvec_cmp(a.v, b.v)
FROM hvec a JOIN hvec b ON b.id = a.id + 17 AND vector_dims(a.v) = vector_dims(b.v) ORDER BY a.id;
SELECT a.id, (a.v + b.v)::text, (a.v - b.v)::text, (a.v * b.v)::text, (a.v || b.v)::text
FROM hvec a JOIN hvec b ON b.id = a.id + 17 AND vector_dims(a.v) = vector_dims(b.v)
WHERE a.id <= 3000 ORDER BY a.id;
SELECT id, l2_normalize(v)::text, binary_quantize(v)::text, subvector(v, 2, 3)::text,
       v::real[]::text, v::vector::text, v::sparsevec::text, halfvec_to_float4(v, -1, false)::text
FROM hvec WHERE id <= 3000 OR id < 100100 ORDER BY id;
SELECT avg(v3)::text, sum(v3)::text FROM hvec;
SELECT vector_dims(v), avg(v)::text, sum(v)::text FROM hvec GROUP BY 1 ORDER BY 1;
SELECT id FROM hvec WHERE v3 IS NOT NULL ORDER BY v3, id LIMIT 200;
SELECT ARRAY[1,2,3]::halfvec::text, ARRAY[1.5,2.5]::real[]::halfvec::text,
       ARRAY[1.25,2.5]::float8[]::halfvec::text, ARRAY[1.1,2.2]::numeric[]::halfvec::text,
       '[1,2,3]'::halfvec(3)::text, halfvec('[1,2]'::halfvec, 2, true)::text;

-- sparsevec
SELECT id, v::text, v5::text, l2_norm(v), md5(sparsevec_send(v)::text) FROM svec ORDER BY id;
SELECT a.id, b.id, a.v <-> b.v, a.v <#> b.v, a.v <=> b.v, a.v <+> b.v,
       l2_distance(a.v, b.v), inner_product(a.v, b.v), cosine_distance(a.v, b.v), l1_distance(a.v, b.v),
       sparsevec_l2_squared_distance(a.v, b.v), sparsevec_negative_inner_product(a.v, b.v),
       a.v < b.v, a.v <= b.v, a.v = b.v, a.v <> b.v, a.v >= b.v, a.v > b.v, sparsevec_cmp(a.v, b.v)
FROM svec a JOIN svec b ON b.id = a.id + 1 AND a.id <= 3000 ORDER BY a.id;
SELECT id, l2_normalize(v)::text, v5::vector::text, v5::halfvec::text FROM svec ORDER BY id;
SELECT id FROM svec ORDER BY v5, id LIMIT 200;
SELECT ARRAY[1,0,3]::sparsevec::text, ARRAY[1.5,0,2.5]::real[]::sparsevec::text,
       ARRAY[0,2.5]::float8[]::sparsevec::text, ARRAY[1.1,0]::numeric[]::sparsevec::text,
       '{1:1}/3'::sparsevec(3)::text, sparsevec('{1:2}/2'::sparsevec, 2, true)::text;

-- bit
SELECT a.id, b.id, hamming_distance(a.b, b.b), jaccard_distance(a.b, b.b), a.b <~> b.b, a.b <%> b.b
FROM bits a JOIN bits b ON b.id = a.id + 1 ORDER BY a.id;
SELECT a.id, b.id, a.vb <~> b.vb, a.vb <%> b.vb
FROM bits a JOIN bits b ON b.id = a.id + 80 AND length(a.vb) = length(b.vb) ORDER BY a.id;

-- index scans (ivfflat, hnsw): the same ids in the same order
SET enable_seqscan = off;
SET ivfflat.probes = 3;
SELECT q.id, array(SELECT t.id FROM vec t ORDER BY t.v3 <-> q.v3 LIMIT 10) FROM vec q WHERE q.id % 250 = 0 ORDER BY q.id;
SELECT q.id, array(SELECT t.id FROM vec t ORDER BY t.v3 <#> q.v3 LIMIT 10) FROM vec q WHERE q.id % 250 = 0 ORDER BY q.id;
SELECT q.id, array(SELECT t.id FROM vec t ORDER BY t.v3 <=> q.v3 LIMIT 10) FROM vec q WHERE q.id % 250 = 0 ORDER BY q.id;
SELECT q.id, array(SELECT t.id FROM hvec t ORDER BY t.v3 <-> q.v3 LIMIT 10) FROM hvec q WHERE q.id % 250 = 0 ORDER BY q.id;
SELECT q.id, array(SELECT t.id FROM hvec t ORDER BY t.v3 <=> q.v3 LIMIT 10) FROM hvec q WHERE q.id % 250 = 0 ORDER BY q.id;
SELECT q.id, array(SELECT t.id FROM bits t ORDER BY t.b <~> q.b LIMIT 10) FROM bits q WHERE q.id % 200 = 0 ORDER BY q.id;
SET ivfflat.probes = 1;
SET ivfflat.iterative_scan = relaxed_order;
SELECT q.id, array(SELECT t.id FROM vec t WHERE t.id % 5 = 0 ORDER BY t.v3 <-> q.v3 LIMIT 20) FROM vec q WHERE q.id % 500 = 0 ORDER BY q.id;
RESET ivfflat.iterative_scan;
SELECT id FROM vec ORDER BY v3 <-> NULL LIMIT 5;
SELECT q.id, array(SELECT t.id FROM vec t ORDER BY t.v3 <-> q.v3 LIMIT 10) FROM vec q WHERE q.id % 300 = 0 ORDER BY q.id;
BEGIN;
DROP INDEX vec_ivf_l2;
SELECT q.id, array(SELECT t.id FROM vec t ORDER BY t.v3 <-> q.v3 LIMIT 10) FROM vec q WHERE q.id % 300 = 0 ORDER BY q.id;
ROLLBACK;
RESET enable_seqscan;
RESET ivfflat.probes;
