-- Casts between halfvec and halfvec(n), vector, and int4/float4/float8/numeric arrays.

-- halfvec -> halfvec(n)
SELECT '[1,2,3]'::halfvec::halfvec(3);
SELECT '[1,2,3]'::halfvec::halfvec(2);
SELECT halfvec('[1,2]'::halfvec, 2, false), halfvec('[1,2]'::halfvec, -1, true);
SELECT halfvec('[1,2]'::halfvec, 3, true);
SELECT CAST('[1,2]'::halfvec AS halfvec(2));

-- vector -> halfvec (implicit): rounds each element, rejects values beyond the half range
SELECT '[1,2,3]'::vector::halfvec;
SELECT '[0.1,-0.2,3.14159,1e-8,-1e-7,65519]'::vector::halfvec;
SELECT '[1,2,3]'::vector::halfvec(3);
SELECT '[1,2,3]'::vector::halfvec(2);
SELECT '[65520]'::vector::halfvec;
SELECT '[1,-70000.5]'::vector::halfvec;
SELECT '[3.4028235e38]'::vector::halfvec;
SELECT '[1e-45,-1e-45]'::vector::halfvec;
SELECT vector_to_halfvec('[1,2]', -1, false);
SELECT vector_to_halfvec('[1,2]', 3, false);
SELECT vector_dims(array_fill(1, ARRAY[16000])::vector::halfvec);

-- halfvec -> vector (assignment): exact
SELECT '[1,2,3]'::halfvec::vector;
SELECT '[0.1,-65504,5.9604645e-08,-0]'::halfvec::vector;
SELECT '[1,2,3]'::halfvec::vector(3);
SELECT '[1,2,3]'::halfvec::vector(2);
SELECT halfvec_to_vector('[1,2]', -1, false);
SELECT halfvec_to_vector('[1,2]', 3, false);

-- the implicit vector -> halfvec cast picks the halfvec functions for mixed arguments
SELECT l2_distance('[0,0]'::halfvec, '[3,4]'::vector);
SELECT '[1,2]'::halfvec + '[3,4]'::vector;

-- assignment casts into table columns
CREATE TABLE halfvec_cast_t (h halfvec(2), v vector(2), r real[]);
INSERT INTO halfvec_cast_t (h) VALUES ('[1,2]'::vector);
INSERT INTO halfvec_cast_t (v) VALUES ('[0.1,0.2]'::halfvec);
INSERT INTO halfvec_cast_t (r) VALUES ('[0.1,0.2]'::halfvec);
INSERT INTO halfvec_cast_t (h) VALUES ('{1,2}'::int[]);
INSERT INTO halfvec_cast_t (h) VALUES ('{1.5,2.5}'::real[]);
INSERT INTO halfvec_cast_t (h) VALUES ('{1.5,2.5}'::float8[]);
INSERT INTO halfvec_cast_t (h) VALUES ('{1.5,2.5}'::numeric[]);
INSERT INTO halfvec_cast_t (h) VALUES ('[1,2,3]'::vector);
INSERT INTO halfvec_cast_t (v) VALUES ('[1,2,3]'::halfvec);
INSERT INTO halfvec_cast_t (h) VALUES ('{1,2,3}'::int[]);
SELECT * FROM halfvec_cast_t ORDER BY h, v, r;
DROP TABLE halfvec_cast_t;

-- halfvec -> real[]
SELECT '[1,2,3]'::halfvec::real[];
SELECT '[0.1,-65504,5.9604645e-08,-0]'::halfvec::real[];
SELECT halfvec_to_float4('[1.5]', -1, false);
SELECT array_dims('[1,2,3]'::halfvec::real[]), array_lower('[1,2,3]'::halfvec::real[], 1);
SELECT '[1,2,3]'::halfvec::float8[];

