-- Casts between vector and arrays, and the typmod cast.

-- arrays to vector
SELECT '{1,2,3}'::int[]::vector;
SELECT '{-2147483648,2147483647,16777217}'::int[]::vector;
SELECT '{1.5,-2.5,0.1}'::real[]::vector;
SELECT '{1.5,-2.5,0.1,1e-50,-1e-50}'::float8[]::vector;
SELECT '{0.1,3.14159265358979323846,-1e30,12345.678,-0.0}'::numeric[]::vector;
SELECT ARRAY[1,2,3]::vector(3);
SELECT ARRAY[1,2,3]::vector(2);
SELECT ARRAY[1.0,2.0]::numeric[]::vector(3);
SELECT '{}'::int[]::vector;
SELECT '{}'::real[]::vector;
SELECT '{{1,2},{3,4}}'::int[]::vector;
SELECT '{{1}}'::real[]::vector;
SELECT '{1,NULL,3}'::int[]::vector;
SELECT '{NULL}'::float8[]::vector;
SELECT '[5:7]={1,2,3}'::int[]::vector;
SELECT '{NaN}'::real[]::vector;
SELECT '{1,Infinity}'::real[]::vector;
SELECT '{-Infinity}'::float8[]::vector;
SELECT '{NaN}'::float8[]::vector;
SELECT '{1e39}'::float8[]::vector;
SELECT '{-1e300}'::float8[]::vector;
SELECT '{NaN}'::numeric[]::vector;
SELECT '{Infinity}'::numeric[]::vector;
SELECT '{1e39}'::numeric[]::vector;
SELECT '{1e-50}'::numeric[]::vector;
SELECT array_fill(1.5::real, ARRAY[16000])::vector = array_fill(1.5::float8, ARRAY[16000])::vector;
SELECT array_fill(1, ARRAY[16001])::vector;
SELECT array_to_vector('{1,2}'::int[], -1, false), array_to_vector('{1,2}'::real[], 2, true);
SELECT array_to_vector('{1,2}'::float8[], 3, false);
SELECT array_to_vector('{1,2}'::numeric[], -1, true);

-- expanded arrays from PL/pgSQL
DO $$
DECLARE
  a float8[] := '{1,2}';
  v vector(3);
BEGIN
  a[3] := 3.5;
  v := a;
  RAISE NOTICE '% %', a::vector, v;
  a[4] := 4;
  v := a;
END $$;

-- vector to real[]
SELECT '[1,2,3]'::vector::real[];
SELECT '[1.5,-0,1e-45,3.4028235e38]'::vector::real[];
SELECT vector_to_float4('[4,5]', -1, false);
SELECT array_length(array_fill(2, ARRAY[16000])::vector::real[], 1);
SELECT array_dims('[1,2,3]'::vector::real[]);
SELECT '[1,2,3]'::vector::float8[];
SELECT '[1,2,3]'::vector::int[];
SELECT '[1,2,3]'::vector::numeric[];
SELECT '[1,2,3]'::vector::text;
SELECT '[1,2,3]'::text::vector;
SELECT '{1,2,3}'::text::vector;

-- typmod cast
SELECT vector('[1,2,3]', 3, false), vector('[1,2,3]', -1, true);
SELECT vector('[1,2,3]', 2, true);
SELECT '[1,2,3]'::vector::vector(3);
SELECT CAST('[1,2,3]'::vector AS vector(4));

-- assignment and implicit casts
CREATE TABLE vector_casts_t (id int, v vector(3), r real[]);
INSERT INTO vector_casts_t VALUES (1, ARRAY[1,2,3], '[4,5,6]'::vector);
INSERT INTO vector_casts_t VALUES (2, ARRAY[1.5,2.5,3.5]::real[], NULL);
INSERT INTO vector_casts_t VALUES (3, ARRAY[1.5,2.5,3.5]::float8[], NULL);
INSERT INTO vector_casts_t VALUES (4, ARRAY[1.5,2.5,3.5]::numeric[], NULL);
INSERT INTO vector_casts_t VALUES (5, ARRAY[1,2], NULL);
INSERT INTO vector_casts_t VALUES (6, '[1,2,3,4]'::vector, NULL);
UPDATE vector_casts_t SET v = ARRAY[7,8,9] WHERE id = 1;
SELECT * FROM vector_casts_t ORDER BY id;
SELECT ARRAY[1,2,3] <-> '[1,2,4]'::vector;
SELECT array_append('[1,2]'::vector, 3);
DROP TABLE vector_casts_t;

-- the cast catalog
SELECT c.castsource::regtype, c.casttarget::regtype, c.castfunc::regprocedure, c.castcontext,
       c.castmethod
FROM pg_cast c
WHERE (c.castsource = 'vector'::regtype OR c.casttarget = 'vector'::regtype)
  AND c.castsource::regtype::text NOT IN ('halfvec', 'sparsevec')
  AND c.casttarget::regtype::text NOT IN ('halfvec', 'sparsevec')
ORDER BY c.castsource::regtype::text, c.casttarget::regtype::text;
