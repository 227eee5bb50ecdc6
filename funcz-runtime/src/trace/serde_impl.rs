//! Serde helpers for the graph types (feature `serde`): op names read back
//! as `&'static str`, and floats that stay exact and allow non-finite
//! values (`"inf"`, `"-inf"`, `"nan"` as strings; JSON has no such numbers).

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A float as JSON: a number if finite, else a string.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum F64Repr {
    Num(f64),
    Text(String),
}

fn to_repr(v: f64) -> F64Repr {
    if v.is_finite() {
        F64Repr::Num(v)
    } else {
        F64Repr::Text(super::print::fmt_float(v))
    }
}

fn from_repr<E: serde::de::Error>(r: F64Repr) -> Result<f64, E> {
    match r {
        F64Repr::Num(v) => Ok(v),
        F64Repr::Text(s) => match s.as_str() {
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            "nan" => Ok(f64::NAN),
            _ => Err(E::custom(format!("not a float: {s:?}"))),
        },
    }
}

/// One `f64`.
pub(crate) mod f64_repr {
    use super::*;

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        to_repr(*v).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        from_repr(F64Repr::deserialize(d)?)
    }
}

/// A `Vec<f64>`.
pub(crate) mod f64s {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|&x| to_repr(x)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Vec::<F64Repr>::deserialize(d)?
            .into_iter()
            .map(from_repr)
            .collect()
    }
}

/// A `Vec<f32>` (each value written as the shortest `f32` round trip).
pub(crate) mod f32s {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[f32], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|&x| {
            if x.is_finite() {
                // Through the shortest decimal of the f32, so the JSON
                // shows `0.1`, not `0.10000000149011612`.
                F64Repr::Num(x.to_string().parse::<f64>().unwrap_or(x as f64))
            } else {
                to_repr(x as f64)
            }
        }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f32>, D::Error> {
        Vec::<F64Repr>::deserialize(d)?
            .into_iter()
            .map(|r| from_repr(r).map(|x: f64| x as f32))
            .collect()
    }
}

/// Interns `s`: op names read from JSON live for the whole program (each
/// distinct name is allocated once).
pub(crate) fn intern(s: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(|| Mutex::new(HashSet::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(&n) = names.get(s) {
        return n;
    }
    let n: &'static str = Box::leak(s.to_string().into_boxed_str());
    names.insert(n);
    n
}

/// The JSON form of a [`GraphNode`](super::GraphNode) (its op name
/// owned, interned when read).
#[derive(Deserialize)]
pub(crate) struct GraphNodeDe {
    name: String,
    op: String,
    args: Vec<super::Value>,
    outputs: Vec<crate::tensor::TensorId>,
    list: bool,
    #[serde(default)]
    metas: Vec<super::TensorMeta>,
}

impl<'de> Deserialize<'de> for super::GraphNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        GraphNodeDe::deserialize(d).map(Into::into)
    }
}

impl From<GraphNodeDe> for super::GraphNode {
    fn from(n: GraphNodeDe) -> Self {
        super::GraphNode {
            name: n.name,
            op: intern(&n.op),
            args: n.args,
            outputs: n.outputs,
            list: n.list,
            metas: n.metas,
        }
    }
}
