-- halfvec functions: distances, norms, normalization, quantization, subvector, dims.

-- Deterministic test vectors of several lengths (to cover chunked and tail code paths).
CREATE TABLE halfvec_fn (id int, a halfvec, b halfvec);
INSERT INTO halfvec_fn
  SELECT n,
         (SELECT array_agg(3 * sin(i * 0.37 + n) ORDER BY i) FROM generate_series(1, n) i)::halfvec,
         (SELECT array_agg(5 * cos(i * 1.3 + 2 * n) ORDER BY i) FROM generate_series(1, n) i)::halfvec
  FROM unnest(ARRAY[1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 257, 1000]) n;

-- vector_dims
SELECT vector_dims('[1,2,3]'::halfvec);
SELECT id, vector_dims(a) FROM halfvec_fn ORDER BY id;

-- l2_distance
SELECT l2_distance('[0,0]'::halfvec, '[3,4]');
SELECT l2_distance('[0,0]'::halfvec, '[0,1]');
SELECT l2_distance('[1,2]'::halfvec, '[1,2]');
SELECT l2_distance('[65504]'::halfvec, '[-65504]');
SELECT l2_distance('[65504,65504,65504]'::halfvec, '[-65504,-65504,-65504]');
SELECT l2_distance('[1,2]'::halfvec, '[3]');
SELECT id, l2_distance(a, b), halfvec_l2_squared_distance(a, b) FROM halfvec_fn ORDER BY id;

-- halfvec_l2_squared_distance
SELECT halfvec_l2_squared_distance('[0,0]'::halfvec, '[3,4]');
SELECT halfvec_l2_squared_distance('[65504]'::halfvec, '[-65504]');
SELECT halfvec_l2_squared_distance('[1,2]'::halfvec, '[3]');

-- inner_product and halfvec_negative_inner_product
SELECT inner_product('[1,2]'::halfvec, '[3,4]');
SELECT inner_product('[65504]'::halfvec, '[65504]');
SELECT inner_product('[65504,65504]'::halfvec, '[-65504,65504]');
SELECT inner_product('[1,2]'::halfvec, '[3]');
SELECT halfvec_negative_inner_product('[1,2]'::halfvec, '[3,4]');
SELECT halfvec_negative_inner_product('[1,2]'::halfvec, '[3]');
SELECT id, inner_product(a, b), halfvec_negative_inner_product(a, b) FROM halfvec_fn ORDER BY id;

-- cosine_distance: clamped to [0, 2]; NaN for a zero vector
SELECT cosine_distance('[1,2]'::halfvec, '[2,4]');
SELECT cosine_distance('[1,2]'::halfvec, '[0,0]');
SELECT cosine_distance('[1,1]'::halfvec, '[1,1]');
SELECT cosine_distance('[1,0]'::halfvec, '[0,2]');
SELECT cosine_distance('[1,1]'::halfvec, '[-1,-1]');
SELECT cosine_distance('[1,1,1]'::halfvec, '[1.0009766,1,1]');
SELECT cosine_distance('[65504,65504]'::halfvec, '[65504,65504]');
SELECT cosine_distance('[1,2]'::halfvec, '[3]');
SELECT id, cosine_distance(a, b) FROM halfvec_fn ORDER BY id;

-- halfvec_spherical_distance: clamped inner product of unit vectors
SELECT halfvec_spherical_distance('[1,0]'::halfvec, '[0,1]');
SELECT halfvec_spherical_distance('[1,0]'::halfvec, '[1,0]');
SELECT halfvec_spherical_distance('[1,0]'::halfvec, '[-1,0]');
SELECT halfvec_spherical_distance('[0.70703125,0.70703125]'::halfvec, '[1,0]');
SELECT halfvec_spherical_distance('[2,0]'::halfvec, '[2,0]');
SELECT halfvec_spherical_distance('[-2,0]'::halfvec, '[2,0]');
SELECT halfvec_spherical_distance('[1,2]'::halfvec, '[3]');
SELECT id, halfvec_spherical_distance(l2_normalize(a), l2_normalize(b)) FROM halfvec_fn ORDER BY id;

-- l1_distance
SELECT l1_distance('[0,0]'::halfvec, '[3,4]');
SELECT l1_distance('[0,0]'::halfvec, '[0,1]');
SELECT l1_distance('[65504,-65504]'::halfvec, '[-65504,65504]');
SELECT l1_distance('[1,2]'::halfvec, '[3]');
SELECT id, l1_distance(a, b) FROM halfvec_fn ORDER BY id;

-- l2_norm
SELECT l2_norm('[1,1]'::halfvec);
SELECT l2_norm('[3,4]'::halfvec);
SELECT l2_norm('[0,1]'::halfvec);
SELECT l2_norm('[0,0]'::halfvec);
SELECT l2_norm('[-0]'::halfvec);
SELECT l2_norm('[65504,65504,65504]'::halfvec);
SELECT l2_norm('[5.9604645e-08]'::halfvec);
SELECT id, l2_norm(a), l2_norm(b) FROM halfvec_fn ORDER BY id;

