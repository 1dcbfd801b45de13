//! What an index needs to know about the indexed type, for both access methods and every page
//! store: the operator class's support functions and type info ([`type_info`], [`support`]),
//! this library's own kernels for them ([`kernels`]), owned values ([`value`]), the quantized
//! index's code space ([`codes`]), how an hnsw index compares (exactly or by codes:
//! [`compare`]) and the column checks of a build ([`mod@column`]). It sits below the access
//! methods' callbacks (`am/`) and the page stores (`stores/`).

pub mod codes;
pub mod column;
pub mod compare;
pub mod kernels;
pub mod support;
pub mod type_info;
pub mod value;

pub use column::{check_build_column, column_type};
pub use compare::{Coded, CodedValue, Compare, Estimate, Exact};
pub use kernels::Kernel;
pub use support::{QueryDistance, Support};
pub use type_info::{Method, TypeInfo, ValueKind};
pub use value::Value;
