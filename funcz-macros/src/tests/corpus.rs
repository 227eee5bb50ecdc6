//! The expander never panics: over a varied corpus of functions (tensor
//! code, ordinary Rust, and mistakes), every output parses as Rust, and is
//! either a rewritten function or the original plus `compile_error!`s.

use proc_macro2::TokenStream;

pub(super) const CORPUS: &[&str] = &[
    "fn f() {}",
    "fn f(x: u32) -> u32 { x + 1 }",
    "fn f(s: &str) -> Vec<&str> { s.split(',').collect() }",
    "fn f(v: &mut Vec<i32>) { v.push(1); v.sort(); }",
    "fn f<T: Clone>(t: &T) -> T { t.clone() }",
    "fn f(x: &Tensor) -> Tensor { x.add(1.0) }",
    "fn f(x: &Tensor) -> Tensor { x.add_(1.0) }",
    "fn f(x: &Tensor) -> Tensor { let y = x.t(); y.add_(1.0); x.sum() }",
    "fn f(x: &mut Tensor) { x.t_(); x.t_(); }",
    "fn f(x: Tensor) -> Tensor { x.view([-1]).add_(1.0); x }",
    "fn f(xs: &mut [Tensor]) { for x in xs.iter_mut() { x.mul_(2.0); } }",
    "fn f(xs: Vec<Tensor>) -> Vec<Tensor> { xs[0].add_(1.0); xs }",
    "fn f(xs: &Vec<Tensor>) { xs[0].add_(1.0); }",
    "fn f(x: &Tensor) { let parts = x.split(2, 0); parts[0].add_(1.0); }",
    "fn f(x: &Tensor) { for p in x.chunk(2, 0) { p.zero_(); } }",
    "fn f(x: &Tensor) -> Option<Tensor> { x.add_(1.0); let y = g()?; Some(y) }",
    "fn f(x: &Tensor, c: bool) -> Tensor { if c { return x.clone(); } x.add_(1.0); x.sum() }",
    "fn f(x: &Tensor) { let c = || x.add_(1.0); c(); }",
    "fn f(x: &Tensor) { let c = |y: &Tensor| y.add_(1.0); c(x); }",
    "fn f(x: &Tensor) { println!(\"{}\", x.add_(1.0)); }",
    "fn f(x: &Tensor) { vec![x.add_(1.0)]; }",
    "fn f(x: &Tensor) { x.backward(); }",
    "fn f(a: &Tensor, b: &Tensor, c: bool) { let v = if c { a.t() } else { b.t() }; v.add_(1.0); }",
    "fn f(a: &Tensor) { let mut v = a.t(); v = a.view([-1]); v.add_(1.0); }",
    "fn f(a: &Tensor) { let mut v = a.t(); v.resize_([3]); }",
    "fn f(a: &Tensor) { let mut v = a.clone(); v.resize_([3]); }",
    "fn f(a: &Tensor) { let (b, c) = (a.t(), a.view([-1])); b.add_(1.0); c.sum(); }",
    "fn f(a: &Tensor) { match a.dim() { 0 => { a.add_(1.0); } _ => {} } }",
    "fn f(a: &Tensor) { 'outer: loop { a.add_(1.0); break 'outer; } }",
    "fn f(a: &Tensor) { let mut x = a.clone(); x += 1.0; x *= &x.clone(); }",
    "fn f(a: &Tensor) { let x = a.clone(); *&x; }",
    "fn f(a: &Tensor) -> impl Fn() -> f32 { let s = a.sum().item(); move || s }",
    "fn f(&self) {}",
    "fn f(&mut self, x: &Tensor) { self.w.add_(x); }",
    "fn f(x: &Tensor) { async { x.add_(1.0); }; }",
    "fn f(x: &Tensor) { let _ = x.unfold(0, 2, 2).add_(1.0); }",
    "fn f(x: &Tensor) { x.as_strided([2], [1], 0).fill_(0.0); }",
    "fn f(x: &Tensor) { x.expand([2, 3]).add_(1.0); }",
    "fn f(x: &Tensor) { x.diagonal(0, 0, 1).copy_(&x.diagonal(1, 0, 1)); }",
    "fn f(x: &Tensor) { let y = x; y.add_(1.0); }",
    "fn f(x: &Tensor) { let Some(y) = Some(x) else { return }; y.add_(1.0); }",
    "fn f(x: &Tensor) { struct S; impl S { fn g(t: &Tensor) { t.add_(1.0); } } S::g(x); }",
    "fn f(x: &Tensor) { x.narrow(0, 0, 1).t_(); }",
    "fn f(x: &Tensor) -> Tensor { { x.add_(1.0) } }",
    "fn f(x: &Tensor) { let y: Tensor = helper(x); y.add_(1.0); }",
    "fn f(x: &Tensor, i: usize) -> f32 { x.select(0, i).add_(1.0).sum().item() }",
    // A parameter of a type the macro cannot see, proven a tensor by a
    // mutation through a reference to it or by a compound assignment.
    "fn f(x: &mut Mat, w: &Tensor) { let r = &x; r.add_(w); }",
    "fn f(x: &mut Mat, w: &Tensor) { *x -= w; }",
    "fn f(x: &mut Mat, w: &Tensor) { let v = &mut x[0]; v.add_(w); }",
    "const fn f() -> u8 { 3 }",
    "unsafe fn f(p: *const u8) -> u8 { *p }",
    "extern \"C\" fn f(x: i32) -> i32 { x }",
    "struct S;",
    "impl S { fn f(&self) {} }",
    "mod m {}",
    "fn f(x: &Tensor) { x.add_(",
    "",
    "fn",
    "#[cfg(test)] fn f(x: &Tensor) { x.add_(1.0); }",
];

const ARGS: &[&str] = &[
    "",
    "remove = \"mutations\"",
    "remove = \"mutations_and_views\"",
    "remove = \"nope\"",
    "bogus",
    "remove",
    "remove = 1",
    "remove = \"mutations\", remove = \"mutations\"",
    "(",
];

#[test]
fn expander_never_panics_and_always_emits_rust() {
    let mut rewritten = 0;
    let mut refused = 0;
    for args in ARGS {
        for src in CORPUS {
            let (Ok(a), Ok(item)) = (args.parse::<TokenStream>(), src.parse::<TokenStream>())
            else {
                continue;
            };
            let out = std::panic::catch_unwind(|| crate::expand::expand(a, item))
                .unwrap_or_else(|_| panic!("expander panicked on #[functionalize({args})] {src}"));
            let text = out.to_string();
            if text.contains("compile_error") {
                refused += 1;
            } else {
                rewritten += 1;
                // A rewritten item must parse as Rust.
                syn::parse2::<syn::File>(out.clone())
                    .unwrap_or_else(|e| panic!("unparsable expansion ({e}) of {src}:\n{text}"));
            }
        }
    }
    assert!(rewritten > 50, "only {rewritten} rewritten");
    assert!(refused > 50, "only {refused} refused");
}
