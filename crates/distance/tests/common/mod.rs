//! Deterministic test-data generators shared by the test files.
#![allow(dead_code)]

use vector_distance::half::f16;

/// SplitMix64.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in [-1, 1) with 24 random bits.
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    /// Random sign, random 23-bit mantissa, exponent in [-30, 30].
    pub fn wide(&mut self) -> f32 {
        let r = self.next_u64();
        let sign = (r & 1) as u32;
        let exp = (127 - 30 + ((r >> 1) % 61)) as u32;
        let mant = ((r >> 8) & 0x7F_FFFF) as u32;
        f32::from_bits((sign << 31) | (exp << 23) | mant)
    }
}

fn normalize(v: &mut [f32]) {
    let n: f64 = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if n > 0.0 {
        for x in v {
            *x = (f64::from(*x) / n) as f32;
        }
    }
}

/// Dense floats. Distributions: `u` uniform, `w` wide exponents, `n` unit
/// length, `z` uniform with ~30% zeros, `i` small integers, `s` subnormal
/// and tiny values, `h` huge values (sums overflow).
pub fn gen_f32(dist: &str, dims: usize, seed: u64) -> Vec<f32> {
    let mut r = Rng::new(seed);
    let mut v: Vec<f32> = (0..dims)
        .map(|_| match dist {
            "u" | "n" => r.unit(),
            "w" => r.wide(),
            "z" => {
                if r.below(10) < 3 {
                    0.0
                } else {
                    r.unit()
                }
            }
            "i" => r.below(17) as f32 - 8.0,
            "s" => r.unit() * 1e-30,
            "h" => r.unit() * 3e38,
            _ => panic!("unknown distribution {dist}"),
        })
        .collect();
    if dist == "n" {
        normalize(&mut v);
    }
    v
}

/// Halves. Distributions: `u` uniform, `w` every finite exponent, `n` unit
/// length, `z` with zeros, `i` small integers, `h` near the maximum.
pub fn gen_f16(dist: &str, dims: usize, seed: u64) -> Vec<f16> {
    let mut r = Rng::new(seed);
    match dist {
        "w" => (0..dims)
            .map(|_| {
                let b = r.next_u64();
                let sign = ((b & 1) as u16) << 15;
                let exp = (((b >> 1) % 31) as u16) << 10; // 0..=30: subnormal..max
                let mant = ((b >> 8) & 0x3FF) as u16;
                f16::from_bits(sign | exp | mant)
            })
            .collect(),
        "h" => (0..dims)
            .map(|_| f16::from_f32(r.unit() * 65000.0))
            .collect(),
        _ => gen_f32(dist, dims, seed)
            .into_iter()
            .map(f16::from_f32)
            .collect(),
    }
}

/// A sparse vector of dimension `2 * k + 10`. Patterns: `h` each index with
/// probability 1/2, `lo` only indices below `k + 5`, `hi` only indices from
/// `k + 5`, `f` every index; a trailing `w` (e.g. `hw`) draws wide values
/// instead of uniform ones.
pub fn gen_sparse(dist: &str, k: usize, seed: u64) -> (usize, Vec<i32>, Vec<f32>) {
    let mut r = Rng::new(seed);
    let dim = 2 * k + 10;
    let (pattern, wide) = match dist.strip_suffix('w') {
        Some(p) => (p, true),
        None => (dist, false),
    };
    let mut indices = Vec::new();
    let mut values = Vec::new();
    for i in 0..dim {
        let take = match pattern {
            "h" => r.below(2) == 0,
            "lo" => i < k + 5 && r.below(2) == 0,
            "hi" => i >= k + 5 && r.below(2) == 0,
            "f" => true,
            _ => panic!("unknown sparse pattern {pattern}"),
        };
        if take {
            let mut v = 0.0;
            while v == 0.0 {
                v = if wide { r.wide() } else { r.unit() };
            }
            indices.push(i as i32);
            values.push(v);
        }
    }
    (dim, indices, values)
}

/// Bit strings of `n` bits (bytes, MSB first, zero padding). Patterns: `h`
/// density 1/2, `s` density 1/8, `0` all zeros, `1` all ones.
pub fn gen_bits(dist: &str, n: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    let mut out = vec![0u8; n.div_ceil(8)];
    for i in 0..n {
        let set = match dist {
            "h" => r.below(2) == 0,
            "s" => r.below(8) == 0,
            "0" => false,
            "1" => true,
            _ => panic!("unknown bit pattern {dist}"),
        };
        if set {
            out[i / 8] |= 0x80 >> (i % 8);
        }
    }
    out
}

pub fn f32_text(v: &[f32]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{x:e}")).collect();
    format!("[{}]", items.join(","))
}

pub fn f16_text(v: &[f16]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{:e}", x.to_f32())).collect();
    format!("[{}]", items.join(","))
}

pub fn sparse_text(dim: usize, indices: &[i32], values: &[f32]) -> String {
    let items: Vec<String> = indices
        .iter()
        .zip(values)
        .map(|(i, v)| format!("{}:{v:e}", i + 1))
        .collect();
    format!("{{{}}}/{dim}", items.join(","))
}

pub fn bits_text(bytes: &[u8], n: usize) -> String {
    (0..n)
        .map(|i| {
            if bytes[i / 8] & (0x80 >> (i % 8)) != 0 {
                '1'
            } else {
                '0'
            }
        })
        .collect()
}

/// Parses `[1,2,3]`.
pub fn parse_f32(text: &str) -> Vec<f32> {
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    if inner.trim().is_empty() {
        return Vec::new();
    }
    inner
        .split(',')
        .map(|s| s.trim().parse::<f32>().expect("float"))
        .collect()
}

/// Parses `[1,2,3]` as halves (values must be exactly representable).
pub fn parse_f16(text: &str) -> Vec<f16> {
    parse_f32(text).into_iter().map(f16::from_f32).collect()
}

/// Parses `{1:0.5,3:2}/5` (1-based indices) into 0-based indices.
pub fn parse_sparse(text: &str) -> (usize, Vec<i32>, Vec<f32>) {
    let (body, dim) = text.rsplit_once('/').expect("sparse dim");
    let inner = body.trim().trim_start_matches('{').trim_end_matches('}');
    let mut indices = Vec::new();
    let mut values = Vec::new();
    for item in inner.split(',').filter(|s| !s.trim().is_empty()) {
        let (i, v) = item.split_once(':').expect("index:value");
        indices.push(i.trim().parse::<i32>().expect("index") - 1);
        values.push(v.trim().parse::<f32>().expect("value"));
    }
    (dim.trim().parse().expect("dim"), indices, values)
}

/// Parses a bit string into bytes plus its length.
pub fn parse_bits(text: &str) -> (Vec<u8>, usize) {
    let n = text.len();
    let mut out = vec![0u8; n.div_ceil(8)];
    for (i, c) in text.chars().enumerate() {
        if c == '1' {
            out[i / 8] |= 0x80 >> (i % 8);
        }
    }
    (out, n)
}
