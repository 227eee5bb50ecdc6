//! `Display` in PyTorch's style (`torch._tensor_str` with default print
//! options: precision 4, line width 80, summarized beyond 1000 elements
//! with 3 edge items).

use std::fmt;

use crate::element::Scalar;
use crate::tensor::Tensor;

const PRECISION: usize = 4;
const LINEWIDTH: usize = 80;
const THRESHOLD: usize = 1000;
const EDGEITEMS: usize = 3;

/// Python's `'{:.Ne}'` (two-digit signed exponent), `nan`/`inf` spelled
/// as Python does.
fn sci(v: f64) -> String {
    if !v.is_finite() {
        return nonfinite(v);
    }
    let s = format!("{v:.PRECISION$e}");
    let (mant, exp) = s.split_once('e').expect("exponent present");
    let e: i32 = exp.parse().expect("integer exponent");
    let sign = if e < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", e.abs())
}

fn nonfinite(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v > 0.0 {
        "inf".into()
    } else {
        "-inf".into()
    }
}

/// Python's `'{:.Nf}'`.
fn fixed(v: f64, precision: usize) -> String {
    if !v.is_finite() {
        return nonfinite(v);
    }
    format!("{v:.precision$}")
}

/// An integer or a `bool` as Python prints it (`True`, `False`).
fn plain<T: Scalar>(v: T) -> String {
    match v.to_raw() {
        crate::element::Raw::B(b) => (if b { "True" } else { "False" }).to_string(),
        _ => v.to_string(),
    }
}

/// PyTorch's `_Formatter`: one width and one style for the whole tensor.
struct Formatter {
    floating: bool,
    int_mode: bool,
    sci_mode: bool,
    width: usize,
}

impl Formatter {
    fn new<T: Scalar>(values: &[T]) -> Self {
        let mut f = Formatter {
            floating: T::IS_FLOAT,
            int_mode: true,
            sci_mode: false,
            width: 1,
        };
        if !T::IS_FLOAT {
            for v in values {
                f.width = f.width.max(plain(*v).len());
            }
            return f;
        }
        let nz: Vec<f64> = values
            .iter()
            .map(|&v| Scalar::as_f64(v))
            .filter(|v| v.is_finite() && *v != 0.0)
            .collect();
        if nz.is_empty() {
            return f;
        }
        let min = nz.iter().fold(f64::INFINITY, |m, v| m.min(v.abs()));
        let max = nz.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        f.int_mode = nz.iter().all(|v| *v == v.ceil());
        let widths: Vec<usize> = if f.int_mode {
            if max / min > 1000.0 || max > 1.0e8 {
                f.sci_mode = true;
                nz.iter().map(|&v| sci(v).len()).collect()
            } else {
                nz.iter().map(|&v| fixed(v, 0).len() + 1).collect()
            }
        } else if max / min > 1000.0 || max > 1.0e8 || min < 1.0e-4 {
            f.sci_mode = true;
            nz.iter().map(|&v| sci(v).len()).collect()
        } else {
            nz.iter().map(|&v| fixed(v, PRECISION).len()).collect()
        };
        f.width = widths.into_iter().fold(f.width, usize::max);
        f
    }

    fn format<T: Scalar>(&self, v: T) -> String {
        let s = if self.floating {
            let x = Scalar::as_f64(v);
            if self.sci_mode {
                sci(x)
            } else if self.int_mode {
                let mut s = fixed(x, 0);
                if x.is_finite() {
                    s.push('.');
                }
                s
            } else {
                fixed(x, PRECISION)
            }
        } else {
            plain(v)
        };
        format!("{s:>w$}", w = self.width)
    }
}

/// The values the formatter looks at when the tensor is summarized (the
/// edge items of every dimension).
fn summarized<T: Scalar>(data: &[T], shape: &[usize], out: &mut Vec<T>) {
    match shape.len() {
        0 => out.extend_from_slice(data),
        1 => {
            if shape[0] > 2 * EDGEITEMS {
                out.extend_from_slice(&data[..EDGEITEMS]);
                out.extend_from_slice(&data[shape[0] - EDGEITEMS..]);
            } else {
                out.extend_from_slice(data);
            }
        }
        _ => {
            let inner: usize = shape[1..].iter().product();
            for i in rows(shape[0], true).into_iter().flatten() {
                summarized(&data[i * inner..(i + 1) * inner], &shape[1..], out);
            }
        }
    }
}

