//! Printing a [`Graph`] in the style of the seed docs (`make_fx(f).code`),
//! one op per line:
//!
//! ```text
//! fn forward(a_1) {
//!     let add = aten::add(a_1, 1.0);
//!     let view = aten::view(add, [-1]);
//!     let add_ = aten::add_(view, 1.0);
//!     return add;
//! }
//! ```
//!
//! Floats always show a decimal point (`1.0`, `0.5`, `-2.0`, `1.0e-7`); a
//! float exactly representable as `f32` is printed with `f32`'s shortest
//! round-trip form, so `0.1f32` prints `0.1` rather than its widened `f64`
//! digits. Non-finite floats print `inf`, `-inf`, `nan`. Integers print
//! plainly, integer lists as `[2, -1]`, tensor lists as `[a, b]`, an omitted
//! optional argument as `None`. A constant is introduced just before its
//! first use by `let _tensor_constant0 = self._tensor_constant0;` (FX's
//! `get_attr`). One returned value prints `return x;`, several
//! `return (x, y);`, none `return ();`.

use std::fmt::{self, Display, Write};

use super::graph::{Graph, Value};

/// Formats a float with at least one decimal (see the module docs).
pub(crate) fn fmt_float(v: f64) -> String {
    if v.is_nan() {
        return "nan".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let s = if (v as f32) as f64 == v {
        format!("{:?}", v as f32)
    } else {
        format!("{v:?}")
    };
    match s.find('e') {
        Some(p) if !s[..p].contains('.') => format!("{}.0{}", &s[..p], &s[p..]),
        Some(_) => s,
        None if s.contains('.') => s,
        None => format!("{s}.0"),
    }
}

impl Graph {
    /// Writes one argument.
    pub(crate) fn write_value(&self, out: &mut String, v: &Value) {
        match v {
            Value::Tensor(r) => out.push_str(&self.ref_name(r)),
            Value::TensorList(rs) => {
                out.push('[');
                for (i, r) in rs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&self.ref_name(r));
                }
                out.push(']');
            }
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Float(x) => out.push_str(&fmt_float(*x)),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Ints(is) => {
                out.push('[');
                for (k, i) in is.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    let _ = write!(out, "{i}");
                }
                out.push(']');
            }
            Value::None => out.push_str("None"),
        }
    }

    fn write_constants_before(&self, out: &mut String, at: usize) {
        for c in self.constants().iter().filter(|c| c.first_use == at) {
            let _ = writeln!(out, "    let {0} = self.{0};", c.name);
        }
    }
}

impl Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        out.push_str("fn ");
        out.push_str(self.name());
        out.push('(');
        for (i, p) in self.placeholders().iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&p.name);
        }
        out.push_str(") {\n");
        for (at, node) in self.nodes().iter().enumerate() {
            self.write_constants_before(&mut out, at);
            let _ = write!(out, "    let {} = aten::{}(", node.name, node.op);
            for (i, a) in node.args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                self.write_value(&mut out, a);
            }
            out.push_str(");\n");
        }
        self.write_constants_before(&mut out, self.nodes().len());
        let names = self.output_names();
        match names.len() {
            0 => out.push_str("    return ();\n"),
            1 => {
                let _ = writeln!(out, "    return {};", names[0]);
            }
            _ => {
                let _ = writeln!(out, "    return ({});", names.join(", "));
            }
        }
        out.push_str("}\n");
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::fmt_float;

    #[test]
    fn floats_have_a_decimal() {
        assert_eq!(fmt_float(1.0), "1.0");
        assert_eq!(fmt_float(0.5), "0.5");
        assert_eq!(fmt_float(-2.0), "-2.0");
        assert_eq!(fmt_float(-0.0), "-0.0");
        assert_eq!(fmt_float(0.1f32 as f64), "0.1");
        assert_eq!(fmt_float(0.1), "0.1");
        assert_eq!(fmt_float(1e-7), "1.0e-7");
        assert_eq!(fmt_float(1e20), "1.0e20");
        assert_eq!(fmt_float(2.5e-8), "2.5e-8");
        assert_eq!(fmt_float(1e300), "1.0e300");
        assert_eq!(fmt_float(123456.0), "123456.0");
        assert_eq!(fmt_float(f64::INFINITY), "inf");
        assert_eq!(fmt_float(f64::NEG_INFINITY), "-inf");
        assert_eq!(fmt_float(f64::NAN), "nan");
    }
}