-- integer[] -> halfvec
SELECT '{1,2,3}'::int[]::halfvec;
SELECT '{-2048,2049,2051,65504,-65504}'::int[]::halfvec;
SELECT '{65520}'::int[]::halfvec;
SELECT '{1,2147483647}'::int[]::halfvec;
SELECT '{16777217}'::int[]::halfvec;
SELECT '{1,2,3}'::int[]::halfvec(3);
SELECT '{1,2,3}'::int[]::halfvec(2);
SELECT '{}'::int[]::halfvec;
SELECT '{{1,2},{3,4}}'::int[]::halfvec;
SELECT '{1,NULL,3}'::int[]::halfvec;
SELECT '[0:2]={1,2,3}'::int[]::halfvec;
SELECT array_fill(1, ARRAY[16001])::halfvec;
SELECT array_to_halfvec('{1,2}'::int[], -1, false);

-- real[] -> halfvec
SELECT '{1.5,-2.25,0.1}'::real[]::halfvec;
SELECT '{65519.99,5.9604645e-08,2.9802322e-08,1e-45}'::real[]::halfvec;
SELECT '{65520}'::real[]::halfvec;
SELECT '{1,3.4028235e38}'::real[]::halfvec;
SELECT '{NaN}'::real[]::halfvec;
SELECT '{1,Infinity}'::real[]::halfvec;
SELECT '{-Infinity,1}'::real[]::halfvec;
-- conversion errors come before NaN/infinity checks
SELECT '{NaN,70000}'::real[]::halfvec;
SELECT '{Infinity,NaN}'::real[]::halfvec;
SELECT '{1,2}'::real[]::halfvec(3);
SELECT '{}'::real[]::halfvec;
SELECT '{{1}}'::real[]::halfvec;
SELECT '{NULL}'::real[]::halfvec;

-- double precision[] -> halfvec: narrowed to float4 first
SELECT '{1.5,-2.25,0.1}'::float8[]::halfvec;
SELECT '{65519.99999,1e-300,-1e-300}'::float8[]::halfvec;
SELECT '{65520}'::float8[]::halfvec;
SELECT '{1e10}'::float8[]::halfvec;
SELECT '{1e300}'::float8[]::halfvec;
SELECT '{-1e39}'::float8[]::halfvec;
SELECT '{NaN}'::float8[]::halfvec;
SELECT '{Infinity}'::float8[]::halfvec;
SELECT '{1e300,NaN}'::float8[]::halfvec;
SELECT '{NaN,1e10}'::float8[]::halfvec;
SELECT '{1,2}'::float8[]::halfvec(1);
SELECT '{{1,2}}'::float8[]::halfvec;
SELECT '{1,NULL}'::float8[]::halfvec;
-- a value whose double -> float4 -> half rounding differs from direct rounding
SELECT '{1.000488281250001,2049.0000001}'::float8[]::halfvec;

-- numeric[] -> halfvec: through numeric -> float4
SELECT '{1.5,-2.25,0.1}'::numeric[]::halfvec;
SELECT '{65519.99999999999999,0.00000000000001}'::numeric[]::halfvec;
SELECT '{65520}'::numeric[]::halfvec;
SELECT '{1e38}'::numeric[]::halfvec;
SELECT '{1e39}'::numeric[]::halfvec;
SELECT '{1e-50}'::numeric[]::halfvec;
SELECT '{NaN}'::numeric[]::halfvec;
SELECT '{Infinity}'::numeric[]::halfvec;
SELECT '{-Infinity}'::numeric[]::halfvec;
SELECT '{1,2}'::numeric[]::halfvec(3);
SELECT '{1,NULL}'::numeric[]::halfvec;
SELECT '{}'::numeric[]::halfvec;

-- arrays of other types have no cast
SELECT '{1,2}'::smallint[]::halfvec;
SELECT '{1,2}'::bigint[]::halfvec;
SELECT '{1,2}'::text[]::halfvec;

-- round trips
SELECT '[0.1,0.2,0.3]'::halfvec::real[]::halfvec;
SELECT '[0.1,0.2,0.3]'::halfvec::vector::halfvec;
SELECT ('[0.1,0.2,0.3]'::halfvec::vector)::text;
