-- halfvec operators: arithmetic, concatenation, distances and comparisons.

-- + - * on halves: computed in single precision, then rounded to half.
SELECT '[1,2,3]'::halfvec + '[4,5,6]';
SELECT '[1,2,3]'::halfvec - '[4,5,6]';
SELECT '[1,2,3]'::halfvec * '[4,5,6]';
SELECT '[0.1,0.2,0.3]'::halfvec + '[0.7,0.8,0.9]';
SELECT '[0.1,0.2,0.3]'::halfvec - '[0.7,0.8,0.9]';
SELECT '[0.1,0.2,0.3]'::halfvec * '[0.7,0.8,0.9]';
SELECT '[2048,1,-0]'::halfvec + '[1,0.00048828125,-0]';
SELECT '[2048,2050]'::halfvec + '[1,1]';
SELECT '[1,-0]'::halfvec - '[1,0]';
SELECT '[65504]'::halfvec + '[15]';
SELECT '[65504]'::halfvec - '[-15]';
SELECT '[256,-256]'::halfvec * '[255.875,255.875]';
SELECT '[5.9604645e-08]'::halfvec * '[0.5]';
SELECT '[5.9604645e-08]'::halfvec * '[0.75]';
SELECT '[0.001,0]'::halfvec * '[0.001,0]';

-- overflow and underflow
SELECT '[65504]'::halfvec + '[16]';
SELECT '[1,65504]'::halfvec + '[1,65504]';
SELECT '[-65504]'::halfvec - '[65504]';
SELECT '[65504,1]'::halfvec - '[-65504,1]';
SELECT '[256]'::halfvec * '[256]';
SELECT '[1e-4]'::halfvec * '[1e-4]';
SELECT '[1e-4,0]'::halfvec * '[1e-4,1]';
SELECT '[0,1e-4]'::halfvec * '[1,1e-4]';
SELECT '[1e-4,65504]'::halfvec * '[1e-4,2]';
SELECT '[65504,1e-4]'::halfvec * '[2,1e-4]';
SELECT '[5.9604645e-08]'::halfvec * '[0.25]';
SELECT '[-0,1]'::halfvec * '[1e-4,1]';

-- dimension mismatch
SELECT '[1,2]'::halfvec + '[3]';
SELECT '[1,2]'::halfvec - '[3]';
SELECT '[1,2]'::halfvec * '[3]';

-- concatenation
SELECT '[1,2,3]'::halfvec || '[4,5]';
SELECT '[1]'::halfvec || '[65504]';
SELECT vector_dims(array_fill(1, ARRAY[8000])::halfvec || array_fill(2, ARRAY[8000])::halfvec);
SELECT array_fill(1, ARRAY[8000])::halfvec || array_fill(2, ARRAY[8001])::halfvec;
SELECT array_fill(1, ARRAY[16000])::halfvec || '[1]'::halfvec;

-- distance operators
SELECT '[0,0]'::halfvec <-> '[3,4]';
SELECT '[1,2]'::halfvec <#> '[3,4]';
SELECT '[1,2]'::halfvec <=> '[2,4]';
SELECT '[1,2]'::halfvec <=> '[0,0]';
SELECT '[0,0]'::halfvec <+> '[3,4]';
SELECT '[1,2]'::halfvec <-> '[3]';
SELECT '[1,2]'::halfvec <#> '[3]';
SELECT '[1,2]'::halfvec <=> '[3]';
SELECT '[1,2]'::halfvec <+> '[3]';
SELECT '[0.1,0.2,0.3]'::halfvec <-> '[0.3,0.2,0.1]', '[0.1,0.2,0.3]'::halfvec <#> '[0.3,0.2,0.1]',
       '[0.1,0.2,0.3]'::halfvec <=> '[0.3,0.2,0.1]', '[0.1,0.2,0.3]'::halfvec <+> '[0.3,0.2,0.1]';

