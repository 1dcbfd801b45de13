-- sparsevec text input and output: accepted spellings, normalization, every parse error,
-- limits and type modifiers.

-- accepted spellings
SELECT '{1:1.5,3:2}/5'::sparsevec;
SELECT '{}/1'::sparsevec;
SELECT '{ }/3'::sparsevec;
SELECT ' { 1 : 1.5 , 3 : 2 } / 5 '::sparsevec;
SELECT (E'\t{\n2:\r-3\f,' || chr(11) || E'4:4}\n/\t7\n')::sparsevec;
SELECT '{+1:+1.5,2:-2.25e1,3:.5,4:5.,5:0x10,6:-0X1p-2}/6'::sparsevec;
SELECT '{1:1}/+3'::sparsevec;
SELECT '{0001:1}/003'::sparsevec;
SELECT '{1000000000:1}/1000000000'::sparsevec;

-- zeros are dropped and indices sorted
SELECT '{1:0,2:1,3:-0,4:0.0e5}/4'::sparsevec;
SELECT '{1:0,1:2}/3'::sparsevec;
SELECT '{5:5,1:1,3:3}/5'::sparsevec;
SELECT '{10:-1,2:2,7:0,1:1}/10'::sparsevec;

-- shortest round-trip float output
SELECT '{1:0.1,2:1.0000001,3:16777217,4:3.14159265358979,5:1e-7,6:123456789012}/6'::sparsevec;
SELECT '{1:3.4028235e38,2:-3.4028235e38,3:1.1754944e-38,4:1e-45,5:1e-40}/5'::sparsevec;

-- values out of range, NaN and infinity
SELECT '{1:1e39}/2'::sparsevec;
SELECT '{1:-1e39}/2'::sparsevec;
SELECT '{1:1e-50}/2'::sparsevec;
SELECT '{1:1e-46}/2'::sparsevec;
SELECT '{1:NaN}/2'::sparsevec;
SELECT '{1:nan}/2'::sparsevec;
SELECT '{1:inf}/2'::sparsevec;
SELECT '{1:-Infinity}/2'::sparsevec;
SELECT '{2:1,1:NaN}/2'::sparsevec;

-- malformed input
SELECT ''::sparsevec;
SELECT '   '::sparsevec;
SELECT '1:1/3'::sparsevec;
SELECT '[1,2]'::sparsevec;
SELECT '{'::sparsevec;
SELECT '{ '::sparsevec;
SELECT '{1'::sparsevec;
SELECT '{1:'::sparsevec;
SELECT '{1:1'::sparsevec;
SELECT '{1:1,'::sparsevec;
SELECT '{1:1}'::sparsevec;
SELECT '{1:1} '::sparsevec;
SELECT '{1:1}3'::sparsevec;
SELECT '{1:1}/'::sparsevec;
SELECT '{1:1}/ '::sparsevec;
SELECT '{1:1}/x'::sparsevec;
SELECT '{1:1}/3 x'::sparsevec;
SELECT '{1:1}/3.5'::sparsevec;
SELECT '{1:1}/3/'::sparsevec;
SELECT '{1:1}/3,'::sparsevec;
SELECT '{1}/3'::sparsevec;
SELECT '{1:}/3'::sparsevec;
SELECT '{:1}/3'::sparsevec;
SELECT '{a:1}/3'::sparsevec;
SELECT '{1:a}/3'::sparsevec;
SELECT '{1.5:1}/3'::sparsevec;
SELECT '{1:1e}/3'::sparsevec;
SELECT '{1:1 2:1}/3'::sparsevec;
SELECT '{1:1,,2:1}/3'::sparsevec;
SELECT '{,}/3'::sparsevec;
SELECT '{1:1,}/3'::sparsevec;
SELECT '{1::1}/3'::sparsevec;
SELECT '{1:1}}/3'::sparsevec;
SELECT '{{1:1}/3'::sparsevec;
SELECT '{1:1}//3'::sparsevec;

-- indices
SELECT '{0:1}/3'::sparsevec;
SELECT '{4:1}/3'::sparsevec;
SELECT '{-1:1}/3'::sparsevec;
SELECT '{99999999999:1}/3'::sparsevec;
SELECT '{-99999999999:1}/3'::sparsevec;
SELECT '{1:1,1:2}/3'::sparsevec;
SELECT '{2:1,3:1,2:5}/3'::sparsevec;
SELECT '{0:1,1:1,1:1}/3'::sparsevec;
SELECT '{1:1,1:1,9:1}/3'::sparsevec;
SELECT '{0:0}/3'::sparsevec;

-- dimensions
SELECT '{}/0'::sparsevec;
SELECT '{}/-1'::sparsevec;
SELECT '{1:1}/0'::sparsevec;
SELECT '{}/1000000001'::sparsevec;
SELECT '{}/99999999999'::sparsevec;
SELECT '{}/-99999999999'::sparsevec;
SELECT '{0:1}/0'::sparsevec;

-- non-zero element limit (counted from the commas, before parsing)
SELECT l2_norm(('{' || string_agg(i || ':1', ',') || '}/16000')::sparsevec)
FROM generate_series(1, 16000) i;
SELECT ('{' || string_agg(i || ':1', ',') || '}/16001')::sparsevec
FROM generate_series(1, 16001) i;
SELECT ('{' || string_agg(i || ':0', ',') || '}/16001')::sparsevec
FROM generate_series(1, 16001) i;
SELECT ('{1:1}/3' || repeat(',', 16000))::sparsevec;

-- type modifiers
SELECT '{1:1}/3'::sparsevec(3);
SELECT '{1:1}/3'::sparsevec(4);
SELECT '{}/1000000000'::sparsevec(1000000000);
SELECT '{1:1}/3'::sparsevec(0);
SELECT '{1:1}/3'::sparsevec(-1);
SELECT '{1:1}/3'::sparsevec(1000000001);
SELECT '{1:1}/3'::sparsevec(3, 4);
CREATE TABLE sparsevec_typmod (v sparsevec(3));
INSERT INTO sparsevec_typmod VALUES ('{1:1,3:3}/3'), ('{}/3');
INSERT INTO sparsevec_typmod VALUES ('{1:1}/4');
SELECT * FROM sparsevec_typmod ORDER BY v;
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 'sparsevec_typmod'::regclass AND attname = 'v';
DROP TABLE sparsevec_typmod;
CREATE TABLE sparsevec_bad_typmod (v sparsevec(0));
CREATE TABLE sparsevec_bad_typmod (v sparsevec(2, 2));

-- NULL handling and arrays of sparsevec
SELECT NULL::sparsevec;
SELECT ARRAY['{1:1}/2', '{2:-2}/2']::sparsevec[];
SELECT '{"{1:1}/2","{}/2"}'::sparsevec[];
