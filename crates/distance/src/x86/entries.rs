//! The plain `fn` entry points of the `#[target_feature]` kernels.

/// Defines, for each kernel `name(args) -> ret` of the module it is used in, a plain `fn` of
/// that name which calls the module's `#[target_feature]` kernel.
macro_rules! entries {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(
            pub(crate) fn $name($($arg: $ty),*) -> $ret {
                // Only stored in the table built by `kernels()` after
                // detecting the target features of `super::$name`.
                // SAFETY: the CPU supports the features `super::$name` needs.
                unsafe { super::$name($($arg),*) }
            }
        )*
    };
}
pub(crate) use entries;
