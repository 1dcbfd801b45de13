-- halfvec text input and output, type modifiers, and binary send/receive.

-- Well-formed literals: whitespace, signs, exponents, hexadecimal, leading/trailing dots.
SELECT '[1,2,3]'::halfvec;
SELECT ' [ 1 , -2.5 ,3e2 ] '::halfvec;
SELECT (E'\t[\n1,\r2\f,' || chr(11) || E'3]\n')::halfvec;
SELECT '[+1.5,-.5,5.,1e-1,0x1p3,0X10]'::halfvec;
SELECT '[-0,0,-0.0]'::halfvec;
SELECT '[1.0e+2, 1E2, 100.000]'::halfvec;

-- Rounding to half precision: the nearest half, ties to even.
SELECT '[0.1,0.2,0.3,0.333333,3.14159265]'::halfvec;
SELECT '[2049,2051,2053,4097,4099]'::halfvec;
SELECT '[1.00048828125,1.00146484375,1.0009765625]'::halfvec;
SELECT '[65504,65519,65519.99,-65519]'::halfvec;
SELECT '[1e-3,1e-4,1e-5,6.1035156e-05,6.0975552e-05]'::halfvec;
-- subnormal halves and underflow to zero
SELECT '[5.9604645e-08,2.9802322e-08,2.9802323e-08,8.940697e-08,1e-8,-1e-8]'::halfvec;
SELECT '[1e-40,1e-50,-1e-50,1e-400]'::halfvec;

-- Out of range: finite values that round to infinity, and float4 overflow.
SELECT '[65520]'::halfvec;
SELECT '[1,-65520]'::halfvec;
SELECT '[70000.5]'::halfvec;
SELECT '[1e5]'::halfvec;
SELECT '[3.4028235e38]'::halfvec;
SELECT '[1e39]'::halfvec;
SELECT '[ -1e400 ]'::halfvec;
SELECT '[0x1p16]'::halfvec;

-- NaN and infinity are rejected.
SELECT '[NaN]'::halfvec;
SELECT '[1,nan]'::halfvec;
SELECT '[-NaN]'::halfvec;
SELECT '[Infinity]'::halfvec;
SELECT '[1,-inf]'::halfvec;
SELECT '[INF]'::halfvec;

-- Malformed literals.
SELECT ''::halfvec;
SELECT '   '::halfvec;
SELECT '1,2'::halfvec;
SELECT '{1,2}'::halfvec;
SELECT '('::halfvec;
SELECT '['::halfvec;
SELECT '[ '::halfvec;
SELECT '[1'::halfvec;
SELECT '[1,'::halfvec;
SELECT '[1,]'::halfvec;
SELECT '[,1]'::halfvec;
SELECT '[1,,2]'::halfvec;
SELECT '[1 2]'::halfvec;
SELECT '[1;2]'::halfvec;
SELECT '[a]'::halfvec;
SELECT '[1a]'::halfvec;
SELECT '[1.2.3]'::halfvec;
SELECT '[--1]'::halfvec;
SELECT '[e5]'::halfvec;
SELECT '[1,2]x'::halfvec;
SELECT '[1,2] ]'::halfvec;
SELECT '[1,2][3]'::halfvec;
SELECT '[]'::halfvec;
SELECT '[  ]'::halfvec;
SELECT ' [ ] x'::halfvec;
SELECT '[1e]'::halfvec;
SELECT '[0x]'::halfvec;

-- Errors report the whole literal.
SELECT '  [1, 2, three]  '::halfvec;

-- Dimension limits.
SELECT vector_dims(('[' || array_to_string(array_fill(1, ARRAY[16000]), ',') || ']')::halfvec);
SELECT ('[' || array_to_string(array_fill(1, ARRAY[16001]), ',') || ']')::halfvec;
SELECT ('[' || array_to_string(array_fill(1, ARRAY[16001]), ',') || ']')::halfvec(3);

-- Type modifiers.
SELECT '[1,2,3]'::halfvec(3);
SELECT '[1,2]'::halfvec(3);
SELECT '[1,2,3,4]'::halfvec(3);
SELECT '[1,2,3]'::halfvec(0);
SELECT '[1,2,3]'::halfvec(-1);
SELECT '[1,2,3]'::halfvec(16000);
SELECT '[1,2,3]'::halfvec(16001);
SELECT '[1,2,3]'::halfvec(2, 3);
SELECT '[1,2,3]'::halfvec(2147483647);
CREATE TABLE halfvec_typmod (v halfvec(3));
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
  WHERE attrelid = 'halfvec_typmod'::regclass AND attname = 'v';
INSERT INTO halfvec_typmod VALUES ('[1,2,3]');
INSERT INTO halfvec_typmod VALUES ('[1,2]');
INSERT INTO halfvec_typmod VALUES ('[1,2,3]'::halfvec(3));
INSERT INTO halfvec_typmod SELECT '[4,5,6,7]'::halfvec;
UPDATE halfvec_typmod SET v = '[1,2]'::halfvec;
SELECT * FROM halfvec_typmod;
DROP TABLE halfvec_typmod;
CREATE TABLE halfvec_bad_typmod (v halfvec(0));
CREATE TABLE halfvec_bad_typmod (v halfvec(16001));
CREATE TABLE halfvec_bad_typmod (v halfvec(1, 2));
CREATE TABLE halfvec_bad_typmod (v halfvec('x'));

