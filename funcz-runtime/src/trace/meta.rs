//! What a backend needs to know about every value of a graph: its shape and
//! dtype ([`TensorMeta`]), and for constants their data ([`TensorData`]).
//!
//! ```
//! use funcz_runtime::Tensor;
//! use funcz_runtime::trace::{DType, TensorData, TensorMeta};
//! let t = Tensor::<i64>::from_vec(vec![1, 2, 3, 4], &[2, 2]);
//! assert_eq!(TensorMeta::of(&t), Some(TensorMeta::new(&[2, 2], DType::Int64)));
//! assert_eq!(TensorData::of(&t), Some(TensorData::Int64(vec![1, 2, 3, 4])));
//! assert_eq!(DType::from_name("float32"), Some(DType::Float32));
//! ```

use crate::element::Scalar;
use crate::tensor::Tensor;

/// The element type of a graph value, by PyTorch's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum DType {
    /// `torch.float32`.
    Float32,
    /// `torch.float64`.
    Float64,
    /// `torch.int8`.
    Int8,
    /// `torch.int16`.
    Int16,
    /// `torch.int32`.
    Int32,
    /// `torch.int64`.
    Int64,
    /// `torch.uint8`.
    UInt8,
    /// `torch.bool`.
    Bool,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 8] = [
        DType::Float32,
        DType::Float64,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::UInt8,
        DType::Bool,
    ];

    /// PyTorch's name (`float32`, `int64`, `bool`, ...), as
    /// [`Scalar::DTYPE`].
    pub fn name(self) -> &'static str {
        match self {
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::UInt8 => "uint8",
            DType::Bool => "bool",
        }
    }

    /// The dtype with PyTorch's name `name`.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The dtype of the element type `T`.
    pub fn of<T: Scalar>() -> Option<DType> {
        DType::from_name(T::DTYPE)
    }

    /// True for `float32` and `float64`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::Float32 | DType::Float64)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The shape and dtype of one graph value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TensorMeta {
    /// The sizes (empty for a 0-d tensor).
    pub shape: Vec<usize>,
    /// The element type.
    pub dtype: DType,
}

impl TensorMeta {
    /// A meta from a shape and a dtype.
    pub fn new(shape: &[usize], dtype: DType) -> Self {
        TensorMeta {
            shape: shape.to_vec(),
            dtype,
        }
    }

    /// The shape and dtype of `t` (`None` if its element type has no
    /// [`DType`]).
    pub fn of<T: Scalar>(t: &Tensor<T>) -> Option<Self> {
        Some(TensorMeta::new(t.shape(), DType::of::<T>()?))
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

impl std::fmt::Display for TensorMeta {
    /// `float32[2, 3]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{:?}", self.dtype, self.shape)
    }
}

/// The values of a constant, row-major, in its own dtype.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum TensorData {
    /// `float32` values (non-finite values are written as strings in JSON).
    Float32(
        #[cfg_attr(feature = "serde", serde(with = "crate::trace::serde_impl::f32s"))] Vec<f32>,
    ),
    /// `float64` values.
    Float64(
        #[cfg_attr(feature = "serde", serde(with = "crate::trace::serde_impl::f64s"))] Vec<f64>,
    ),
    /// Integer values of any integer dtype (`int8` ... `int64`, `uint8`).
    Int64(Vec<i64>),
    /// `bool` values.
    Bool(Vec<bool>),
}

impl TensorData {
    /// The values of `t`, in the representation its dtype needs (`None` if
    /// its element type has no [`DType`]).
    pub fn of<T: Scalar>(t: &Tensor<T>) -> Option<Self> {
        use crate::element::Raw;
        let v = t.to_vec();
        Some(match DType::of::<T>()? {
            DType::Float32 => TensorData::Float32(v.iter().map(|&x| x.as_f64() as f32).collect()),
            DType::Float64 => TensorData::Float64(v.iter().map(|&x| x.as_f64()).collect()),
            DType::Bool => TensorData::Bool(v.iter().map(|&x| bool::cast_from(x)).collect()),
            _ => TensorData::Int64(
                v.iter()
                    .map(|&x| match x.to_raw() {
                        Raw::I(i) => i,
                        Raw::F(f) => f as i64,
                        Raw::B(b) => b as i64,
                    })
                    .collect(),
            ),
        })
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            TensorData::Float32(v) => v.len(),
            TensorData::Float64(v) => v.len(),
            TensorData::Int64(v) => v.len(),
            TensorData::Bool(v) => v.len(),
        }
    }

    /// True if there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values widened to `f64` (integers beyond 2^53 round).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            TensorData::Float32(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::Float64(v) => v.clone(),
            TensorData::Int64(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::Bool(v) => v.iter().map(|&x| if x { 1.0 } else { 0.0 }).collect(),
        }
    }
}
