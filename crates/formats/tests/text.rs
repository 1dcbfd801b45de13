//! The text input parsers: accepted spellings, every error with its code, message and detail,
//! and which error comes first when several apply.

use half::f16;
use std::ffi::CString;
use vector_formats::error::{ErrorCode, ParseError};
use vector_formats::text::{parse_halfvec, parse_sparsevec, parse_vector};
use vector_formats::varlena::SparsevecParts;

fn c(text: &str) -> CString {
    CString::new(text).unwrap()
}

fn vector(text: &str) -> Result<Vec<f32>, ParseError> {
    parse_vector(&c(text), -1)
}

fn halfvec(text: &str) -> Result<Vec<f16>, ParseError> {
    parse_halfvec(&c(text), -1)
}

fn sparsevec(text: &str) -> Result<SparsevecParts, ParseError> {
    parse_sparsevec(&c(text), -1)
}

/// The error's (code, message, detail).
fn raised<T: std::fmt::Debug>(
    result: Result<T, ParseError>,
) -> (ErrorCode, String, Option<&'static str>) {
    let err = result.expect_err("input was accepted");
    (err.code(), err.message(), err.detail())
}

fn syntax(
    type_name: &str,
    text: &str,
    detail: Option<&'static str>,
) -> (ErrorCode, String, Option<&'static str>) {
    (
        ErrorCode::InvalidTextRepresentation,
        format!("invalid input syntax for type {type_name}: \"{text}\""),
        detail,
    )
}

fn data(message: &str) -> (ErrorCode, String, Option<&'static str>) {
    (ErrorCode::DataException, message.to_owned(), None)
}

fn limit(message: &str) -> (ErrorCode, String, Option<&'static str>) {
    (ErrorCode::ProgramLimitExceeded, message.to_owned(), None)
}

fn range(message: &str) -> (ErrorCode, String, Option<&'static str>) {
    (ErrorCode::NumericValueOutOfRange, message.to_owned(), None)
}

#[test]
fn vector_accepts_pgvector_spellings() {
    assert_eq!(vector("[1,2,3]").unwrap(), [1.0, 2.0, 3.0]);
    assert_eq!(
        vector(" [ 1.5 , -2e3,\t+0x1p-2 ]\n").unwrap(),
        [1.5, -2000.0, 0.25]
    );
    assert_eq!(vector("[1e-45]").unwrap(), [f32::from_bits(1)]);
    assert_eq!(vector("[-0]").unwrap()[0].to_bits(), (-0.0f32).to_bits());
    // strtof rounds once, from the decimal.
    assert_eq!(vector("[0.1]").unwrap(), [0.1f32]);
    // Underflow to a denormal or zero is accepted by vector (only overflow is out of range).
    assert_eq!(vector("[1e-50]").unwrap(), [0.0]);
}

