//! Expansion snapshots: what the macro writes for representative functions.

use super::expand_pretty;

macro_rules! snap {
    ($name:ident, $args:expr, $src:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(expand_pretty($args, $src));
        }
    };
}

snap!(
    seed_intermediate_views,
    "",
    "fn f(a: &Tensor) -> Tensor { let b = a + 1.0; let c = b.view([-1]); c.add_(1.0); b }"
);

snap!(
    seed_input_mutation_copies,
    "remove = \"mutations_and_views\"",
    "fn g(a: Tensor) -> Tensor { let b = a.view([-1]); b.add_(1.0); a }"
);

snap!(
    chained_inplace_on_input,
    "",
    "fn f(x: &Tensor) -> Tensor { x.mul_(2.0).add_(3.0); let c = x.narrow(0, 0, 1).add_(5.0); c.sum() }"
);

snap!(
    row_loop,
    "",
    "fn f(b: &mut Tensor, n: usize) { for i in 0..n { b.select(0, i).mul_(2.0); } }"
);

snap!(
    unbind_loop,
    "remove = \"mutations_and_views\"",
    "fn f(x: &Tensor) -> Tensor { let b = x.clone(); for r in b.unbind(0) { r.mul_(2.0); } b }"
);

snap!(
    metadata_mutation_of_input,
    "",
    "fn f(x: &mut Tensor) -> Tensor { x.t_(); x.select(0, 0).fill_(1.0); x.sum() }"
);

snap!(
    early_return_and_try,
    "",
    "fn f(x: &Tensor, stop: usize) -> Result<Tensor, String> { \
        for i in 0..4 { if i == stop { return Ok(x.sum()); } x.select(0, i).add_(1.0); } \
        let s = check(x)?; Ok(s) }"
);

snap!(
    adam_over_slices,
    "",
    "fn adam(params: &mut [Tensor], grads: &[Tensor], m: &mut [Tensor], lr: f32) { \
        for i in 0..params.len() { m[i].mul_(0.9).add_(&(&grads[i] * 0.1)); params[i].sub_(&(&m[i] * lr)); } }"
);

snap!(
    opaque_helper,
    "",
    "fn f(x: &Tensor) -> Tensor { let b = x.clone(); let r = b.select(0, 1); helper(&r); b.sum() }"
);

snap!(
    kv_cache,
    "remove = \"mutations_and_views\"",
    "fn step(cache: &Tensor, new: &Tensor, pos: usize) -> Tensor { \
        cache.narrow(0, pos, 1).copy_(new); cache.narrow(0, 0, pos + 1).sum_dim(0, false) }"
);

snap!(
    method_in_impl,
    "",
    "fn apply(&self, x: &Tensor) -> Tensor { x.mul_(self.scale); x.relu_(); x.sum() }"
);

/// A fused run of three ops as a user's build sees it (without this
/// workspace's `FUNCZ_KERNELS_IN_DEBUG`): the compiled kernel only under
/// `cfg(not(debug_assertions))`, the plain run otherwise.
#[test]
fn fused_kernel_only_in_optimized_builds() {
    crate::lower::fuse_no_kernels_in_debug(true);
    let out = expand_pretty(
        "",
        "fn f(x: &mut Tensor, w: &Tensor) { x.mul_(2.0).add_(w).relu_(); }",
    );
    crate::lower::fuse_no_kernels_in_debug(false);
    let debug = out.find("#[cfg(debug_assertions)]").expect("a debug arm");
    let optimized = out
        .find("#[cfg(not(debug_assertions))]")
        .expect("an optimized arm");
    let kernels: Vec<_> = out
        .match_indices("fused_run_kernel(")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(kernels.len(), 1, "{out}");
    assert!(debug < optimized && optimized < kernels[0], "{out}");
    insta::assert_snapshot!(out);
}

/// Up to 12 inputs are checked through a tuple (`rt::InputKeys`); more
/// through the slice of `&dyn InputKey`, which has no size limit.
#[test]
fn input_check_beyond_twelve_inputs_uses_the_slice() {
    let params: Vec<String> = (0..13).map(|i| format!("t{i}: &Tensor")).collect();
    let src = format!(
        "fn f(x: &mut Tensor, {}) {{ x.add_(1.0); }}",
        params.join(", ")
    );
    let out = expand_pretty("", &src);
    assert!(out.contains("check_inputs_disjoint("), "{out}");
    assert!(!out.contains("check_inputs_disjoint_of"), "{out}");
    let src = "fn f(x: &mut Tensor, t0: &Tensor, t1: &Tensor) { x.add_(1.0); }";
    let out = expand_pretty("", src);
    assert!(out.contains("check_inputs_disjoint_of"), "{out}");
}