-- comparisons: elementwise as float4, then by dimension count
SELECT '[1,2,3]'::halfvec < '[1,2,3]', '[1,2,3]'::halfvec <= '[1,2,3]',
       '[1,2,3]'::halfvec = '[1,2,3]', '[1,2,3]'::halfvec <> '[1,2,3]',
       '[1,2,3]'::halfvec >= '[1,2,3]', '[1,2,3]'::halfvec > '[1,2,3]';
SELECT '[1,2,3]'::halfvec < '[1,2,4]', '[1,2,3]'::halfvec <= '[1,2,4]',
       '[1,2,3]'::halfvec = '[1,2,4]', '[1,2,3]'::halfvec <> '[1,2,4]',
       '[1,2,3]'::halfvec >= '[1,2,4]', '[1,2,3]'::halfvec > '[1,2,4]';
SELECT '[1,2]'::halfvec < '[1,2,0]', '[1,2,0]'::halfvec > '[1,2]', '[1,2]'::halfvec = '[1,2,0]';
SELECT '[2]'::halfvec > '[1,9]', '[1,3]'::halfvec > '[1,2,9]';
SELECT '[0]'::halfvec = '[-0]', '[0]'::halfvec < '[-0]', '[0]'::halfvec > '[-0]';
SELECT '[0.1]'::halfvec = '[0.099975586]', '[0.1]'::halfvec = '[0.1001]';
SELECT '[-65504]'::halfvec < '[-5.9604645e-08]', '[5.9604645e-08]'::halfvec > '[0]';
SELECT halfvec_cmp('[1,2]', '[1,3]'), halfvec_cmp('[1,3]', '[1,2]'), halfvec_cmp('[1,2]', '[1,2]'),
       halfvec_cmp('[1,2]', '[1,2,3]'), halfvec_cmp('[1,2,3]', '[1,2]'), halfvec_cmp('[-0]', '[0]');
SELECT halfvec_lt('[1]', '[2]'), halfvec_le('[2]', '[2]'), halfvec_eq('[2]', '[2]'),
       halfvec_ne('[1]', '[2]'), halfvec_ge('[1]', '[2]'), halfvec_gt('[3]', '[2]');

-- operators by name and NULL handling
SELECT NULL::halfvec + '[1]', '[1]'::halfvec - NULL, NULL::halfvec * NULL, '[1]'::halfvec || NULL,
       NULL::halfvec <-> '[1]', '[1]'::halfvec < NULL, NULL::halfvec = NULL;
SELECT halfvec_add('[1,2]', '[3,4]'), halfvec_sub('[1,2]', '[3,4]'), halfvec_mul('[1,2]', '[3,4]'),
       halfvec_concat('[1,2]', '[3,4]');

-- commutators and negators let the planner flip comparisons
CREATE TABLE halfvec_ops_t (id int, v halfvec);
INSERT INTO halfvec_ops_t VALUES (1, '[1,1]'), (2, '[2,2]'), (3, '[3,3]'), (4, NULL);
SELECT id FROM halfvec_ops_t WHERE '[2,2]' < v ORDER BY id;
SELECT id FROM halfvec_ops_t WHERE '[2,2]' <= v ORDER BY id;
SELECT id FROM halfvec_ops_t WHERE '[2,2]' = v ORDER BY id;
SELECT id FROM halfvec_ops_t WHERE '[2,2]' <> v ORDER BY id;
SELECT id FROM halfvec_ops_t WHERE '[2,2]' >= v ORDER BY id;
SELECT id FROM halfvec_ops_t WHERE '[2,2]' > v ORDER BY id;
SELECT id FROM halfvec_ops_t WHERE NOT (v < '[2,2]') ORDER BY id;
SELECT id, v <-> '[0,0]' AS l2, v <#> '[1,1]' AS nip, v <=> '[1,0]' AS cos, v <+> '[0,0]' AS l1
  FROM halfvec_ops_t ORDER BY v <-> '[3,3]', id;
SELECT a.id, b.id FROM halfvec_ops_t a JOIN halfvec_ops_t b ON a.v = b.v ORDER BY 1;
DROP TABLE halfvec_ops_t;
