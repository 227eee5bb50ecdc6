#!/usr/bin/env python3
"""Writes the never-miscompile corpus (issue 11): functions in the shapes
real ports use -- struct fields and methods, element references, typed
bindings, type aliases, references to bindings, helpers on temporary views,
functional-then-in-place chains -- crossed with mutations through views and
with control flow (early return, loops, match guards, closures).

Every case that the macro accepts goes to tests/never_miscompile.rs, built
annotated (both modes) and not, and run: the outputs and every tensor the
caller can see must agree. Every case the macro refuses goes to
funcz-macros/src/tests/refused.txt, where a unit test checks that it is a
spanned error with a `help:` (never a panic, never a rustc error at the
attribute). Which cases are refused is found by building: run this script,
then `cargo test --test never_miscompile --no-run`; the script's second
pass (`--refused N,N,...`) moves the cases the build reports to the list.
Run from the repository root.
"""

import sys

# (name, signature params, prelude lines, place, kind)
# kind says how the runner builds the inputs and what it compares.
SETUPS = [
    ("ref", "x: &Tensor", [], "x", "ref"),
    ("refmut", "x: &mut Tensor", [], "x", "refmut"),
    ("owned", "x: Tensor", [], "x", "owned"),
    ("field", "s: &mut State", [], "s.w", "state"),
    ("method_mut", None, [], "self.w", "method_mut"),
    ("method_ref", None, [], "self.w", "method_ref"),
    ("tuple", "p: (&Tensor, usize)", [], "p.0", "tuple"),
    ("elem", "xs: &mut [Tensor]", [], "xs[1]", "slice"),
    ("elem_ref", "xs: &mut [Tensor]", ["let x = &xs[1];"], "x", "slice"),
    ("ref_binding", "x: &Tensor", ["let r = &x;"], "r", "ref"),
    ("alias", "x: &Mat", [], "x", "ref"),
    ("typed", "x: &Tensor", ["let w: Tensor = x.shallow_clone();"], "w", "ref"),
    ("vec", "xs: Vec<Tensor>", [], "xs[0]", "vec"),
    ("local", "x: &Tensor", ["let l: Tensor = x * 2.0;"], "l", "ref"),
]

# Mutations through the place P (a [3, 4] tensor); `extra` is added to the
# returned value (a read that may be stale).
ACCESSES = [
    ("add", ["{P}.add_(1.0);"], "0.0"),
    ("narrow", ["{P}.narrow(0, 0, 2).mul_(2.0);"], "0.0"),
    ("select_fill", ["{P}.select(0, 1).fill_(7.0);"], "0.0"),
    ("view_chain", ["{P}.view([-1]).narrow(0, 1, 3).add_(1.0);"], "0.0"),
    ("bound_view", ["let v = {P}.narrow(1, 1, 2);", "v.clamp_(0.0, 5.0);"], "0.0"),
    ("func_then_inplace", ["let y = {P}.add(1.0).sqrt_();", "{P}.copy_(&y);"], "0.0"),
    ("helper_temp_view", ["helper_sub(&{P}.narrow(0, 0, 2));"], "0.0"),
    ("stale_read", ["let v = {P}.narrow(0, 0, 1);", "{P}.mul_(3.0);", "let sr = v.sum().item();"], "sr"),
    ("diagonal", ["{P}.unsqueeze(0).squeeze_dim(0).diagonal(0, 0, 1).add_(1.0);"], "0.0"),
    ("transpose", ["{P}.t().select(0, 2).sub_(0.5);"], "0.0"),
    ("chain_stmt", ["{P}.mul_(0.5).add_(2.0).clamp_(0.0, 4.0);"], "0.0"),
]

CONTROLS = ["plain", "early_return", "loop", "match_guard", "closure"]


