-- Text input and output of vector, type modifiers, and binary I/O through COPY.

-- well-formed input: whitespace around every token, signs, exponents, hex floats
SELECT '[1,2,3]'::vector;
SELECT ' [ 1 , 2 , 3 ] '::vector;
SELECT (chr(9) || '[' || chr(10) || '1,' || chr(13) || '2' || chr(12) || ',' || chr(11) || '3]'
        || chr(10))::vector;
SELECT ('[1' || chr(160) || ']')::vector;
SELECT '[-1.5,+2.25,-0,0]'::vector;
SELECT '[1e3,1E-3,.5,5.,-.5e+2]'::vector;
SELECT '[0x10,0X1p-2,-0x1.8p1]'::vector;
SELECT '[1.23456789,0.1,100000000,123456789012,1e-7]'::vector;
SELECT '[3.4028235e38,-3.4028235e38,1.1754944e-38,1e-45]'::vector;
SELECT '[1e-50,-1e-50]'::vector;
SELECT '[0000001.0000]'::vector;

-- shortest round-trip output
SELECT '[0.1,0.2,0.3,1.0000001,16777217,3.14159265358979]'::vector;
SELECT '[1e20,1e-20,123e30,-4.5e-10]'::vector;

-- malformed input
SELECT ''::vector;
SELECT '   '::vector;
SELECT '1,2,3'::vector;
SELECT '(1,2,3)'::vector;
SELECT '{1,2,3}'::vector;
SELECT '[]'::vector;
SELECT '[ ]'::vector;
SELECT '['::vector;
SELECT '[ '::vector;
SELECT '[1'::vector;
SELECT '[1,'::vector;
SELECT '[1,]'::vector;
SELECT '[,1]'::vector;
SELECT '[1,,2]'::vector;
SELECT '[1 2]'::vector;
SELECT '[1;2]'::vector;
SELECT '[a]'::vector;
SELECT '[1a]'::vector;
SELECT '[1.2.3]'::vector;
SELECT '[--1]'::vector;
SELECT '[1e]'::vector;
SELECT '[1]]'::vector;
SELECT '[1] x'::vector;
SELECT '[1][2]'::vector;
SELECT '[1],'::vector;
SELECT 'x[1]'::vector;
SELECT '[1,2,3]   '::vector;

-- special values
SELECT '[NaN]'::vector;
SELECT '[nan(123)]'::vector;
SELECT '[1,-nan]'::vector;
SELECT '[Infinity]'::vector;
SELECT '[-inf]'::vector;
SELECT '[1,INF]'::vector;
SELECT '[1e39]'::vector;
SELECT '[-1e39]'::vector;
SELECT '[1, 4e38 ,2]'::vector;
SELECT '[1e400]'::vector;
SELECT '[0x1p200]'::vector;

-- dimension limits
SELECT vector_dims(('[' || array_to_string(array_fill(1, ARRAY[16000]), ',') || ']')::vector);
SELECT ('[' || array_to_string(array_fill(1, ARRAY[16001]), ',') || ']')::vector;
SELECT ('[' || array_to_string(array_fill(1, ARRAY[16000]), ',') || ',x]')::vector;
SELECT ('[' || array_to_string(array_fill(1, ARRAY[16000]), ',') || ',]')::vector;

-- type modifiers
SELECT '[1,2,3]'::vector(3);
SELECT '[1,2]'::vector(3);
SELECT '[1,2,3,4]'::vector(3);
SELECT '[1]'::vector(0);
SELECT '[1]'::vector(-1);
SELECT '[1]'::vector(16001);
SELECT '[1]'::vector(3, 2);
SELECT '[1]'::vector('a');
SELECT '[1,2,3]'::vector(3)::vector(2);
SELECT '[1,2,3]'::vector::vector(3);

CREATE TABLE vector_io_t (id int, v vector(3));
\d vector_io_t
INSERT INTO vector_io_t VALUES (1, '[1,2,3]');
INSERT INTO vector_io_t VALUES (2, '[1,2]');
INSERT INTO vector_io_t VALUES (3, '[1,2,3,4]');
INSERT INTO vector_io_t VALUES (4, '[1.5, -2.5, 1e-30]'), (5, NULL);
SELECT * FROM vector_io_t ORDER BY id;
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
  WHERE attrelid = 'vector_io_t'::regclass AND attname = 'v';

