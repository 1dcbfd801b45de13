-- Hamming and Jaccard distances on Postgres's bit type.

SELECT hamming_distance(B'111', B'000');
SELECT hamming_distance(B'1010', B'0110');
SELECT hamming_distance(B'1', B'1');
SELECT hamming_distance(B'', B'');
SELECT B'1010' <~> B'0110';
SELECT jaccard_distance(B'1010', B'0110');
SELECT jaccard_distance(B'1111', B'1111');
SELECT jaccard_distance(B'0000', B'0000');
SELECT jaccard_distance(B'1000', B'0001');
SELECT jaccard_distance(B'1110', B'0111');
SELECT jaccard_distance(B'', B'');
SELECT B'1010' <%> B'0110';

-- varbit and bit(n) arguments
SELECT hamming_distance('10101'::varbit, '01010'::bit(5));
SELECT jaccard_distance('101'::varbit(8), '111'::varbit);

-- lengths that cover whole 64-bit words, partial words and single bytes
SELECT n, hamming_distance(a, b), jaccard_distance(a, b), a <~> b = hamming_distance(a, b),
       a <%> b = jaccard_distance(a, b)
FROM (SELECT n,
             string_agg(CASE WHEN (i * 7) % 3 = 0 THEN '1' ELSE '0' END, '' ORDER BY i)::varbit AS a,
             string_agg(CASE WHEN (i * 5) % 4 < 2 THEN '1' ELSE '0' END, '' ORDER BY i)::varbit AS b
      FROM generate_series(1, 1500) n, generate_series(1, n) i
      WHERE n IN (1, 7, 8, 9, 63, 64, 65, 127, 128, 129, 511, 512, 513, 1000, 1500)
      GROUP BY n) t
ORDER BY n;

-- pseudo-random bit strings of 256 bits and of shorter prefixes
SELECT n, len, hamming_distance(substring(a FOR len), substring(b FOR len)),
       jaccard_distance(substring(a FOR len), substring(b FOR len))
FROM (SELECT n, ('x' || md5('a' || n) || md5('c' || n))::bit(256) AS a,
             ('x' || md5('b' || n) || md5('d' || n))::bit(256) AS b
      FROM generate_series(1, 6) n) t, (VALUES (256), (200), (77), (3)) l(len)
ORDER BY n, len;

-- all ones and all zeros over many bytes
SELECT hamming_distance(repeat('1', 4096)::varbit, repeat('0', 4096)::varbit);
SELECT jaccard_distance(repeat('1', 4096)::varbit, repeat('0', 4096)::varbit);
SELECT jaccard_distance(repeat('1', 4096)::varbit, repeat('1', 4096)::varbit);
SELECT jaccard_distance(repeat('10', 2048)::varbit, repeat('1', 4096)::varbit);

-- lengths must match
SELECT hamming_distance(B'111', B'00');
SELECT jaccard_distance(B'111', B'00');
SELECT B'1' <~> B'';
SELECT B'' <%> B'11111111111';

-- strict
SELECT hamming_distance(NULL, B'1'), jaccard_distance(B'1', NULL);

-- nearest neighbours
CREATE TABLE bits (id int, b bit(6));
INSERT INTO bits VALUES (1, B'000000'), (2, B'111111'), (3, B'101010'), (4, B'110000'),
  (5, B'000011'), (6, B'100001');
SELECT id, b <~> B'100000' AS hamming, b <%> B'100000' AS jaccard FROM bits ORDER BY id;
SELECT id FROM bits ORDER BY b <~> B'110001', id;
SELECT id FROM bits ORDER BY b <%> B'110001', id;
DROP TABLE bits;

SELECT oprname, oprcode, oprcom::regoperator FROM pg_operator
WHERE oprleft = 'bit'::regtype AND oprname IN ('<~>', '<%>') ORDER BY oprname;
