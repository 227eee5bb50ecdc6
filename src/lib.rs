#![doc = include_str!("../README.md")]

pub use funcz_macros::functionalize;
pub use funcz_runtime::*;
