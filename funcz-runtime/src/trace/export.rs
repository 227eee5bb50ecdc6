//! Exporting a [`Graph`] as JSON (hand-written, no serde) and as Graphviz DOT.

use std::fmt::Write;

use super::graph::{Graph, GraphNode, Ref, Value};
use super::print::fmt_float;

/// Appends `s` as a JSON string literal.
fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `items` as a JSON array, each written by `f`.
fn json_array<I: IntoIterator>(
    out: &mut String,
    items: I,
    mut f: impl FnMut(&mut String, I::Item),
) {
    out.push('[');
    for (i, x) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        f(out, x);
    }
    out.push(']');
}

/// Appends `s` as a DOT quoted identifier.
fn dot_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
}

fn kind(n: &GraphNode) -> &'static str {
    if n.is_mutation() {
        "mutation"
    } else if n.is_view() {
        "view"
    } else {
        "functional"
    }
}

impl Graph {
    fn json_value(&self, out: &mut String, v: &Value) {
        match v {
            Value::Tensor(r) => json_str(out, &self.ref_name(r)),
            Value::TensorList(rs) => json_array(out, rs, |o, r| json_str(o, &self.ref_name(r))),
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Float(x) if x.is_finite() => out.push_str(&fmt_float(*x)),
            Value::Float(x) => {
                out.push_str("{\"float\":");
                json_str(out, &fmt_float(*x));
                out.push('}');
            }
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Ints(is) => json_array(out, is, |o, i| {
                let _ = write!(o, "{i}");
            }),
            Value::None => out.push_str("null"),
        }
    }

    /// The output names of node number `i`: `["add"]`, `["split[0]", ...]`.
    fn node_output_names(&self, i: usize) -> Vec<String> {
        let n = &self.nodes()[i];
        (0..n.outputs.len())
            .map(|k| {
                let index = (n.list || n.outputs.len() != 1).then_some(k);
                self.ref_name(&Ref::Node { node: i, index })
            })
            .collect()
    }