def control(kind, access, place):
    """The body lines for one access under one kind of control flow."""
    a = [l.format(P=place) for l in access[1]]
    extra = access[2]
    if kind == "plain":
        return a + [f"acc += {extra};"]
    if kind == "early_return":
        return (["if flag {"] + ["    " + l for l in a]
                + [f"    return {place}.sum().item() + {extra};", "}"]
                + a + [f"acc += {extra};"])
    if kind == "loop":
        return (["for _ in 0..n {"] + ["    " + l for l in a]
                + [f"    acc += {extra};", "}"])
    if kind == "match_guard":
        return (["match n {", "    k if k > 1 => {"] + ["        " + l for l in a]
                + [f"        acc += {extra};", "    }", f"    _ => {{ {place}.mul_(0.5); }}", "}"])
    if kind == "closure":
        return (["let c = |t: &Tensor| t.sum().item();"] + a
                + [f"acc += {extra} + c(&{place});"])
    raise ValueError(kind)


def cases():
    out = []
    for si, s in enumerate(SETUPS):
        for ai, a in enumerate(ACCESSES):
            kinds = ["plain", CONTROLS[1 + (si + ai) % 4], CONTROLS[1 + (si * 3 + ai + 2) % 4]]
            seen = []
            for k in kinds:
                if k in seen:
                    continue
                seen.append(k)
                out.append((s, a, k))
    return out


ATTRS = ["", "#[funcz::functionalize]", '#[funcz::functionalize(remove = "mutations_and_views")]']
SUFFIX = ["", "_f", "_fv"]


def function(i, case, variant):
    s, a, k = case
    name, params, prelude, place, kind = s
    body = ["let mut acc = 0.0f32;"] + prelude + control(k, a, place)
    body.append(f"acc + {place}.sum().item()")
    attr = ATTRS[variant]
    fname = f"c{i}{SUFFIX[variant]}"
    if kind.startswith("method"):
        recv = "&mut self" if kind == "method_mut" else "&self"
        sig = f"fn {fname}({recv}, n: usize, flag: bool) -> f32"
    else:
        sig = f"fn {fname}({params}, n: usize, flag: bool) -> f32"
    lines = [f"    {attr}" if attr else None, f"    {sig} {{"]
    lines = [l for l in lines if l]
    lines += ["        " + l for l in body] + ["    }"]
    return "\n".join(lines)


def runner(i, case):
    s = case[0]
    kind = s[4]
    f = [f"c{i}", f"c{i}_f", f"c{i}_fv"]
    if kind == "ref":
        call = "let x = iota(); let r = [{f}][v](&x, n, flag); vec![scalar(r), x]"
    elif kind == "refmut":
        call = "let mut x = iota(); let r = [{f}][v](&mut x, n, flag); vec![scalar(r), x]"
    elif kind == "owned":
        call = "let x = iota(); let h = x.shallow_clone(); let r = [{f}][v](x, n, flag); vec![scalar(r), h]"
    elif kind == "state":
        call = "let mut s = State::new(); let r = [{f}][v](&mut s, n, flag); vec![scalar(r), s.w, s.m]"
    elif kind == "method_mut":
        call = ("let mut s = State::new(); let m: [fn(&mut State, usize, bool) -> f32; 3] = [{m}]; "
                "let r = m[v](&mut s, n, flag); vec![scalar(r), s.w, s.m]")
    elif kind == "method_ref":
        call = ("let s = State::new(); let m: [fn(&State, usize, bool) -> f32; 3] = [{m}]; "
                "let r = m[v](&s, n, flag); vec![scalar(r), s.w, s.m]")
    elif kind == "tuple":
        call = "let x = iota(); let r = [{f}][v]((&x, 1), n, flag); vec![scalar(r), x]"
    elif kind == "slice":
        call = ("let mut xs = vec![iota(), iota()]; let r = [{f}][v](&mut xs, n, flag); "
                "let mut o = vec![scalar(r)]; o.extend(xs); o")
    elif kind == "vec":
        call = ("let xs = vec![iota(), iota()]; let hs: Vec<Tensor> = xs.iter().map(|t| t.shallow_clone()).collect(); "
                "let r = [{f}][v](xs, n, flag); let mut o = vec![scalar(r)]; o.extend(hs); o")
    else:
        raise ValueError(kind)
    m = ", ".join(f"State::{x}" for x in f)
    body = call.format(f=", ".join(f), m=m)
    return f"fn run_c{i}(v: usize, n: usize, flag: bool) -> Vec<Tensor> {{\n    {body}\n}}"