-- l2_normalize
SELECT l2_normalize('[3,4]'::halfvec);
SELECT l2_normalize('[3,0]'::halfvec);
SELECT l2_normalize('[0,0.1]'::halfvec);
SELECT l2_normalize('[0,0]'::halfvec);
SELECT l2_normalize('[-0,0]'::halfvec);
SELECT l2_normalize('[65504,65504]'::halfvec);
SELECT l2_normalize('[5.9604645e-08,0]'::halfvec);
SELECT l2_normalize('[5.9604645e-08,1.1920929e-07,-5.9604645e-08]'::halfvec);
SELECT l2_normalize('[1,2,3,4,5,6,7,8,9,10]'::halfvec);
SELECT id, l2_normalize(a), l2_normalize(b) FROM halfvec_fn WHERE id <= 9 ORDER BY id;
SELECT id, md5(l2_normalize(a)::text), md5(l2_normalize(b)::text) FROM halfvec_fn ORDER BY id;

-- binary_quantize: one bit per element, set for positive values
SELECT binary_quantize('[1,0,-1]'::halfvec);
SELECT binary_quantize('[0,0.1,-0.2,-0.3,0.4,0.5,0.6,-0.7,0.8,-0.9,1]'::halfvec);
SELECT binary_quantize('[-0,0,5.9604645e-08,-5.9604645e-08]'::halfvec);
SELECT binary_quantize('[1,1,1,1,1,1,1,1]'::halfvec);
SELECT binary_quantize('[1,1,1,1,1,1,1,1,1]'::halfvec);
SELECT id, binary_quantize(a), bit_length(binary_quantize(b)) FROM halfvec_fn WHERE id <= 33 ORDER BY id;
SELECT md5(binary_quantize(a)::text) FROM halfvec_fn WHERE id = 1000;

-- subvector: 1-based start, clipped like substring
SELECT subvector('[1,2,3,4,5]'::halfvec, 1, 3);
SELECT subvector('[1,2,3,4,5]'::halfvec, 3, 2);
SELECT subvector('[1,2,3,4,5]'::halfvec, -1, 3);
SELECT subvector('[1,2,3,4,5]'::halfvec, 3, 9);
SELECT subvector('[1,2,3,4,5]'::halfvec, 5, 1);
SELECT subvector('[1,2,3,4,5]'::halfvec, 0, 6);
SELECT subvector('[1,2,3,4,5]'::halfvec, 1, 2147483647);
SELECT subvector('[1,2,3,4,5]'::halfvec, 3, 2147483647);
SELECT subvector('[1,2,3,4,5]'::halfvec, -2147483644, 2147483647);
SELECT subvector('[1,2,3,4,5]'::halfvec, 1, 0);
SELECT subvector('[1,2,3,4,5]'::halfvec, 3, -1);
SELECT subvector('[1,2,3,4,5]'::halfvec, 6, 1);
SELECT subvector('[1,2,3,4,5]'::halfvec, 2147483647, 1);
SELECT subvector('[1,2,3,4,5]'::halfvec, -1, 2);
SELECT subvector('[1,2,3,4,5]'::halfvec, -2147483648, 2147483647);
SELECT subvector('[1,2,3,4,5]'::halfvec, -2147483648, 5);
SELECT id, subvector(a, id / 2 + 1, 5) FROM halfvec_fn WHERE id <= 17 ORDER BY id;

-- NULL inputs (the functions are strict)
SELECT l2_distance(NULL::halfvec, '[1]'), inner_product('[1]'::halfvec, NULL),
       cosine_distance(NULL::halfvec, NULL), l1_distance(NULL::halfvec, '[1]'),
       l2_norm(NULL::halfvec), l2_normalize(NULL::halfvec), binary_quantize(NULL::halfvec),
       subvector(NULL::halfvec, 1, 1), subvector('[1]'::halfvec, NULL, 1),
       vector_dims(NULL::halfvec);

-- large values are stored out of line (STORAGE external) and read back detoasted
CREATE TABLE halfvec_toast (id int, v halfvec);
INSERT INTO halfvec_toast
  SELECT n, (SELECT array_agg(sin(i + n) ORDER BY i) FROM generate_series(1, 16000) i)::halfvec
  FROM generate_series(1, 2) n;
SELECT pg_column_size(v) AS stored, pg_column_compression(v) AS compression FROM halfvec_toast ORDER BY id;
SELECT a.id, vector_dims(a.v), l2_norm(a.v), md5(a.v::text), md5(halfvec_send(a.v)),
       a.v <-> b.v AS l2, a.v <#> b.v AS nip, a.v <=> b.v AS cos, a.v <+> b.v AS l1
  FROM halfvec_toast a JOIN halfvec_toast b ON a.id <> b.id ORDER BY a.id;
SELECT v || '[1]' FROM halfvec_toast WHERE id = 1;
SELECT md5((v + v)::text), md5((v - v)::text), md5(l2_normalize(v)::text),
       md5(binary_quantize(v)::text), md5(v::vector::text), md5(v::real[]::text),
       v::halfvec(16000) = v, subvector(v, 15998, 5)
  FROM halfvec_toast ORDER BY id;
SELECT md5(avg(v)::text), md5(sum(v)::text) FROM halfvec_toast;
DROP TABLE halfvec_toast;

DROP TABLE halfvec_fn;
