//! Distances between `halfvec`s, computed by `vector_distance::f16` (bit-identical to pgvector).

use vector_distance::f16 as kernels;

use super::check_same_dims;
use crate::fmgr;

/// Declares a distance function of two halfvecs of equal dimensions.
macro_rules! distance {
    ($(#[$attr:meta])* $name:ident => $kernel:path) => {
        crate::sql_function! {
            $(#[$attr])*
            fn $name(call) {
                let (a, b) = (call.halfvec(0), call.halfvec(1));
                check_same_dims(a, b);
                fmgr::float8_datum($kernel(a.x, b.x))
            }
        }
    };
}

distance!(
    /// `l2_distance(halfvec, halfvec)`, operator `<->`.
    halfvec_l2_distance => kernels::l2_distance
);
distance!(
    /// The squared L2 distance (index support).
    halfvec_l2_squared_distance => kernels::l2_squared_distance
);
distance!(
    /// `inner_product(halfvec, halfvec)`.
    halfvec_inner_product => kernels::inner_product
);
distance!(
    /// Operator `<#>`.
    halfvec_negative_inner_product => kernels::negative_inner_product
);
distance!(
    /// `cosine_distance(halfvec, halfvec)`, operator `<=>`.
    halfvec_cosine_distance => kernels::cosine_distance
);
distance!(
    /// The angular distance of unit vectors (index support).
    halfvec_spherical_distance => kernels::spherical_distance
);
distance!(
    /// `l1_distance(halfvec, halfvec)`, operator `<+>`.
    halfvec_l1_distance => kernels::l1_distance
);
