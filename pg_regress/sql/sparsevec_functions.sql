-- sparsevec distances, norms, normalization and their operators.

-- small cases
SELECT l2_distance('{1:3,2:4}/2'::sparsevec, '{}/2');
SELECT l2_distance('{1:1,3:2}/5'::sparsevec, '{2:1,3:2,5:-1}/5');
SELECT l2_distance('{}/3'::sparsevec, '{}/3');
SELECT l2_distance('{5:1}/5'::sparsevec, '{1:1}/5');
SELECT '{1:1,3:2}/5'::sparsevec <-> '{2:1,3:2,5:-1}/5';
SELECT sparsevec_l2_squared_distance('{1:1,3:2}/5', '{2:1,3:2,5:-1}/5');
SELECT sparsevec_l2_squared_distance('{1:3,2:4}/2', '{}/2');
SELECT inner_product('{1:1,3:2}/5'::sparsevec, '{2:1,3:2,5:-1}/5');
SELECT inner_product('{1:2}/3'::sparsevec, '{2:2}/3');
SELECT inner_product('{}/3'::sparsevec, '{1:1}/3');
SELECT sparsevec_negative_inner_product('{1:1,3:2}/5', '{2:1,3:2,5:-1}/5');
SELECT '{1:1,3:2}/5'::sparsevec <#> '{2:1,3:2,5:-1}/5';
SELECT '{1:2}/3'::sparsevec <#> '{2:2}/3';
SELECT cosine_distance('{1:1,2:2}/3'::sparsevec, '{1:2,2:4}/3');
SELECT cosine_distance('{1:1}/3'::sparsevec, '{1:-1}/3');
SELECT cosine_distance('{1:1}/3'::sparsevec, '{2:1}/3');
SELECT cosine_distance('{}/3'::sparsevec, '{2:1}/3');
SELECT cosine_distance('{}/3'::sparsevec, '{}/3');
SELECT cosine_distance('{1:0.1,2:0.2,3:0.3}/3'::sparsevec, '{1:0.1,2:0.2,3:0.3}/3');
SELECT '{1:1,2:2}/3'::sparsevec <=> '{1:2,3:4}/3';
SELECT l1_distance('{1:1,3:2}/5'::sparsevec, '{2:1,3:2,5:-1}/5');
SELECT l1_distance('{}/5'::sparsevec, '{2:-1,4:1.5}/5');
SELECT '{1:1,3:2}/5'::sparsevec <+> '{2:1,3:-2,5:-1}/5';
SELECT l2_norm('{1:3,4:4}/5'::sparsevec);
SELECT l2_norm('{}/5'::sparsevec);
SELECT l2_norm('{1:3.4028235e38,2:3.4028235e38}/2'::sparsevec);
SELECT l2_normalize('{1:3,4:4}/5'::sparsevec);
SELECT l2_normalize('{}/5'::sparsevec);
SELECT l2_normalize('{1:-7}/1'::sparsevec);
SELECT l2_normalize('{1:1e-45,2:3e38}/2'::sparsevec);
SELECT l2_normalize('{1:1e-45,2:1e-45,3:1e-40}/3'::sparsevec);
SELECT l2_normalize('{1:3.4028235e38,2:3.4028235e38}/2'::sparsevec);

-- float overflow inside the float accumulations
SELECT l2_distance('{1:3e38}/2'::sparsevec, '{2:3e38}/2');
SELECT l2_distance('{1:3e38}/2'::sparsevec, '{1:-3e38}/2');
SELECT inner_product('{1:3e38,2:3e38}/2'::sparsevec, '{1:3e38,2:-3e38}/2');
SELECT cosine_distance('{1:3e38}/2'::sparsevec, '{1:3e38}/2');
SELECT l1_distance('{1:3e38}/2'::sparsevec, '{1:-3e38}/2');

