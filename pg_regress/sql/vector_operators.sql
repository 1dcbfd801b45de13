-- Operators on vector: distances, arithmetic, concatenation, comparisons.

-- distance operators
SELECT '[0,0]'::vector <-> '[3,4]', '[1,2]'::vector <#> '[3,4]', '[1,2]'::vector <=> '[2,4]',
       '[0,0]'::vector <+> '[3,4]';
SELECT '[1,2]'::vector <-> '[1]';
SELECT '[1,2]'::vector <#> '[1]';
SELECT '[1,2]'::vector <=> '[1]';
SELECT '[1,2]'::vector <+> '[1]';
SELECT '[1,2]'::vector <=> '[0,0]';
SELECT NULL::vector <-> '[1]', '[1]'::vector <#> NULL;

-- addition
SELECT '[1,2,3]'::vector + '[4,5,6]';
SELECT '[0.1,-0.2]'::vector + '[0.2,0.2]';
SELECT '[3e38]'::vector + '[3e38]';
SELECT '[1,3e38]'::vector + '[1,3e38]';
SELECT '[-3e38]'::vector + '[-3e38]';
SELECT '[1,2]'::vector + '[3]';

-- subtraction
SELECT '[1,2,3]'::vector - '[4,5,6]';
SELECT '[1,2]'::vector - '[1,2]';
SELECT '[-3e38]'::vector - '[3e38]';
SELECT '[3e38]'::vector - '[-3e38]';
SELECT '[1,2]'::vector - '[3]';

-- multiplication
SELECT '[1,2,3]'::vector * '[4,5,6]';
SELECT '[1.5,-2]'::vector * '[0,0.25]';
SELECT '[-0,1]'::vector * '[1,-0]';
SELECT '[1e37]'::vector * '[1e37]';
SELECT '[1e-30]'::vector * '[1e-30]';
SELECT '[1e-30,1e37]'::vector * '[1e-30,1e37]';
SELECT '[1e37,1e-30]'::vector * '[1e37,1e-30]';
SELECT '[1e-30,0]'::vector * '[1e-20,0]';
SELECT '[1e-40]'::vector * '[0.5]';
SELECT '[1,2]'::vector * '[3]';

-- concatenation
SELECT '[1,2]'::vector || '[3]';
SELECT '[1]'::vector || '[1]' || '[2,3]';
SELECT vector_dims(array_fill(1, ARRAY[8000])::vector || array_fill(2, ARRAY[8000])::vector);
SELECT array_fill(1, ARRAY[8000])::vector || array_fill(2, ARRAY[8001])::vector;

-- function forms of the operators
SELECT vector_add('[1,2]', '[3,4]'), vector_sub('[1,2]', '[3,4]'), vector_mul('[1,2]', '[3,4]'),
       vector_concat('[1,2]', '[3,4]');

-- comparisons
SELECT '[1,2,3]'::vector = '[1,2,3]', '[1,2,3]'::vector = '[1,2,4]', '[1,2]'::vector = '[1,2,3]';
SELECT '[1,2,3]'::vector <> '[1,2,3]', '[1,2,3]'::vector <> '[1,2,4]';
SELECT '[-0]'::vector = '[0]', '[-0]'::vector < '[0]';
SELECT a, b, a < b AS lt, a <= b AS le, a = b AS eq, a <> b AS ne, a >= b AS ge, a > b AS gt,
       vector_cmp(a, b) AS cmp
FROM (VALUES ('[1,2,3]'::vector), ('[1,2]'), ('[1,3]'), ('[0,9,9,9]'), ('[2]')) x(a),
     (VALUES ('[1,2,3]'::vector), ('[1,2]'), ('[2]')) y(b)
ORDER BY a, b;
SELECT vector_lt('[1]', '[2]'), vector_le('[2]', '[2]'), vector_eq('[2]', '[2]'),
       vector_ne('[2]', '[2]'), vector_ge('[1]', '[2]'), vector_gt('[3]', '[2]');
SELECT vector_cmp('[1]', '[1]'), vector_cmp('[1]', '[1,1]'), vector_cmp('[2]', '[1,1]');

-- operator catalog properties
SELECT o.oprname, o.oprleft::regtype, o.oprright::regtype, o.oprresult::regtype,
       o.oprcode, c.oprname AS commutator, n.oprname AS negator, o.oprrest, o.oprjoin,
       o.oprcanmerge, o.oprcanhash
FROM pg_operator o
LEFT JOIN pg_operator c ON c.oid = o.oprcom
LEFT JOIN pg_operator n ON n.oid = o.oprnegate
WHERE o.oprleft = 'vector'::regtype OR o.oprright = 'vector'::regtype
ORDER BY o.oprname, o.oprright::regtype::text;
