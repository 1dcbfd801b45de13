//! Bit-identity with pgvector 0.8.6 as shipped.
//!
//! `tests/data/pgvector-0.8.6-golden.tsv` holds the outputs of the pristine
//! pgvector 0.8.6 build for deterministic inputs, as `float8send` /
//! `*_send` hex. Each line is `type  spec_a  spec_b  expected...` where a
//! spec is `gen:<distribution>:<size>:<seed>` (regenerated with
//! `common::gen_*`) or `lit:<text>` (pgvector's text format).
//!
//! To regenerate: `GOLDEN_SQL_OUT=/tmp/golden.sql cargo test -p
//! vector-distance --test golden -- --ignored emit_golden_sql`, then run the
//! script with `psql -X -At -F $'\t' -f /tmp/golden.sql` against a server
//! with the reference pgvector installed (`CREATE EXTENSION vector` first)
//! and save the output as the TSV.

mod common;

use common::*;
use vector_distance::half::f16;
use vector_distance::sparse::SparseRef;
use vector_distance::{bits, f16 as h, f32 as v, sparse};

const GOLDEN: &str = include_str!("data/pgvector-0.8.6-golden.tsv");

const DIMS: &[usize] = &[
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
    27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 128, 768, 1536, 1999,
];

// ---------------------------------------------------------------------------
// Inputs.
// ---------------------------------------------------------------------------

enum Spec<'a> {
    Gen(&'a str, usize, u64),
    Lit(&'a str),
}

fn parse_spec(spec: &str) -> Spec<'_> {
    if let Some(text) = spec.strip_prefix("lit:") {
        return Spec::Lit(text);
    }
    let mut parts = spec.strip_prefix("gen:").expect("spec").split(':');
    let dist = parts.next().expect("distribution");
    let size = parts.next().expect("size").parse().expect("size");
    let seed = parts.next().expect("seed").parse().expect("seed");
    Spec::Gen(dist, size, seed)
}

fn f32_input(spec: &str) -> Vec<f32> {
    match parse_spec(spec) {
        Spec::Gen(d, n, s) => gen_f32(d, n, s),
        Spec::Lit(t) => parse_f32(t),
    }
}

fn f16_input(spec: &str) -> Vec<f16> {
    match parse_spec(spec) {
        Spec::Gen(d, n, s) => gen_f16(d, n, s),
        Spec::Lit(t) => parse_f16(t),
    }
}

fn sparse_input(spec: &str) -> (usize, Vec<i32>, Vec<f32>) {
    match parse_spec(spec) {
        Spec::Gen(d, n, s) => gen_sparse(d, n, s),
        Spec::Lit(t) => parse_sparse(t),
    }
}

fn bits_input(spec: &str) -> (Vec<u8>, usize) {
    match parse_spec(spec) {
        Spec::Gen(d, n, s) => (gen_bits(d, n, s), n),
        Spec::Lit(t) => parse_bits(t),
    }
}

// ---------------------------------------------------------------------------
// Encodings of pgvector's binary send functions.
// ---------------------------------------------------------------------------

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn f8(x: f64) -> String {
    hex(&x.to_bits().to_be_bytes())
}

fn vector_send(x: &[f32]) -> String {
    let mut out = Vec::new();
    out.extend_from_slice(&(x.len() as i16).to_be_bytes());
    out.extend_from_slice(&0i16.to_be_bytes());
    for v in x {
        out.extend_from_slice(&v.to_bits().to_be_bytes());
    }
    hex(&out)
}

fn halfvec_send(x: &[f16]) -> String {
    let mut out = Vec::new();
    out.extend_from_slice(&(x.len() as i16).to_be_bytes());
    out.extend_from_slice(&0i16.to_be_bytes());
    for v in x {
        out.extend_from_slice(&v.to_bits().to_be_bytes());
    }
    hex(&out)
}