HEADER = '''//! Generated by scripts/gen_corpus.py -- do not edit by hand.
//!
//! The never-miscompile corpus (issue 11): functions in the shapes real
//! ports use (struct fields and methods, element references, typed bindings,
//! type aliases, references to bindings, helpers on temporary views,
//! functional-then-in-place chains), each mutated through views under
//! several kinds of control flow. Each case is built unannotated and in both
//! modes, and run with several (n, flag): the value returned and every
//! tensor the caller can see must agree. The cases the macro refuses are in
//! funcz-macros/src/tests/refused.txt (checked to be spanned errors).
#![allow(clippy::all, unused_variables, unused_mut, unused_assignments)]

use funcz::Tensor;

type Mat = Tensor<f32>;

fn iota() -> Tensor {
    Tensor::from_vec((0..12).map(|i| i as f32 * 0.5 - 2.0).collect(), &[3, 4])
}

fn scalar(v: f32) -> Tensor {
    Tensor::from_vec(vec![v], &[1])
}

fn helper_sub(t: &Tensor) {
    t.sub_(1.0);
}

pub struct State {
    w: Tensor,
    m: Tensor,
}

impl State {
    fn new() -> Self {
        State { w: iota(), m: iota() * 3.0 }
    }
}
'''

FOOTER = '''
#[test]
fn every_case_agrees_with_the_original() {
    let mut checked = 0;
    for (name, run) in CASES {
        for (n, flag) in [(0, false), (2, true), (3, false)] {
            let want = run(0, n, flag);
            for v in 1..3 {
                let got = run(v, n, flag);
                assert_eq!(want.len(), got.len(), "{name} v{v}");
                for (k, (a, b)) in want.iter().zip(&got).enumerate() {
                    assert_eq!(a.shape(), b.shape(), "{name} v{v} (n = {n}, flag = {flag}): tensor {k} shape");
                    let same = a.to_vec().iter().zip(b.to_vec()).all(|(x, y)| x == &y || (x.is_nan() && y.is_nan()));
                    assert!(same, "{name} v{v} (n = {n}, flag = {flag}): tensor {k}\\noriginal: {a:?}\\nfunctionalized: {b:?}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 6 * CASES.len());
    assert!(CASES.len() >= 300, "the corpus has {} cases", CASES.len());
}
'''


def main():
    refused = set()
    if len(sys.argv) > 2 and sys.argv[1] == "--refused":
        refused = {int(x) for x in sys.argv[2].split(",") if x}
    all_cases = cases()
    accepted, refused_src = [], []
    for i, c in enumerate(all_cases):
        (refused_src if i in refused else accepted).append((i, c))
    out = [HEADER]
    methods = []
    for i, c in accepted:
        if c[0][4].startswith("method"):
            methods.append("\n\n".join(function(i, c, v) for v in range(3)))
        else:
            out.append("\n\n".join(function(i, c, v).replace("\n    ", "\n")[4:] for v in range(3)))
        out.append(runner(i, c))
    out.append("impl State {\n" + "\n\n".join(methods) + "\n}")
    out.append("const CASES: &[(&str, fn(usize, usize, bool) -> Vec<Tensor>)] = &[")
    for i, c in accepted:
        s, a, k = c
        out.append(f'    ("c{i}: {s[0]} / {a[0]} / {k}", run_c{i}),')
    out.append("];")
    out.append(FOOTER)
    open("tests/never_miscompile.rs", "w").write("\n\n".join(out))
    # The refused cases, as the macro sees them (one function per block).
    rs = []
    for i, c in refused_src:
        s, a, k = c
        src = function(i, c, 0).replace("\n    ", "\n")[4:]
        rs.append(f"// c{i}: {s[0]} / {a[0]} / {k}\n{src}")
    open("funcz-macros/src/tests/refused.txt", "w").write("\n=====\n".join(rs) + "\n")
    print(f"{len(all_cases)} cases: {len(accepted)} accepted, {len(refused_src)} refused")


main()