#[test]
fn vector_round_trips_every_float_spelled_shortest() {
    let x: Vec<f32> = (0..2000u32)
        .map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761) & 0x7f7f_ffff))
        .collect();
    let text = format!(
        "[{}]",
        x.iter()
            .map(|v| format!("{v:e}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    assert_eq!(vector(&text).unwrap(), x);
}

#[test]
fn vector_syntax_errors() {
    let start = Some("Vector contents must start with \"[\".");
    let junk = Some("Junk after closing right brace.");
    assert_eq!(raised(vector("")), syntax("vector", "", start));
    assert_eq!(
        raised(vector("{1,2,3}")),
        syntax("vector", "{1,2,3}", start)
    );
    assert_eq!(
        raised(vector("[1,2,3]x")),
        syntax("vector", "[1,2,3]x", junk)
    );
    assert_eq!(
        raised(vector("[1,2,3] ]")),
        syntax("vector", "[1,2,3] ]", junk)
    );
    for text in [
        "[", "[1", "[1,", "[1,]", "[,1]", "[1 2]", "[a]", "[1;2]", "[1,,2]", "[1.2.3]",
    ] {
        assert_eq!(raised(vector(text)), syntax("vector", text, None), "{text}");
    }
}

#[test]
fn vector_quotes_invalid_utf8_lossily() {
    let input = CString::new(b"[\xff]".to_vec()).unwrap();
    assert_eq!(
        raised(parse_vector(&input, -1)),
        syntax("vector", "[\u{fffd}]", None)
    );
}

#[test]
fn vector_dimension_errors() {
    assert_eq!(
        raised(vector("[]")),
        data("vector must have at least 1 dimension")
    );
    assert_eq!(
        raised(vector(" [ ] junk")),
        data("vector must have at least 1 dimension")
    );
    let at_limit = format!("[{}]", vec!["1"; 16000].join(","));
    assert_eq!(vector(&at_limit).unwrap().len(), 16000);
    let over = format!("[{}]", vec!["1"; 16001].join(","));
    assert_eq!(
        raised(vector(&over)),
        limit("vector cannot have more than 16000 dimensions")
    );
    // Raised before reading the element that would not fit, even a malformed one.
    let over_then_junk = format!("[{},x", vec!["1"; 16000].join(","));
    assert_eq!(
        raised(vector(&over_then_junk)),
        limit("vector cannot have more than 16000 dimensions")
    );
}

#[test]
fn vector_typmod() {
    assert_eq!(parse_vector(&c("[1,2,3]"), 3).unwrap().len(), 3);
    assert_eq!(
        raised(parse_vector(&c("[1,2]"), 3)),
        data("expected 3 dimensions, not 2")
    );
    // Syntax comes first.
    assert_eq!(
        raised(parse_vector(&c("[1,2"), 3)).0,
        ErrorCode::InvalidTextRepresentation
    );
}

#[test]
fn vector_element_errors() {
    assert_eq!(raised(vector("[NaN]")), data("NaN not allowed in vector"));
    assert_eq!(
        raised(vector("[1,-inf]")),
        data("infinite value not allowed in vector")
    );
    assert_eq!(
        raised(vector("[Infinity]")),
        data("infinite value not allowed in vector")
    );
    assert_eq!(
        raised(vector("[1e39]")),
        range("\"1e39\" is out of range for type vector")
    );
    assert_eq!(
        raised(vector("[-1e39]")),
        range("\"-1e39\" is out of range for type vector")
    );
    // Element checks run while parsing, before any later syntax error.
    assert_eq!(raised(vector("[nan,x")), data("NaN not allowed in vector"));
    assert_eq!(
        raised(vector("[1e39,nan]x")),
        range("\"1e39\" is out of range for type vector")
    );
    assert_eq!(raised(vector("[nan")), data("NaN not allowed in vector"));
}

#[test]
fn halfvec_parses_and_rounds() {
    assert_eq!(
        halfvec("[1.5, -2, 65504]").unwrap(),
        [f16::from_f32(1.5), f16::from_f32(-2.0), f16::MAX]
    );
    assert_eq!(halfvec("[0.1]").unwrap(), [f16::from_f32(0.1f32)]);
    // Rounds to the largest half, not to infinity.
    assert_eq!(halfvec("[65519]").unwrap(), [f16::MAX]);
    assert_eq!(halfvec("[1e-10]").unwrap(), [f16::ZERO]);
}

#[test]
fn halfvec_errors() {
    let start = Some("Vector contents must start with \"[\".");
    assert_eq!(raised(halfvec("1,2")), syntax("halfvec", "1,2", start));
    assert_eq!(raised(halfvec("[1,2")), syntax("halfvec", "[1,2", None));
    assert_eq!(
        raised(halfvec("[]")),
        data("halfvec must have at least 1 dimension")
    );
    let over = format!("[{}]", vec!["0"; 16001].join(","));
    assert_eq!(
        raised(halfvec(&over)),
        limit("halfvec cannot have more than 16000 dimensions")
    );
    assert_eq!(
        raised(halfvec("[65520]")),
        range("\"65520\" is out of range for type halfvec")
    );
    assert_eq!(
        raised(halfvec("[-1e5]")),
        range("\"-1e5\" is out of range for type halfvec")
    );
    assert_eq!(
        raised(halfvec("[1e39]")),
        range("\"1e39\" is out of range for type halfvec")
    );
    assert_eq!(
        raised(halfvec("[inf]")),
        data("infinite value not allowed in halfvec")
    );
    assert_eq!(raised(halfvec("[nan]")), data("NaN not allowed in halfvec"));
    assert_eq!(
        raised(parse_halfvec(&c("[1]"), 2)),
        data("expected 2 dimensions, not 1")
    );
    assert_eq!(
        raised(halfvec("[1,65520,x")),
        range("\"65520\" is out of range for type halfvec")
    );
}

#[test]
fn sparsevec_parses() {
    let v = sparsevec("{1:1.5,3:2,5:-3}/5").unwrap();
    assert_eq!(
        v,
        SparsevecParts {
            dim: 5,
            indices: vec![0, 2, 4],
            values: vec![1.5, 2.0, -3.0]
        }
    );
    let v = sparsevec(" { 5 : 1 , 2:2 }  /  6 ").unwrap();
    assert_eq!((v.indices, v.values), (vec![1, 4], vec![2.0, 1.0]));
    // Zeros are dropped; an empty set is fine.
    let v = sparsevec("{1:0,2:-0,3:1}/3").unwrap();
    assert_eq!((v.indices, v.values), (vec![2], vec![1.0]));
    assert_eq!(sparsevec("{}/3").unwrap().indices, Vec::<i32>::new());
    assert_eq!(sparsevec("{+1:1}/+2").unwrap().dim, 2);
    // A zero stored twice is dropped before the duplicate check sees it.
    assert_eq!(sparsevec("{1:0,1:1}/2").unwrap().indices, vec![0]);
    assert_eq!(parse_sparsevec(&c("{1:1}/4"), 4).unwrap().dim, 4);
}

#[test]
fn sparsevec_syntax_errors() {
    let syn = |text, detail| syntax("sparsevec", text, detail);
    assert_eq!(
        raised(sparsevec("[1:1]/2")),
        syn("[1:1]/2", Some("Vector contents must start with \"{\"."))
    );
    assert_eq!(
        raised(sparsevec("{1:1}")),
        syn("{1:1}", Some("Unexpected end of input."))
    );
    assert_eq!(
        raised(sparsevec("{1:1} 2")),
        syn("{1:1} 2", Some("Unexpected end of input."))
    );
    assert_eq!(
        raised(sparsevec("{1:1}/2x")),
        syn("{1:1}/2x", Some("Junk after closing."))
    );
    for text in [
        "{",
        "{1",
        "{1:",
        "{1:}/2",
        "{:1}/2",
        "{1 1}/2",
        "{1:1,}/2",
        "{1:1/2",
        "{1:1}/",
        "{1:1}/x",
        "{a:1}/2",
        "{1:a}/2",
        "{1:1;2:2}/2",
    ] {
        assert_eq!(raised(sparsevec(text)), syn(text, None), "{text}");
    }
}

#[test]
fn sparsevec_value_errors() {
    assert_eq!(
        raised(sparsevec("{}/0")),
        data("sparsevec must have at least 1 dimension")
    );
    assert_eq!(
        raised(sparsevec("{}/-1")),
        data("sparsevec must have at least 1 dimension")
    );
    assert_eq!(
        raised(sparsevec("{}/1000000001")),
        limit("sparsevec cannot have more than 1000000000 dimensions")
    );
    assert_eq!(
        raised(sparsevec("{}/99999999999999999999")),
        limit("sparsevec cannot have more than 1000000000 dimensions")
    );
    assert_eq!(
        raised(parse_sparsevec(&c("{}/3"), 2)),
        data("expected 2 dimensions, not 3")
    );
    assert_eq!(
        raised(sparsevec("{0:1}/2")),
        data("sparsevec index out of bounds")
    );
    assert_eq!(
        raised(sparsevec("{3:1}/2")),
        data("sparsevec index out of bounds")
    );
    assert_eq!(
        raised(sparsevec("{-2147483649:1}/2")),
        data("sparsevec index out of bounds")
    );
    assert_eq!(
        raised(sparsevec("{99999999999:1}/2")),
        data("sparsevec index out of bounds")
    );
    assert_eq!(
        raised(sparsevec("{1:1,1:2}/2")),
        data("sparsevec indices must not contain duplicates")
    );
    assert_eq!(
        raised(sparsevec("{1:nan}/2")),
        data("NaN not allowed in sparsevec")
    );
    assert_eq!(
        raised(sparsevec("{1:-inf}/2")),
        data("infinite value not allowed in sparsevec")
    );
    assert_eq!(
        raised(sparsevec("{1:1e39}/2")),
        range("\"1e39\" is out of range for type sparsevec")
    );
    // Unlike vector, underflow to zero is out of range.
    assert_eq!(
        raised(sparsevec("{1:1e-50}/2")),
        range("\"1e-50\" is out of range for type sparsevec")
    );
    let many = format!(
        "{{{}}}/20000",
        (1..=16001)
            .map(|i| format!("{i}:1"))
            .collect::<Vec<_>>()
            .join(",")
    );
    assert_eq!(
        raised(sparsevec(&many)),
        limit("sparsevec cannot have more than 16000 non-zero elements")
    );
}

#[test]
fn sparsevec_checks_in_pgvector_order() {
    // The comma count comes before everything, even the opening brace.
    let commas = format!("x{}", ",".repeat(16000));
    assert_eq!(
        raised(sparsevec(&commas)).1,
        "sparsevec cannot have more than 16000 non-zero elements"
    );
    // Element checks come while parsing, before the syntax of what follows.
    assert_eq!(
        raised(sparsevec("{1:nan,x")),
        data("NaN not allowed in sparsevec")
    );
    // Dimensions before the type modifier, which comes before the indices.
    assert_eq!(
        raised(parse_sparsevec(&c("{5:1}/0"), 3)),
        data("sparsevec must have at least 1 dimension")
    );
    assert_eq!(
        raised(parse_sparsevec(&c("{5:1}/2"), 3)),
        data("expected 3 dimensions, not 2")
    );
    // Indices are checked sorted: the smallest bad one is reported.
    assert_eq!(
        raised(sparsevec("{2:1,2:1,9:1}/3")),
        data("sparsevec indices must not contain duplicates")
    );
    assert_eq!(
        raised(sparsevec("{9:1,2:1,2:1}/3")),
        data("sparsevec indices must not contain duplicates")
    );
    assert_eq!(
        raised(sparsevec("{9:1,0:1}/3")),
        data("sparsevec index out of bounds")
    );
}
