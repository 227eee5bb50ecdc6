//! Op tracing: record every op executed while a trace is active and turn it
//! into a graph (the `make_fx` of funcz).

mod record;

pub(crate) use record::op;
pub use record::{
    Arg, Node, Outputs, ToArg, is_recording, start_recording, stop_recording, untraced,
};