-- dimension mismatch
SELECT l2_distance('{}/2'::sparsevec, '{}/3');
SELECT sparsevec_l2_squared_distance('{}/2', '{}/3');
SELECT inner_product('{1:1}/2'::sparsevec, '{1:1}/3');
SELECT sparsevec_negative_inner_product('{}/2', '{}/3');
SELECT cosine_distance('{}/2'::sparsevec, '{}/3');
SELECT l1_distance('{}/2'::sparsevec, '{}/3');
SELECT '{}/2'::sparsevec <-> '{}/3';
SELECT '{}/2'::sparsevec <#> '{}/3';
SELECT '{}/2'::sparsevec <=> '{}/3';
SELECT '{}/2'::sparsevec <+> '{}/3';

-- NULLs (all functions are strict)
SELECT l2_distance(NULL::sparsevec, '{}/1'), inner_product('{}/1'::sparsevec, NULL),
       cosine_distance(NULL::sparsevec, NULL), l1_distance(NULL::sparsevec, '{}/1'),
       l2_norm(NULL::sparsevec), l2_normalize(NULL::sparsevec);

-- longer vectors with overlapping and disjoint indices: every pair, every function
CREATE TABLE sv (id int, v sparsevec);
INSERT INTO sv
SELECT k, ('{' || coalesce(string_agg(i || ':' || ((i * (k + 3)) % 17 - 8) / (k + 1.7), ','
                                      ORDER BY i), '') || '}/300')::sparsevec
FROM generate_series(0, 7) k
LEFT JOIN generate_series(1, 300) i ON i % (k + 2) = 0 OR i % (k + 5) = 1
GROUP BY k;
INSERT INTO sv VALUES (8, '{}/300'), (9, '{300:0.001}/300'), (10, '{1:1000,2:-1000}/300');
SELECT id, l2_norm(v), l2_norm(l2_normalize(v)) FROM sv ORDER BY id;
SELECT a.id, b.id,
       l2_distance(a.v, b.v), sparsevec_l2_squared_distance(a.v, b.v),
       inner_product(a.v, b.v), sparsevec_negative_inner_product(a.v, b.v)
FROM sv a CROSS JOIN sv b ORDER BY a.id, b.id;
SELECT a.id, b.id, cosine_distance(a.v, b.v), l1_distance(a.v, b.v)
FROM sv a CROSS JOIN sv b ORDER BY a.id, b.id;
SELECT a.id, b.id, a.v <-> b.v = l2_distance(a.v, b.v) AS l2,
       a.v <#> b.v = -inner_product(a.v, b.v) AS ip,
       a.v <=> b.v = cosine_distance(a.v, b.v) AS cos,
       a.v <+> b.v = l1_distance(a.v, b.v) AS l1
FROM sv a CROSS JOIN sv b
WHERE NOT (a.v <-> b.v = l2_distance(a.v, b.v) AND a.v <#> b.v = -inner_product(a.v, b.v)
           AND a.v <=> b.v IS NOT DISTINCT FROM cosine_distance(a.v, b.v)
           AND a.v <+> b.v = l1_distance(a.v, b.v));
SELECT id, l2_normalize(v) FROM sv WHERE id IN (1, 9, 10) ORDER BY id;

-- nearest neighbours by each operator
SELECT id FROM sv ORDER BY v <-> '{1:1,3:-1,100:2}/300', id;
SELECT id FROM sv ORDER BY v <#> '{1:1,3:-1,100:2}/300', id;
SELECT id FROM sv ORDER BY v <=> '{1:1,3:-1,100:2}/300', id;
SELECT id FROM sv ORDER BY v <+> '{1:1,3:-1,100:2}/300', id;
DROP TABLE sv;

-- many elements (the full non-zero limit)
SELECT l2_norm(v), l2_distance(v, w), inner_product(v, w), cosine_distance(v, w), l1_distance(v, w)
FROM (SELECT ('{' || string_agg(i || ':' || (i % 97) / 7.0 + 0.5, ',') || '}/100000')::sparsevec AS v,
             ('{' || string_agg((i * 3) || ':' || (i % 89) / -3.0 - 0.25, ',') || '}/100000')::sparsevec AS w
      FROM generate_series(1, 16000) i) t;

-- operator properties
SELECT oprname, oprcode, oprcom::regoperator
FROM pg_operator
WHERE oprleft = 'sparsevec'::regtype AND oprname IN ('<->', '<#>', '<=>', '<+>')
ORDER BY oprname;
