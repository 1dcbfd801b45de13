//! What an index needs to know about the indexed type, for both access methods and every page
//! store: the operator class's support functions and type info ([`type_info`], [`support`]),
//! this library's own kernels for them ([`kernels`]), owned values ([`value`]), the quantized
//! index's code space ([`codes`]) and the column checks of a build ([`column`]). It sits below
//! the access methods' callbacks (`am/`) and the page stores (`stores/`).

pub mod codes;
pub mod column;
pub mod kernels;
pub mod support;
pub mod type_info;
pub mod value;

pub use column::{check_build_column, column_type};
pub use kernels::Kernel;
pub use support::{QueryDistance, Support};
pub use type_info::{Method, TypeInfo, ValueKind};
pub use value::Value;
