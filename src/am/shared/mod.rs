//! What every access method uses: the indexed type's facts, its support functions and the
//! distance between a query and a stored value.

pub mod typeinfo;