/// Row indices to print; `None` stands for the `...` of a summary.
fn rows(n: usize, summarize: bool) -> Vec<Option<usize>> {
    if summarize && n > 2 * EDGEITEMS {
        (0..EDGEITEMS)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((n - EDGEITEMS..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    }
}

fn vector_str<T: Scalar>(data: &[T], indent: usize, summarize: bool, f: &Formatter) -> String {
    let per_line = ((LINEWIDTH.saturating_sub(indent)) / (f.width + 2)).max(1);
    let items: Vec<String> = rows(data.len(), summarize)
        .into_iter()
        .map(|i| match i {
            Some(i) => f.format(data[i]),
            None => " ...".to_string(),
        })
        .collect();
    let lines: Vec<String> = items.chunks(per_line).map(|c| c.join(", ")).collect();
    let sep = format!(",\n{}", " ".repeat(indent + 1));
    format!("[{}]", lines.join(&sep))
}

fn tensor_str<T: Scalar>(
    data: &[T],
    shape: &[usize],
    indent: usize,
    summarize: bool,
    f: &Formatter,
) -> String {
    match shape.len() {
        0 => f.format(data[0]),
        1 => vector_str(data, indent, summarize, f),
        nd => {
            let inner: usize = shape[1..].iter().product();
            let slices: Vec<String> = rows(shape[0], summarize)
                .into_iter()
                .map(|i| match i {
                    Some(i) => tensor_str(
                        &data[i * inner..(i + 1) * inner],
                        &shape[1..],
                        indent + 1,
                        summarize,
                        f,
                    ),
                    None => "...".to_string(),
                })
                .collect();
            let sep = format!(",{}{}", "\n".repeat(nd - 1), " ".repeat(indent + 1));
            format!("[{}]", slices.join(&sep))
        }
    }
}

/// PyTorch's `_add_suffixes`: `, suffix` on the last line, or on a new
/// line when it would pass the line width.
fn add_suffixes(mut s: String, suffixes: &[String], indent: usize) -> String {
    let mut last_line = match s.rfind('\n') {
        Some(p) => s.len() - p + 1,
        None => s.len() + 2,
    };
    for suf in suffixes {
        if last_line + suf.len() + 2 > LINEWIDTH {
            s.push_str(",\n");
            s.push_str(&" ".repeat(indent));
            s.push_str(suf);
            last_line = indent + suf.len();
        } else {
            s.push_str(", ");
            s.push_str(suf);
            last_line += suf.len() + 2;
        }
    }
    s.push(')');
    s
}

/// The full `tensor(...)` string.
fn render<T: Scalar>(t: &Tensor<T>) -> String {
    let prefix = "tensor(";
    let indent = prefix.len();
    let shape = t.shape();
    let mut suffixes = Vec::new();
    let body = if t.numel() == 0 {
        if shape.len() != 1 {
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            suffixes.push(format!("size=({})", dims.join(", ")));
        }
        if T::DTYPE != "float32" {
            suffixes.push(format!("dtype=torch.{}", T::DTYPE));
        }
        "[]".to_string()
    } else {
        if !matches!(T::DTYPE, "float32" | "int64" | "bool") {
            suffixes.push(format!("dtype=torch.{}", T::DTYPE));
        }
        let data = t.to_vec();
        let summarize = data.len() > THRESHOLD;
        let f = if summarize {
            let mut vals = Vec::new();
            summarized(&data, shape, &mut vals);
            Formatter::new(&vals)
        } else {
            Formatter::new(&data)
        };
        tensor_str(&data, shape, indent, summarize, &f)
    };
    add_suffixes(format!("{prefix}{body}"), &suffixes, indent)
}

impl<T: Scalar> fmt::Display for Tensor<T> {
    /// PyTorch's `repr`, e.g. `tensor([[1., 2.],\n        [3., 4.]])`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.5, 3.0, 4.0], &[2, 2]);
    /// assert_eq!(x.to_string(), "tensor([[1.0000, 2.5000],\n        [3.0000, 4.0000]])");
    /// let i = Tensor::<i32>::from_vec(vec![1, -20], &[2]);
    /// assert_eq!(i.to_string(), "tensor([  1, -20], dtype=torch.int32)");
    /// let m = Tensor::<bool>::from_vec(vec![true, false], &[2]);
    /// assert_eq!(m.to_string(), "tensor([ True, False])");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_number_formats() {
        assert_eq!(sci(123456.0), "1.2346e+05");
        assert_eq!(sci(1.0e-5), "1.0000e-05");
        assert_eq!(sci(-2.5e100), "-2.5000e+100");
        assert_eq!(fixed(-0.0, 4), "-0.0000");
        assert_eq!(fixed(0.125, 2), "0.12");
        assert_eq!(fixed(2.5, 0), "2");
        assert_eq!(fixed(f64::NAN, 4), "nan");
    }
}