-- the I/O functions called directly
SELECT vector_in('[1,2]', 0, -1);
SELECT vector_in('[1,2]', 0, 3);
SELECT vector_out('[4,5,6]');
SELECT vector_send('[1,2,3]');
SELECT vector_send('[-0,1e-45,3.4028235e38]');
SELECT vector_typmod_in('{5}');
SELECT vector_typmod_in('{0}');
SELECT vector_typmod_in('{16000}');
SELECT vector_typmod_in('{16001}');
SELECT vector_typmod_in('{1,2}');
SELECT vector_typmod_in('{}');
SELECT vector_typmod_in('{x}');
SELECT vector_typmod_in('{NULL}');

-- the type's catalog entry (storage external, int4 alignment)
SELECT typlen, typbyval, typalign, typstorage, typinput, typoutput, typreceive, typsend,
       typmodin, typmodout, typanalyze, typcategory, typispreferred, typdelim, typelem
FROM pg_type WHERE oid = 'vector'::regtype;

-- large values are stored out of line without compression and read back intact
CREATE TABLE vector_io_big (id int, v vector);
INSERT INTO vector_io_big SELECT i, array_fill(i * 0.5, ARRAY[16000])::vector
  FROM generate_series(1, 3) i;
INSERT INTO vector_io_big VALUES (4, '[1,2,3]');
SELECT id, vector_dims(v), pg_column_size(v), v = array_fill(id * 0.5, ARRAY[vector_dims(v)])::vector,
       vector_norm(v)
FROM vector_io_big ORDER BY id;
SELECT id, length(vector_send(v)) FROM vector_io_big ORDER BY id;
SELECT sum(vector_dims(v::vector(16000))) FROM vector_io_big WHERE id < 4;
DROP TABLE vector_io_big;

-- binary round trip through COPY
COPY vector_io_t TO '/tmp/vector_io_roundtrip.bin' (FORMAT binary);
CREATE TABLE vector_io_copy (id int, v vector(3));
COPY vector_io_copy FROM '/tmp/vector_io_roundtrip.bin' (FORMAT binary);
SELECT * FROM vector_io_copy ORDER BY id;
SELECT count(*) FROM vector_io_t a JOIN vector_io_copy b USING (id) WHERE a.v = b.v;
CREATE TABLE vector_io_copy2 (id int, v vector(2));
COPY vector_io_copy2 FROM '/tmp/vector_io_roundtrip.bin' (FORMAT binary);

-- malformed binary input: the raw bytes of a bytea column are read back as a vector
CREATE TABLE vector_io_raw (b bytea);
CREATE TABLE vector_io_recv (v vector);
CREATE TABLE vector_io_recv3 (v vector(3));
CREATE FUNCTION vector_io_try_recv(payload bytea, target text DEFAULT 'vector_io_recv')
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE vector_io_raw;
  EXECUTE format('TRUNCATE %I', target);
  INSERT INTO vector_io_raw VALUES (payload);
  COPY vector_io_raw TO '/tmp/vector_io_recv.bin' (FORMAT binary);
  EXECUTE format('COPY %I FROM %L (FORMAT binary)', target, '/tmp/vector_io_recv.bin');
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT vector_io_try_recv('\x000200003f80000040000000');
SELECT v FROM vector_io_recv;
SELECT vector_io_try_recv('\x00000000');
SELECT vector_io_try_recv('\xffff0000');
SELECT vector_io_try_recv('\x3e810000');
SELECT vector_io_try_recv('\x0001000100000000');
SELECT vector_io_try_recv('\x0001ffff00000000');
SELECT vector_io_try_recv('\x000100007fc00000');
SELECT vector_io_try_recv('\x000100007f800000');
SELECT vector_io_try_recv('\x00010000ff800000');
SELECT vector_io_try_recv('\x0002000000000000');
SELECT vector_io_try_recv('\x00020000000000000000000000');
SELECT vector_io_try_recv('\x0001');
SELECT vector_io_try_recv('\x');
SELECT vector_io_try_recv('\x000200003f80000040000000', 'vector_io_recv3');
SELECT vector_io_try_recv('\x000300003f800000400000004040000000', 'vector_io_recv3');
SELECT vector_io_try_recv('\x000300003f8000004000000040400000', 'vector_io_recv3');
SELECT v FROM vector_io_recv3;

DROP FUNCTION vector_io_try_recv(bytea, text);
DROP TABLE vector_io_t, vector_io_copy, vector_io_copy2, vector_io_raw, vector_io_recv,
  vector_io_recv3;