    /// The graph as JSON:
    ///
    /// ```text
    /// {"name":"forward",
    ///  "inputs":[{"name":"a_1","list":false,"len":1}],
    ///  "constants":["_tensor_constant0"],
    ///  "nodes":[{"name":"add","op":"add","kind":"functional",
    ///            "args":["a_1",1.0],"outputs":["add"]}, ...],
    ///  "outputs":["add"]}
    /// ```
    ///
    /// (on one line). Arguments: a tensor is its name as a string, a tensor
    /// list an array of names, an int a number, a float a number that always
    /// has a `.` (non-finite: `{"float":"inf"}`), an int list an array, a
    /// bool `true`/`false`, `None` `null`. `kind` is `mutation`, `view` or
    /// `functional`.
    ///
    /// ```
    /// use funcz_runtime::trace::{Arg, Graph, InputSpec, Node};
    /// let n = Node { op: "add", args: vec![Arg::Tensor(1), Arg::Float(1.0)], outputs: vec![2], list: false };
    /// let g = Graph::from_nodes("f", &[InputSpec::tensor("a", 1)], vec![n], &[2]);
    /// assert_eq!(g.to_json(), concat!(
    ///     r#"{"name":"f","inputs":[{"name":"a_1","list":false,"len":1}],"constants":[],"#,
    ///     r#""nodes":[{"name":"add","op":"add","kind":"functional","args":["a_1",1.0],"outputs":["add"]}],"#,
    ///     r#""outputs":["add"]}"#));
    /// ```
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        out.push_str("{\"name\":");
        json_str(&mut out, self.name());
        out.push_str(",\"inputs\":");
        json_array(&mut out, self.placeholders(), |o, p| {
            o.push_str("{\"name\":");
            json_str(o, &p.name);
            let _ = write!(o, ",\"list\":{},\"len\":{}}}", p.list, p.ids.len());
        });
        out.push_str(",\"constants\":");
        json_array(&mut out, self.constants(), |o, c| json_str(o, &c.name));
        out.push_str(",\"nodes\":");
        json_array(&mut out, self.nodes().iter().enumerate(), |o, (i, n)| {
            o.push_str("{\"name\":");
            json_str(o, &n.name);
            o.push_str(",\"op\":");
            json_str(o, n.op);
            o.push_str(",\"kind\":");
            json_str(o, kind(n));
            o.push_str(",\"args\":");
            json_array(o, &n.args, |o, a| self.json_value(o, a));
            o.push_str(",\"outputs\":");
            json_array(o, self.node_output_names(i), |o, s| json_str(o, &s));
            o.push('}');
        });
        out.push_str(",\"outputs\":");
        json_array(&mut out, self.output_names(), |o, s| json_str(o, &s));
        out.push('}');
        out
    }

    /// The graph in Graphviz DOT. Placeholders are ellipses, constants
    /// dotted boxes, ops boxes labelled `name\naten::op`; mutations are red,
    /// views dashed. Each tensor argument draws an edge from its producer
    /// (labelled `[i]` for a list element, red into a mutation's receiver,
    /// dashed into a view), and every returned value an edge into the sink
    /// node `return`.
    ///
    /// ```
    /// use funcz_runtime::trace::{Arg, Graph, InputSpec, Node};
    /// let n = Node { op: "add_", args: vec![Arg::Tensor(1), Arg::Float(1.0)], outputs: vec![1], list: false };
    /// let g = Graph::from_nodes("f", &[InputSpec::tensor("a", 1)], vec![n], &[1]);
    /// let dot = g.to_dot();
    /// assert!(dot.contains(r#""add_" [label="add_\naten::add_", color=red, fontcolor=red];"#));
    /// assert!(dot.contains(r#""a_1" -> "add_" [color=red];"#));
    /// assert!(dot.contains(r#""add_" -> "return";"#));
    /// ```
    pub fn to_dot(&self) -> String {
        let mut out = String::new();
        out.push_str("digraph ");
        dot_str(&mut out, self.name());
        out.push_str(" {\n    rankdir=TB;\n    node [shape=box];\n");
        for p in self.placeholders() {
            out.push_str("    ");
            dot_str(&mut out, &p.name);
            out.push_str(" [shape=ellipse];\n");
        }
        for c in self.constants() {
            out.push_str("    ");
            dot_str(&mut out, &c.name);
            out.push_str(" [style=dotted];\n");
        }
        for n in self.nodes() {
            out.push_str("    ");
            dot_str(&mut out, &n.name);
            out.push_str(" [label=");
            dot_str(&mut out, &format!("{}\naten::{}", n.name, n.op));
            if n.is_mutation() {
                out.push_str(", color=red, fontcolor=red");
            } else if n.is_view() {
                out.push_str(", style=dashed");
            }
            out.push_str("];\n");
        }
        out.push_str("    \"return\" [shape=doubleoctagon];\n");
        let edge = |out: &mut String, r: &Ref, to: &str, attrs: &mut Vec<String>| {
            let (from, index) = match *r {
                Ref::Input { input, index } => (&self.placeholders()[input].name, index),
                Ref::Node { node, index } => (&self.nodes()[node].name, index),
                Ref::Constant(i) => (&self.constants()[i].name, None),
            };
            if let Some(i) = index {
                attrs.insert(0, format!("label=\"[{i}]\""));
            }
            out.push_str("    ");
            dot_str(out, from);
            out.push_str(" -> ");
            dot_str(out, to);
            if !attrs.is_empty() {
                let _ = write!(out, " [{}]", attrs.join(", "));
            }
            out.push_str(";\n");
        };
        for n in self.nodes() {
            for (k, r) in n.input_refs().iter().enumerate() {
                let mut attrs = Vec::new();
                if k == 0 && n.is_mutation() {
                    attrs.push("color=red".to_string());
                } else if k == 0 && n.is_view() {
                    attrs.push("style=dashed".to_string());
                }
                edge(&mut out, r, &n.name, &mut attrs);
            }
        }
        for r in self.outputs() {
            edge(&mut out, r, "return", &mut Vec::new());
        }
        out.push_str("}\n");
        out
    }
}
