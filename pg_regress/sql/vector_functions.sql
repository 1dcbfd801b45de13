-- Functions on vector: distances, dims, norms, normalization, quantization, subvector.

-- distances
SELECT l2_distance('[0,0]'::vector, '[3,4]'::vector);
SELECT l2_distance('[1,2,3]'::vector, '[1,2,3]'::vector);
SELECT l2_distance('[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0,1.1]'::vector, '[1.1,1.0,0.9,0.8,0.7,0.6,0.5,0.4,0.3,0.2,0.1]'::vector);
SELECT l2_distance('[3e38]'::vector, '[-3e38]'::vector);
SELECT l2_distance('[1,2]'::vector, '[3]'::vector);
SELECT vector_l2_squared_distance('[0,0]'::vector, '[3,4]'::vector);
SELECT vector_l2_squared_distance('[1.5,-2.5,3.25]'::vector, '[0.5,0.5,0.5]'::vector);
SELECT vector_l2_squared_distance('[1,2]'::vector, '[3]'::vector);
SELECT inner_product('[1,2]'::vector, '[3,4]'::vector);
SELECT inner_product('[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9]'::vector, '[0.9,0.8,0.7,0.6,0.5,0.4,0.3,0.2,0.1]'::vector);
SELECT inner_product('[3e38]'::vector, '[3e38]'::vector);
SELECT inner_product('[1,2]'::vector, '[3]'::vector);
SELECT vector_negative_inner_product('[1,2]'::vector, '[3,4]'::vector);
SELECT vector_negative_inner_product('[0,0]'::vector, '[3,4]'::vector);
SELECT vector_negative_inner_product('[1,2]'::vector, '[3]'::vector);
SELECT cosine_distance('[1,2]'::vector, '[2,4]'::vector);
SELECT cosine_distance('[1,2]'::vector, '[0,0]'::vector);
SELECT cosine_distance('[1,1]'::vector, '[1,1]'::vector);
SELECT cosine_distance('[1,1]'::vector, '[-1,-1]'::vector);
SELECT cosine_distance('[1,0]'::vector, '[0,2]'::vector);
SELECT cosine_distance('[3e38]'::vector, '[3e38]'::vector);
SELECT cosine_distance('[1,2,3,4,5,6,7,8,9,10,11,12,13]'::vector, '[13,12,11,10,9,8,7,6,5,4,3,2,1]'::vector);
SELECT cosine_distance('[1,2]'::vector, '[3]'::vector);
SELECT vector_spherical_distance('[1,0]'::vector, '[0,1]'::vector);
SELECT vector_spherical_distance('[1,0]'::vector, '[1,0]'::vector);
SELECT vector_spherical_distance('[1,0]'::vector, '[-1,0]'::vector);
SELECT vector_spherical_distance('[2,0]'::vector, '[3,0]'::vector);
SELECT vector_spherical_distance('[0.6,0.8]'::vector, '[0.8,0.6]'::vector);
SELECT vector_spherical_distance('[1,2]'::vector, '[3]'::vector);
SELECT l1_distance('[0,0]'::vector, '[3,4]'::vector);
SELECT l1_distance('[1.5,-2.5,0.1,0.2,0.3,0.4,0.5,0.6,0.7]'::vector, '[-1,1,0,0,0,0,0,0,0]'::vector);
SELECT l1_distance('[3e38]'::vector, '[-3e38]'::vector);
SELECT l1_distance('[1,2]'::vector, '[3]'::vector);

-- longer inputs exercise the blocked summation of the kernels
SELECT n, l2_distance(a, b), vector_l2_squared_distance(a, b), inner_product(a, b),
       vector_negative_inner_product(a, b), cosine_distance(a, b), l1_distance(a, b),
       vector_spherical_distance(l2_normalize(a), l2_normalize(b)), vector_norm(a)
FROM (VALUES (1), (3), (4), (7), (8), (15), (16), (17), (100), (1027)) d(n),
     LATERAL (SELECT array_agg(sin(i * 0.37)::real ORDER BY i)::vector AS a,
                     array_agg(cos(i * 0.11 + 1)::real ORDER BY i)::vector AS b
              FROM generate_series(1, n) i) s