-- Output: every element printed as the shortest float4 that reads back to it.
SELECT '[65504,-65504,6.1035156e-05,5.9604645e-08,-5.9604645e-08,0.00012207031]'::halfvec;
SELECT '[1,2,3]'::halfvec::text;
SELECT halfvec_out('[1.5,2.25]');
SELECT halfvec_in('[1,2]', 0, -1);
SELECT halfvec_in('[1,2]', 0, 3);
SELECT halfvec_typmod_in('{5}');
SELECT halfvec_typmod_in('{0}');
SELECT halfvec_typmod_in('{5,6}');
SELECT halfvec_typmod_in('{}');
SELECT halfvec_typmod_in('{abc}');

-- Binary send.
SELECT halfvec_send('[1,2,3]');
SELECT halfvec_send('[-0,65504,5.9604645e-08,-1.5]');

-- Binary round trip through COPY.
CREATE TABLE halfvec_bin (id int, v halfvec);
INSERT INTO halfvec_bin VALUES
  (1, '[1,2,3]'), (2, '[-0,65504,-65504,5.9604645e-08]'), (3, NULL), (4, '[0.1]');
COPY halfvec_bin TO '/tmp/pg_regress_halfvec_io_bin.copy' (FORMAT binary);
CREATE TABLE halfvec_bin_back (id int, v halfvec);
COPY halfvec_bin_back FROM '/tmp/pg_regress_halfvec_io_bin.copy' (FORMAT binary);
SELECT * FROM halfvec_bin_back ORDER BY id;
SELECT count(*) FROM halfvec_bin a JOIN halfvec_bin_back b USING (id)
  WHERE halfvec_send(a.v) = halfvec_send(b.v);
CREATE TABLE halfvec_bin_typmod (id int, v halfvec(3));
COPY halfvec_bin_typmod FROM '/tmp/pg_regress_halfvec_io_bin.copy' (FORMAT binary);

-- Binary receive of chosen bytes: a bytea column's binary COPY field is exactly its bytes, so
-- copying such a file into a halfvec column hands those bytes to halfvec_recv.
CREATE TABLE halfvec_raw (b bytea);
CREATE FUNCTION halfvec_from_bytes(bytes bytea, dims int DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  result text;
BEGIN
  TRUNCATE halfvec_raw;
  INSERT INTO halfvec_raw VALUES (bytes);
  COPY halfvec_raw TO '/tmp/pg_regress_halfvec_io_recv.copy' (FORMAT binary);
  DROP TABLE IF EXISTS halfvec_recv_into;
  IF dims IS NULL THEN
    CREATE TEMP TABLE halfvec_recv_into (v halfvec);
  ELSE
    EXECUTE format('CREATE TEMP TABLE halfvec_recv_into (v halfvec(%s))', dims);
  END IF;
  COPY halfvec_recv_into FROM '/tmp/pg_regress_halfvec_io_recv.copy' (FORMAT binary);
  SELECT v::text INTO result FROM halfvec_recv_into;
  RETURN result;
END
$$;
SELECT halfvec_from_bytes('\x000300003c0040004200');
SELECT halfvec_from_bytes('\x000300003c0040004200', 3);
SELECT halfvec_from_bytes('\x000200008000fbff');
SELECT halfvec_from_bytes('\x000100000001');
-- typmod mismatch
SELECT halfvec_from_bytes('\x000300003c0040004200', 2);
-- bad dimensions
SELECT halfvec_from_bytes('\x00000000');
SELECT halfvec_from_bytes('\xffff0000');
SELECT halfvec_from_bytes('\x3e810000');
SELECT halfvec_from_bytes('\x8000000000');
-- unused must be zero
SELECT halfvec_from_bytes('\x000100013c00');
SELECT halfvec_from_bytes('\x0001ffff3c00');
-- NaN and infinity
SELECT halfvec_from_bytes('\x000200003c007c00');
SELECT halfvec_from_bytes('\x00020000fc003c00');
SELECT halfvec_from_bytes('\x000200003c007e00');
SELECT halfvec_from_bytes('\x000200003c00fc01');
-- too short or too long
SELECT halfvec_from_bytes('\x000300003c004000');
SELECT halfvec_from_bytes('\x0003');
SELECT halfvec_from_bytes('\x');
SELECT halfvec_from_bytes('\x000100003c0000');

-- Every finite half value, in four vectors of 15872 elements (bit patterns 0x0000-0x7bff and
-- 0x8000-0xfbff): the text output, and that it reads back to the same bits.
CREATE TABLE halfvec_all (part int, bytes bytea, txt text);
INSERT INTO halfvec_all (part, bytes)
  SELECT p, '\x3e000000'::bytea || decode(string_agg(lpad(to_hex(b), 4, '0'), '' ORDER BY b), 'hex')
  FROM (SELECT s / 15872 AS p, CASE WHEN s < 31744 THEN s ELSE s - 31744 + 32768 END AS b
        FROM generate_series(0, 63487) s) t
  GROUP BY p;
UPDATE halfvec_all SET txt = halfvec_from_bytes(bytes);
SELECT part, length(txt), md5(txt), left(txt, 60), right(txt, 60) FROM halfvec_all ORDER BY part;
SELECT part, halfvec_send(txt::halfvec) = bytes AS same_bits FROM halfvec_all ORDER BY part;
DROP TABLE halfvec_all;
DROP FUNCTION halfvec_from_bytes(bytea, int);
DROP TABLE halfvec_raw, halfvec_bin, halfvec_bin_back, halfvec_bin_typmod;