fn sparsevec_send(dim: usize, indices: &[i32], values: &[f32]) -> String {
    let mut out = Vec::new();
    out.extend_from_slice(&(dim as i32).to_be_bytes());
    out.extend_from_slice(&(indices.len() as i32).to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    for i in indices {
        out.extend_from_slice(&i.to_be_bytes());
    }
    for v in values {
        out.extend_from_slice(&v.to_bits().to_be_bytes());
    }
    hex(&out)
}

// ---------------------------------------------------------------------------
// Our results, in the column order of the golden file.
// ---------------------------------------------------------------------------

const VECTOR_COLUMNS: &[&str] = &[
    "l2_distance",
    "vector_l2_squared_distance",
    "inner_product",
    "vector_negative_inner_product",
    "cosine_distance",
    "vector_spherical_distance",
    "l1_distance",
    "vector_norm(a)",
    "l2_normalize(a)",
];
const HALFVEC_COLUMNS: &[&str] = &[
    "l2_distance",
    "halfvec_l2_squared_distance",
    "inner_product",
    "halfvec_negative_inner_product",
    "cosine_distance",
    "halfvec_spherical_distance",
    "l1_distance",
    "l2_norm(a)",
    "l2_normalize(a)",
];
const SPARSEVEC_COLUMNS: &[&str] = &[
    "l2_distance",
    "sparsevec_l2_squared_distance",
    "inner_product",
    "sparsevec_negative_inner_product",
    "cosine_distance",
    "l1_distance",
    "l2_norm(a)",
    "l2_normalize(a)",
];
const BIT_COLUMNS: &[&str] = &["hamming_distance", "jaccard_distance"];

fn ours(kind: &str, sa: &str, sb: &str) -> Vec<String> {
    match kind {
        "vector" => {
            let (a, b) = (f32_input(sa), f32_input(sb));
            vec![
                f8(v::l2_distance(&a, &b)),
                f8(v::l2_squared_distance(&a, &b)),
                f8(v::inner_product(&a, &b)),
                f8(v::negative_inner_product(&a, &b)),
                f8(v::cosine_distance(&a, &b)),
                f8(v::spherical_distance(&a, &b)),
                f8(v::l1_distance(&a, &b)),
                f8(v::norm(&a)),
                vector_send(&v::l2_normalize(&a)),
            ]
        }
        "halfvec" => {
            let (a, b) = (f16_input(sa), f16_input(sb));
            vec![
                f8(h::l2_distance(&a, &b)),
                f8(h::l2_squared_distance(&a, &b)),
                f8(h::inner_product(&a, &b)),
                f8(h::negative_inner_product(&a, &b)),
                f8(h::cosine_distance(&a, &b)),
                f8(h::spherical_distance(&a, &b)),
                f8(h::l1_distance(&a, &b)),
                f8(h::norm(&a)),
                halfvec_send(&h::l2_normalize(&a)),
            ]
        }
        "sparsevec" => {
            let (dim, ai, ax) = sparse_input(sa);
            let (_, bi, bx) = sparse_input(sb);
            let (a, b) = (SparseRef::new(&ai, &ax), SparseRef::new(&bi, &bx));
            let (ni, nx) = sparse::l2_normalize(a);
            vec![
                f8(sparse::l2_distance(a, b)),
                f8(sparse::l2_squared_distance(a, b)),
                f8(sparse::inner_product(a, b)),
                f8(sparse::negative_inner_product(a, b)),
                f8(sparse::cosine_distance(a, b)),
                f8(sparse::l1_distance(a, b)),
                f8(sparse::norm(a)),
                sparsevec_send(dim, &ni, &nx),
            ]
        }
        "bit" => {
            let ((a, n), (b, _)) = (bits_input(sa), bits_input(sb));
            vec![
                f8(bits::hamming_distance(&a, &b, n)),
                f8(bits::jaccard_distance(&a, &b, n)),
            ]
        }
        _ => panic!("unknown type {kind}"),
    }
}

fn columns(kind: &str) -> &'static [&'static str] {
    match kind {
        "vector" => VECTOR_COLUMNS,
        "halfvec" => HALFVEC_COLUMNS,
        "sparsevec" => SPARSEVEC_COLUMNS,
        "bit" => BIT_COLUMNS,
        _ => panic!("unknown type {kind}"),
    }
}