ORDER BY n;

-- dims and norms
SELECT vector_dims('[1,2,3]'::vector);
SELECT vector_dims('[1,2,3]'::vector(3));
SELECT vector_norm('[3,4]'::vector);
SELECT vector_norm('[0,0,0]'::vector);
SELECT vector_norm('[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]'::vector);
SELECT vector_norm('[3e38,3e38]'::vector);
SELECT vector_norm('[1e-45]'::vector);
SELECT vector_norm(array_agg(sin(i)::real ORDER BY i)::vector) FROM generate_series(1, 999) i;
SELECT l2_normalize('[3,4]'::vector);
SELECT l2_normalize('[3,0]'::vector);
SELECT l2_normalize('[0,0.1]'::vector);
SELECT l2_normalize('[0,0]'::vector);
SELECT l2_normalize('[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]'::vector);
SELECT l2_normalize('[3e38,3e38,-3e38]'::vector);
SELECT l2_normalize('[1e-45,-1e-45]'::vector);
SELECT l2_normalize('[1,2,3,4,5,6,7,8,9,10,11,12,13]'::vector);

-- binary quantization
SELECT binary_quantize('[1,0,-1]'::vector);
SELECT binary_quantize('[0.5,-0.5,0.25,-0.25,1e-45,-1e-45,0,-0]'::vector);
SELECT binary_quantize('[1,1,1,1,1,1,1,1,1]'::vector);
SELECT binary_quantize('[1,-1,1,-1,1,-1,1,-1,1,-1,1,-1,1,-1,1,-1,1]'::vector);
SELECT length(binary_quantize(array_fill(1, ARRAY[16000])::vector));
SELECT bit_count(binary_quantize(array_agg((i % 3) - 1)::vector)) FROM generate_series(1, 100) i;
SELECT pg_typeof(binary_quantize('[1]'::vector));

-- subvector
SELECT subvector('[1,2,3,4,5]'::vector, 1, 3);
SELECT subvector('[1,2,3,4,5]'::vector, 3, 2);
SELECT subvector('[1,2,3,4,5]'::vector, 3, 10);
SELECT subvector('[1,2,3,4,5]'::vector, 5, 1);
SELECT subvector('[1,2,3,4,5]'::vector, 0, 3);
SELECT subvector('[1,2,3,4,5]'::vector, -1, 3);
SELECT subvector('[1,2,3,4,5]'::vector, -1, 2);
SELECT subvector('[1,2,3,4,5]'::vector, -2147483648, 2147483647);
SELECT subvector('[1,2,3,4,5]'::vector, 2, 2147483647);
SELECT subvector('[1,2,3,4,5]'::vector, 6, 1);
SELECT subvector('[1,2,3,4,5]'::vector, 2147483647, 1);
SELECT subvector('[1,2,3,4,5]'::vector, 1, 0);
SELECT subvector('[1,2,3,4,5]'::vector, 1, -1);
SELECT subvector('[1,2,3,4,5]'::vector, -2147483648, 1);

-- strictness
SELECT l2_distance(NULL::vector, '[1]'::vector), inner_product('[1]'::vector, NULL::vector), vector_dims(NULL::vector),
       subvector('[1]'::vector, NULL, 1), binary_quantize(NULL::vector) IS NULL;

-- catalog properties of the functions on vector (halfvec and sparsevec ones excluded)
SELECT p.oid::regprocedure, p.prorettype::regtype, p.prokind, p.provolatile, p.proisstrict,
       p.proparallel, p.prosrc, p.procost, p.prorows, l.lanname
FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
WHERE ('vector'::regtype = ANY (p.proargtypes::oid[]) OR p.prorettype = 'vector'::regtype)
  AND NOT (ARRAY['halfvec'::regtype, 'sparsevec'::regtype]::oid[] && p.proargtypes::oid[])
  AND p.prorettype NOT IN ('halfvec'::regtype, 'sparsevec'::regtype)
ORDER BY p.oid::regprocedure::text;
