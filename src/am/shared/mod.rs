//! What every access method uses: the indexed type's facts, its support functions and the
//! distance between a query and a stored value ([`typeinfo`]); the common part of the cost
//! estimate ([`cost`]); the plumbing of options and settings ([`settings`]).

pub mod cost;
pub mod settings;
pub mod typeinfo;
