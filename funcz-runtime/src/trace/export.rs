//! Exporting a [`Graph`] as JSON (feature `serde`; read back by
//! [`Graph::from_json`]) and as Graphviz DOT.

use std::fmt::Write;

use super::graph::{Graph, Ref};

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

/// Why [`Graph::from_json`] refused its input.
#[cfg(feature = "serde")]
#[derive(Debug)]
pub enum JsonError {
    /// Not JSON, or not the shape of a graph.
    Syntax(serde_json::Error),
    /// A graph whose references do not resolve (message names the value).
    Invalid(String),
}

#[cfg(feature = "serde")]
impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonError::Syntax(e) => write!(f, "funcz: graph JSON: {e}"),
            JsonError::Invalid(m) => write!(f, "funcz: graph JSON: {m}"),
        }
    }
}

#[cfg(feature = "serde")]
impl std::error::Error for JsonError {}

impl Graph {
    /// The graph as JSON (feature `serde`): every field of the graph —
    /// placeholders with their shapes and dtypes, nodes with their op,
    /// resolved arguments and output shapes, constants with their values,
    /// returned values. [`Graph::from_json`] reads it back.
    ///
    /// ```
    /// use funcz_runtime::trace::{Arg, Graph, InputSpec, Node, DType, TensorMeta};
    /// let m = TensorMeta::new(&[2], DType::Float32);
    /// let n = Node::new("add", vec![Arg::Tensor(1), Arg::Float(1.0)], 2).with_metas(vec![m.clone()]);
    /// let g = Graph::from_nodes("f", &[InputSpec::tensor("a", 1).with_metas(vec![m])], vec![n], &[2]);
    /// let json = g.to_json();
    /// assert!(json.contains(r#""op":"add""#) && json.contains(r#""dtype":"float32""#));
    /// assert_eq!(Graph::from_json(&json).unwrap(), g);
    /// ```
    #[cfg(feature = "serde")]
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("funcz: to_json: a graph always serializes")
    }

    /// [`to_json`](Self::to_json), indented.
    #[cfg(feature = "serde")]
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("funcz: to_json: a graph always serializes")
    }

    /// Reads a graph written by [`to_json`](Self::to_json) (feature
    /// `serde`), checking that every reference resolves to an input, an
    /// earlier node's output or a constant.
    #[cfg(feature = "serde")]
    pub fn from_json(json: &str) -> Result<Graph, JsonError> {
        let g: Graph = serde_json::from_str(json).map_err(JsonError::Syntax)?;
        g.check_refs().map_err(JsonError::Invalid)?;
        Ok(g)
    }

    /// Checks that every reference resolves (inputs, earlier nodes, list
    /// indices, constants) and that recorded shapes match the outputs.
    pub fn check_refs(&self) -> Result<(), String> {
        let ok = |r: &Ref, before: usize| -> bool {
            match *r {
                Ref::Input { input, index } => {
                    self.placeholders().get(input).is_some_and(|p| match index {
                        Some(i) => p.list && i < p.ids.len(),
                        None => !p.list,
                    })
                }
                Ref::Node { node, index } => {
                    node < before
                        && match index {
                            Some(i) => i < self.nodes()[node].outputs.len(),
                            None => self.nodes()[node].outputs.len() == 1,
                        }
                }
                Ref::Constant(i) => i < self.constants().len(),
            }
        };
        for (i, n) in self.nodes().iter().enumerate() {
            for r in n.input_refs() {
                if !ok(&r, i) {
                    return Err(format!(
                        "node {} ({}) reads {r:?}, which does not exist",
                        n.name, n.op
                    ));
                }
            }
            if !n.metas.is_empty() && n.metas.len() != n.outputs.len() {
                return Err(format!(
                    "node {} has {} outputs but {} shapes",
                    n.name,
                    n.outputs.len(),
                    n.metas.len()
                ));
            }
        }
        for r in self.outputs() {
            if !ok(r, self.nodes().len()) {
                return Err(format!("the graph returns {r:?}, which does not exist"));
            }
        }
        Ok(())
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
    /// let n = Node::new("add_", vec![Arg::Tensor(1), Arg::Float(1.0)], 1);
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