fn is_nan_hex(s: &str) -> bool {
    s.len() == 16 && u64::from_str_radix(s, 16).is_ok_and(|b| f64::from_bits(b).is_nan())
}

fn same(expected: &str, actual: &str) -> bool {
    expected == actual || (is_nan_hex(expected) && is_nan_hex(actual))
}

fn golden_lines() -> impl Iterator<Item = Vec<&'static str>> {
    GOLDEN
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split('\t').collect())
}

#[test]
fn golden_bit_identical_to_pgvector() {
    let mut checked = 0usize;
    let mut failures = Vec::new();
    for cols in golden_lines() {
        let (kind, sa, sb, expected) = (cols[0], cols[1], cols[2], &cols[3..]);
        let names = columns(kind);
        assert_eq!(expected.len(), names.len(), "bad golden line for {kind}");
        for ((name, exp), act) in names.iter().zip(expected).zip(ours(kind, sa, sb)) {
            if *exp == "-" {
                // Not recorded for this input (keeps the file small).
                continue;
            }
            checked += 1;
            if !same(exp, &act) {
                let short = |s: &str| s.chars().take(60).collect::<String>();
                failures.push(format!(
                    "{kind} {name} a={} b={}: pgvector {} ours {}",
                    short(sa),
                    short(sb),
                    short(exp),
                    short(&act)
                ));
            }
        }
    }
    eprintln!("compared {checked} values with pgvector 0.8.6");
    assert!(checked > 5000, "golden file too small: {checked} values");
    assert!(
        failures.is_empty(),
        "{} of {checked} values differ from pgvector:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The golden values must be able to tell plausible wrong summation orders
/// apart from the reference order; otherwise the test above proves little.
#[test]
fn golden_rejects_other_summation_orders() {
    // Wrong order 1: plain sequential float loop.
    let sequential = |a: &[f32], b: &[f32]| {
        let mut s = 0.0f32;
        for (x, y) in a.iter().zip(b) {
            s += (x - y) * (x - y);
        }
        s
    };
    // Wrong order 2: the reference shape, but without FMA in the 4-lane step.
    let no_fma_step = |a: &[f32], b: &[f32]| {
        let n = a.len();
        let sq = |i: usize| (a[i] - b[i]) * (a[i] - b[i]);
        let hsum = |v: [f32; 4]| (v[3] + v[1]) + (v[2] + v[0]);
        let (mut acc4, mut s, mut i) = ([0.0f32; 4], 0.0f32, 0);
        if n >= 8 {
            let mut acc8 = [0.0f32; 8];
            while i + 8 <= n {
                for (j, lane) in acc8.iter_mut().enumerate() {
                    *lane += sq(i + j);
                }
                i += 8;
            }
            acc4 = std::array::from_fn(|j| acc8[j + 4] + acc8[j]);
            s = hsum(acc4);
        }
        if n - i >= 4 {
            for (j, lane) in acc4.iter_mut().enumerate() {
                *lane += sq(i + j);
            }
            s = hsum(acc4);
            i += 4;
        }
        for k in i..n {
            s += sq(k);
        }
        s
    };
    // Wrong order 3: 8 lanes summed left to right at the end.
    let lanes_in_order = |a: &[f32], b: &[f32]| {
        let mut acc8 = [0.0f32; 8];
        let mut i = 0;
        while i + 8 <= a.len() {
            for (j, lane) in acc8.iter_mut().enumerate() {
                *lane += (a[i + j] - b[i + j]) * (a[i + j] - b[i + j]);
            }
            i += 8;
        }
        let mut s = acc8.iter().sum::<f32>();
        for k in i..a.len() {
            s += (a[k] - b[k]) * (a[k] - b[k]);
        }
        s
    };
    type Order<'a> = &'a dyn Fn(&[f32], &[f32]) -> f32;
    let orders: [(&str, Order); 3] = [
        ("sequential", &sequential),
        ("no FMA in 4-lane step", &no_fma_step),
        ("lanes in order", &lanes_in_order),
    ];
    for (name, order) in orders {
        let mut differing = 0;
        for cols in golden_lines().filter(|c| c[0] == "vector") {
            let (a, b) = (f32_input(cols[1]), f32_input(cols[2]));
            if !same(cols[3 + 1], &f8(f64::from(order(&a, &b)))) {
                differing += 1;
            }
        }
        eprintln!("'{name}' order differs from pgvector in {differing} vector cases");
        assert!(
            differing > 0,
            "golden data cannot distinguish the '{name}' order"
        );
    }
}

// ---------------------------------------------------------------------------
// Generation of the SQL that produces the golden file.
// ---------------------------------------------------------------------------

fn gen(dist: &str, size: usize, seed: u64) -> String {
    format!("gen:{dist}:{size}:{seed}")
}

fn spec_text(kind: &str, spec: &str) -> String {
    match (kind, parse_spec(spec)) {
        (_, Spec::Lit(t)) => t.to_string(),
        ("vector", Spec::Gen(d, n, s)) => f32_text(&gen_f32(d, n, s)),
        ("halfvec", Spec::Gen(d, n, s)) => f16_text(&gen_f16(d, n, s)),
        ("sparsevec", Spec::Gen(d, n, s)) => {
            let (dim, i, x) = gen_sparse(d, n, s);
            sparse_text(dim, &i, &x)
        }
        ("bit", Spec::Gen(d, n, s)) => bits_text(&gen_bits(d, n, s), n),
        _ => unreachable!(),
    }
}

fn golden_cases() -> Vec<(&'static str, String, String)> {
    let mut cases = Vec::new();
    let mut seed = 1000u64;
    let mut pair = |kind: &'static str, da: &str, db: &str, n: usize| {
        seed += 2;
        (kind, gen(da, n, seed), gen(db, n, seed + 1))
    };
    for &n in DIMS {
        for (da, db) in [("u", "u"), ("w", "w"), ("n", "n"), ("z", "u"), ("i", "i")] {
            cases.push(pair("vector", da, db, n));
        }
        for (da, db) in [("u", "u"), ("w", "w"), ("n", "n"), ("z", "u"), ("h", "h")] {
            cases.push(pair("halfvec", da, db, n));
        }
        for (da, db) in [
            ("h", "h"),
            ("lo", "h"),
            ("h", "lo"),
            ("hi", "lo"),
            ("f", "f"),
            ("hw", "hw"),
        ] {
            cases.push(pair("sparsevec", da, db, n));
        }
        for (da, db) in [("h", "h"), ("s", "s"), ("s", "h"), ("0", "h")] {
            cases.push(pair("bit", da, db, n));
        }
    }
    for &n in &[1usize, 7, 8, 13, 40, 768] {
        cases.push(pair("vector", "s", "s", n));
        cases.push(pair("vector", "h", "h", n));
    }
    let lit = |kind, a: &str, b: &str| (kind, format!("lit:{a}"), format!("lit:{b}"));
    for (a, b) in [
        ("[0,0,0]", "[1,2,3]"),
        ("[0]", "[0]"),
        ("[1,0]", "[0,1]"),
        ("[1,2,3]", "[2,4,6]"),
        ("[1,2,3]", "[-2,-4,-6]"),
        ("[3e38,3e38]", "[-3e38,3e38]"),
        ("[3e38,-3e38,1,1,1,1,1,1,1]", "[3e38,3e38,1,1,1,1,1,1,1]"),
        ("[1e-45,1e-40,1e-38]", "[1e-45,-1e-40,1e-38]"),
        ("[1,0,0,0,0]", "[1,0,0,0,0]"),
        ("[0.6,0.8]", "[0.6,0.8]"),
        ("[2,0]", "[1,0]"),
        ("[-2,0]", "[1,0]"),
        ("[-0,1]", "[1,0]"),
    ] {
        cases.push(lit("vector", a, b));
    }
    for (a, b) in [
        ("[0,0]", "[1,1]"),
        ("[1,0]", "[0,1]"),
        ("[65504,65504,65504]", "[-65504,65504,65504]"),
        ("[1,2,3]", "[2,4,6]"),
        ("[5.9604645e-8,0.5]", "[5.9604645e-8,0.5]"),
        ("[1,0]", "[1,0]"),
    ] {
        cases.push(lit("halfvec", a, b));
    }
    for (a, b) in [
        ("{}/5", "{}/5"),
        ("{}/5", "{1:1,3:2}/5"),
        ("{1:1,3:2}/5", "{}/5"),
        ("{2:1}/3", "{1:1}/3"),
        ("{1:3e38,2:3e38}/2", "{1:-3e38,2:3e38}/2"),
        ("{1:1e-45,2:1}/2", "{1:1}/2"),
        ("{1:1e-45,2:3e38}/2", "{2:1}/2"),
    ] {
        cases.push(lit("sparsevec", a, b));
    }
    for (a, b) in [("0", "0"), ("1", "1"), ("0000", "1111"), ("0000", "0000")] {
        cases.push(lit("bit", a, b));
    }
    cases
}

fn send_or_skip(record: bool, expr: &str) -> String {
    if record {
        expr.to_string()
    } else {
        "'-'".to_string()
    }
}

#[test]
#[ignore = "generates the SQL script for the golden file; needs GOLDEN_SQL_OUT"]
fn emit_golden_sql() {
    use std::fmt::Write as _;
    let path = std::env::var("GOLDEN_SQL_OUT").expect("set GOLDEN_SQL_OUT");
    let mut sql = String::from(
        "SET client_min_messages = warning;\n\
         CREATE FUNCTION pg_temp.h(float8) RETURNS text LANGUAGE sql IMMUTABLE \
         AS $$ SELECT encode(float8send($1), 'hex') $$;\n",
    );
    let mut last_size = None;
    for (kind, sa, sb) in golden_cases() {
        let (ta, tb) = (spec_text(kind, &sa), spec_text(kind, &sb));
        // Record `l2_normalize` for every small input, and for large ones
        // only for the first distribution of each size.
        let size = match parse_spec(&sa) {
            Spec::Gen(_, n, _) => Some((kind, n)),
            Spec::Lit(_) => None,
        };
        let first_of_size = size.is_none() || size != last_size;
        last_size = size;
        let normalize = first_of_size || size.is_some_and(|(_, n)| n <= 40);
        let (ty_a, ty_b) = match kind {
            "bit" => (
                format!("bit({})", bits_input(&sa).1),
                format!("bit({})", bits_input(&sb).1),
            ),
            _ => (kind.to_string(), kind.to_string()),
        };
        let exprs: Vec<String> = match kind {
            "vector" => vec![
                "pg_temp.h(l2_distance(a, b))".into(),
                "pg_temp.h(vector_l2_squared_distance(a, b))".into(),
                "pg_temp.h(inner_product(a, b))".into(),
                "pg_temp.h(vector_negative_inner_product(a, b))".into(),
                "pg_temp.h(cosine_distance(a, b))".into(),
                "pg_temp.h(vector_spherical_distance(a, b))".into(),
                "pg_temp.h(l1_distance(a, b))".into(),
                "pg_temp.h(vector_norm(a))".into(),
                send_or_skip(normalize, "encode(vector_send(l2_normalize(a)), 'hex')"),
            ],
            "halfvec" => vec![
                "pg_temp.h(l2_distance(a, b))".into(),
                "pg_temp.h(halfvec_l2_squared_distance(a, b))".into(),
                "pg_temp.h(inner_product(a, b))".into(),
                "pg_temp.h(halfvec_negative_inner_product(a, b))".into(),
                "pg_temp.h(cosine_distance(a, b))".into(),
                "pg_temp.h(halfvec_spherical_distance(a, b))".into(),
                "pg_temp.h(l1_distance(a, b))".into(),
                "pg_temp.h(l2_norm(a))".into(),
                send_or_skip(normalize, "encode(halfvec_send(l2_normalize(a)), 'hex')"),
            ],
            "sparsevec" => vec![
                "pg_temp.h(l2_distance(a, b))".into(),
                "pg_temp.h(sparsevec_l2_squared_distance(a, b))".into(),
                "pg_temp.h(inner_product(a, b))".into(),
                "pg_temp.h(sparsevec_negative_inner_product(a, b))".into(),
                "pg_temp.h(cosine_distance(a, b))".into(),
                "pg_temp.h(l1_distance(a, b))".into(),
                "pg_temp.h(l2_norm(a))".into(),
                send_or_skip(normalize, "encode(sparsevec_send(l2_normalize(a)), 'hex')"),
            ],
            "bit" => vec![
                "pg_temp.h(hamming_distance(a, b))".into(),
                "pg_temp.h(jaccard_distance(a, b))".into(),
            ],
            _ => unreachable!(),
        };
        writeln!(
            sql,
            "SELECT '{kind}', '{sa}', '{sb}', {} FROM (SELECT '{ta}'::{ty_a} AS a, '{tb}'::{ty_b} AS b) t;",
            exprs.join(", ")
        )
        .unwrap();
    }
    std::fs::write(path, sql).expect("write SQL");
}

/// The portable kernels (used on CPUs without AVX/FMA/F16C) must reproduce
/// the golden values as well.
#[test]
fn golden_portable_kernels() {
    let k = vector_distance::portable_kernels();
    let cosine = |[ab, aa, bb]: [f32; 3]| {
        let sim = f64::from(ab) / (f64::from(aa) * f64::from(bb)).sqrt();
        1.0 - sim.clamp(-1.0, 1.0)
    };
    let mut checked = 0;
    for cols in golden_lines() {
        let (kind, sa, sb) = (cols[0], cols[1], cols[2]);
        let exp = |name: &str| cols[3 + columns(kind).iter().position(|c| *c == name).unwrap()];
        let mut check = |name: &str, actual: f64| {
            checked += 1;
            assert!(
                same(exp(name), &f8(actual)),
                "portable {kind} {name} a={sa} b={sb}"
            );
        };
        match kind {
            "vector" => {
                let (a, b) = (f32_input(sa), f32_input(sb));
                check(
                    "vector_l2_squared_distance",
                    f64::from((k.f32_l2_squared)(&a, &b)),
                );
                check("inner_product", f64::from((k.f32_inner_product)(&a, &b)));
                check("l1_distance", f64::from((k.f32_l1)(&a, &b)));
                check("cosine_distance", cosine((k.f32_cosine_parts)(&a, &b)));
                check("vector_norm(a)", (k.f32_sum_squares)(&a).sqrt());
            }
            "halfvec" => {
                let (a, b) = (f16_input(sa), f16_input(sb));
                check(
                    "halfvec_l2_squared_distance",
                    f64::from((k.f16_l2_squared)(&a, &b)),
                );
                check("inner_product", f64::from((k.f16_inner_product)(&a, &b)));
                check("l1_distance", f64::from((k.f16_l1)(&a, &b)));
                check("cosine_distance", cosine((k.f16_cosine_parts)(&a, &b)));
                check("l2_norm(a)", (k.f16_sum_squares)(&a).sqrt());
            }
            "sparsevec" => {
                let (_, ai, ax) = sparse_input(sa);
                let (_, bi, bx) = sparse_input(sb);
                check(
                    "sparsevec_l2_squared_distance",
                    f64::from((k.sparse_l2_squared)(&ai, &ax, &bi, &bx)),
                );
                check(
                    "inner_product",
                    f64::from((k.sparse_inner_product)(&ai, &ax, &bi, &bx)),
                );
                check("l1_distance", f64::from((k.sparse_l1)(&ai, &ax, &bi, &bx)));
                check("l2_norm(a)", (k.f32_sum_squares)(&ax).sqrt());
            }
            "bit" => {
                let ((a, _), (b, _)) = (bits_input(sa), bits_input(sb));
                check("hamming_distance", (k.bits_hamming)(&a, &b) as f64);
            }
            _ => unreachable!(),
        }
    }
    assert!(checked > 3000);
}
