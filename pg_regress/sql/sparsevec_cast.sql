-- Casts between sparsevec and vector, halfvec, arrays, and sparsevec with a type modifier.

-- vector -> sparsevec
SELECT '[1,0,2,-0,3]'::vector::sparsevec;
SELECT '[0,0,0]'::vector::sparsevec;
SELECT '[1.5,0,-2.5]'::vector::sparsevec(3);
SELECT '[1.5,0,-2.5]'::vector::sparsevec(4);
SELECT array_fill(1, ARRAY[16000])::vector::sparsevec = array_fill(1, ARRAY[16000])::sparsevec;
SELECT l2_norm(array_fill(1e-45::real, ARRAY[16000])::vector::sparsevec);
SELECT vector_to_sparsevec('[1,0,2]', -1, false);
SELECT vector_to_sparsevec('[1,0,2]', 2, true);

-- sparsevec -> vector
SELECT '{1:1.5,3:-2}/4'::sparsevec::vector;
SELECT '{}/2'::sparsevec::vector;
SELECT '{1:1.5,3:-2}/4'::sparsevec::vector(4);
SELECT '{1:1.5,3:-2}/4'::sparsevec::vector(3);
SELECT '{}/16000'::sparsevec::vector = array_fill(0, ARRAY[16000])::vector;
SELECT '{}/16001'::sparsevec::vector;
SELECT '{1:1}/1000000000'::sparsevec::vector;
SELECT sparsevec_to_vector('{2:1}/2', -1, false);
SELECT sparsevec_to_vector('{2:1}/2', 3, false);

-- halfvec -> sparsevec
SELECT '[1,0,2,-0,65504]'::halfvec::sparsevec;
SELECT '[0,-0]'::halfvec::sparsevec;
SELECT '[1.5,0,-2.5]'::halfvec::sparsevec(3);
SELECT '[1.5,0,-2.5]'::halfvec::sparsevec(2);
SELECT '[0.1,6e-8,0.333]'::halfvec::sparsevec;
SELECT halfvec_to_sparsevec('[1,0,2]', -1, false);

-- sparsevec -> halfvec
SELECT '{1:1.5,3:-2}/4'::sparsevec::halfvec;
SELECT '{1:0.1,2:1e-8,3:65504,4:-65519}/4'::sparsevec::halfvec;
SELECT '{1:65520}/2'::sparsevec::halfvec;
SELECT '{2:-1e10}/2'::sparsevec::halfvec;
SELECT '{1:1,2:70000.5}/2'::sparsevec::halfvec;
SELECT '{1:1.5}/4'::sparsevec::halfvec(4);
SELECT '{1:1.5}/4'::sparsevec::halfvec(5);
SELECT '{}/16001'::sparsevec::halfvec;
SELECT sparsevec_to_halfvec('{2:1}/2', -1, false);

-- sparsevec -> sparsevec (type modifier check)
SELECT '{1:1}/3'::sparsevec::sparsevec(3);
SELECT '{1:1}/3'::sparsevec::sparsevec(2);
SELECT sparsevec('{1:1}/3', 3, false);
SELECT sparsevec('{1:1}/3', -1, true);
SELECT sparsevec('{1:1}/3', 5, true);

-- arrays -> sparsevec
SELECT ARRAY[1,0,3]::sparsevec;
SELECT ARRAY[1,0,3]::integer[]::sparsevec(3);
SELECT ARRAY[1,0,3]::integer[]::sparsevec(2);
SELECT ARRAY[16777217, -2147483648, 0, 2147483647]::sparsevec;
SELECT ARRAY[1.5,0,-0,3]::real[]::sparsevec;
SELECT ARRAY[1.5,0,-0,3]::double precision[]::sparsevec;
SELECT ARRAY[0.1,1e-50,1e-46,3.4028235e38]::double precision[]::sparsevec;
SELECT ARRAY[1.5,0,-0,3.25]::numeric[]::sparsevec;
SELECT ARRAY[0.1,0.0000001,123456789012345678901234567890]::numeric[]::sparsevec;
SELECT ARRAY[0,0]::sparsevec;
SELECT ARRAY[1e39]::double precision[]::sparsevec;
SELECT ARRAY[-1e39]::double precision[]::sparsevec;
SELECT ARRAY['NaN']::double precision[]::sparsevec;
SELECT ARRAY['Infinity']::double precision[]::sparsevec;
SELECT ARRAY[1,'NaN','Infinity']::real[]::sparsevec;
SELECT ARRAY[1,'-Infinity','NaN']::real[]::sparsevec;
SELECT ARRAY['NaN']::numeric[]::sparsevec;
SELECT ARRAY['Infinity']::numeric[]::sparsevec;
SELECT ARRAY[1e39]::numeric[]::sparsevec;
SELECT ARRAY[1e-50]::numeric[]::sparsevec;
SELECT ARRAY[1,NULL,3]::sparsevec;
SELECT ARRAY[NULL]::integer[]::sparsevec;
SELECT ARRAY[[1,2],[3,4]]::sparsevec;
SELECT ARRAY[[1,2],[3,NULL]]::sparsevec;
SELECT '{}'::integer[]::sparsevec;
SELECT '{}'::real[]::sparsevec(1);
SELECT '[2:3]={7,0}'::integer[]::sparsevec;
SELECT array_fill(1, ARRAY[16001])::sparsevec;
SELECT l2_norm(array_fill(0, ARRAY[1000000])::sparsevec);
SELECT l2_norm((array_fill(0, ARRAY[20000]) || 5)::sparsevec);
SELECT array_to_sparsevec(ARRAY[1,0,2], -1, false);
SELECT array_to_sparsevec(ARRAY[1.5,0,2]::real[], -1, false);
SELECT array_to_sparsevec(ARRAY[1.5,0,2]::float8[], 4, false);
SELECT array_to_sparsevec(ARRAY[1.5,0,2]::numeric[], 3, false);

-- assignment and implicit casts in table columns
CREATE TABLE sparsevec_casts (s sparsevec(3), v vector(3), h halfvec(3));
INSERT INTO sparsevec_casts (s) VALUES ('[1,0,2]'::vector), ('[0,3,0]'::halfvec), (ARRAY[4,0,0]);
INSERT INTO sparsevec_casts (s) VALUES (ARRAY[1.5,0,0]::real[]), (ARRAY[0,0,2.5]::float8[]),
  (ARRAY[0,1.25,0]::numeric[]);
INSERT INTO sparsevec_casts (v, h) VALUES ('{1:1,3:3}/3'::sparsevec, '{2:-2}/3'::sparsevec);
INSERT INTO sparsevec_casts (s) VALUES ('[1,0,2,0]'::vector);
INSERT INTO sparsevec_casts (v) VALUES ('{1:1}/4'::sparsevec);
INSERT INTO sparsevec_casts (h) VALUES ('{1:1e6}/3'::sparsevec);
SELECT * FROM sparsevec_casts ORDER BY s, v, h;
DROP TABLE sparsevec_casts;

-- the implicit casts to sparsevec let mixed arguments resolve
SELECT l2_distance('{1:1}/3'::sparsevec, '[0,0,1]'::vector::sparsevec);
SELECT '{1:1}/3'::sparsevec = '[1,0,0]'::vector;
SELECT '{1:1}/3'::sparsevec = '[1,0,0]'::halfvec;

-- cast catalogue entries
SELECT castsource::regtype, casttarget::regtype, castfunc::regprocedure, castcontext
FROM pg_cast
WHERE castsource = 'sparsevec'::regtype OR casttarget = 'sparsevec'::regtype
ORDER BY castsource::regtype::text, casttarget::regtype::text;
