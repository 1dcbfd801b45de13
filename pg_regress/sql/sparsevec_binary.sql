-- sparsevec binary send/receive through COPY (FORMAT binary), including malformed input.
-- A bytea's binary form is its raw bytes, so a COPY of one bytea column produces a file whose
-- single field is exactly the bytes we choose; copying it into a sparsevec column feeds those
-- bytes to sparsevec_recv. The files live in the server's data directory so that concurrent
-- runs on other servers do not share them; errors are shown tersely so the path never appears.
\set VERBOSITY terse

CREATE FUNCTION copy_file() RETURNS text LANGUAGE sql
AS $$ SELECT current_setting('data_directory') || '/pg_regress_sparsevec.copy' $$;

CREATE TABLE sparsevec_bin (v sparsevec);
INSERT INTO sparsevec_bin VALUES
  ('{1:1.5,3:-2}/5'), ('{}/1'), ('{1000000000:3.4028235e38}/1000000000'), (NULL),
  ('{1:1e-45,2:0.1,3:16777217}/3');
CREATE TABLE sparsevec_bin_back (v sparsevec);
DO $$
BEGIN
  EXECUTE format('COPY sparsevec_bin TO %L (FORMAT binary)', copy_file());
  EXECUTE format('COPY sparsevec_bin_back FROM %L (FORMAT binary)', copy_file());
END
$$;
SELECT * FROM sparsevec_bin_back;
SELECT count(*) FROM sparsevec_bin a JOIN sparsevec_bin_back b ON a.v = b.v;

-- the send format itself
SELECT sparsevec_send('{1:1.5,3:-2}/5');
SELECT sparsevec_send('{}/7');

-- feed chosen bytes to recv
CREATE TABLE raw_bytes (b bytea);
CREATE FUNCTION sparsevec_recv_test(bytes bytea, typmod int DEFAULT -1) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM raw_bytes;
  INSERT INTO raw_bytes VALUES (bytes);
  EXECUTE format('COPY raw_bytes TO %L (FORMAT binary)', copy_file());
  DROP TABLE IF EXISTS recv_target;
  IF typmod = -1 THEN
    CREATE TEMP TABLE recv_target (v sparsevec);
  ELSE
    EXECUTE format('CREATE TEMP TABLE recv_target (v sparsevec(%s))', typmod);
  END IF;
  EXECUTE format('COPY recv_target FROM %L (FORMAT binary)', copy_file());
  RETURN QUERY SELECT v::text FROM recv_target;
END
$$;
SET client_min_messages = warning;

-- well-formed
SELECT sparsevec_recv_test('\x00000005000000020000000000000000000000033fc00000c0000000');
SELECT sparsevec_recv_test('\x000000010000000000000000');
SELECT sparsevec_recv_test('\x00000005000000020000000000000000000000033fc00000c0000000', 5);
-- typmod mismatch
SELECT sparsevec_recv_test('\x00000005000000020000000000000000000000033fc00000c0000000', 4);
-- dimensions
SELECT sparsevec_recv_test('\x000000000000000000000000');
SELECT sparsevec_recv_test('\xffffffff0000000000000000');
SELECT sparsevec_recv_test('\x3b9aca010000000000000000');
SELECT sparsevec_recv_test('\x7fffffff0000000000000000');
-- element counts
SELECT sparsevec_recv_test('\x00000005ffffffff00000000');
SELECT sparsevec_recv_test('\x80000000ffffffff00000000');
SELECT sparsevec_recv_test('\x0001000000003e8100000000');
SELECT sparsevec_recv_test('\x000000020000000300000000');
SELECT sparsevec_recv_test('\x0000000200007fff00000000');
-- unused field
SELECT sparsevec_recv_test('\x000000050000000000000001');
SELECT sparsevec_recv_test('\x0000000500000000ffffffff');
-- indices
SELECT sparsevec_recv_test('\x0000000500000001000000000000000540000000');
SELECT sparsevec_recv_test('\x000000050000000100000000ffffffff40000000');
SELECT sparsevec_recv_test('\x0000000500000001000000008000000040000000');
SELECT sparsevec_recv_test('\x00000005000000020000000000000003000000013f8000003f800000');
SELECT sparsevec_recv_test('\x00000005000000020000000000000001000000013f8000003f800000');
SELECT sparsevec_recv_test('\x000000050000000200000000000000030000000940000000');
-- values
SELECT sparsevec_recv_test('\x00000005000000010000000000000001' || '\x00000000'::bytea);
SELECT sparsevec_recv_test('\x00000005000000010000000000000001' || '\x80000000'::bytea);
SELECT sparsevec_recv_test('\x00000005000000010000000000000001' || '\x7fc00000'::bytea);
SELECT sparsevec_recv_test('\x00000005000000010000000000000001' || '\x7f800000'::bytea);
SELECT sparsevec_recv_test('\x00000005000000010000000000000001' || '\xff800000'::bytea);
SELECT sparsevec_recv_test('\x00000005000000010000000000000001' || '\x00000001'::bytea);
SELECT sparsevec_recv_test('\x0000000500000002000000000000000100000002' || '\x3f80000000000000'::bytea);
-- short and long messages
SELECT sparsevec_recv_test('\x');
SELECT sparsevec_recv_test('\x00000005');
SELECT sparsevec_recv_test('\x0000000500000002000000000000000100000002');
SELECT sparsevec_recv_test('\x00000005000000020000000000000001000000023f800000');
SELECT sparsevec_recv_test('\x00000005000000000000000000');
SELECT sparsevec_recv_test('\x00000005000000010000000000000001' || '\x3f80000000000000'::bytea);

RESET client_min_messages;
DROP FUNCTION sparsevec_recv_test(bytea, int);
DROP FUNCTION copy_file();
DROP TABLE raw_bytes, sparsevec_bin, sparsevec_bin_back;
