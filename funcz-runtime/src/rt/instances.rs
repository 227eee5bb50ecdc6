//! The runtime's helpers compiled once, here, for `f32` (the default
//! element type), so that a crate of `#[functionalize]`d functions links
//! them instead of compiling its own copies.
//!
//! Input: nothing (nothing calls [`f32_instances`]).
//! Output: an instance of each generic helper generated code calls, for
//! `f32`, in this crate's object code.
//!
//! An unoptimized build shares generic instances across crates (rustc's
//! `share-generics`, on at `opt-level = 0`): a crate that needs
//! `on_var::relu_::<f32>` uses the one an upstream crate exports rather than
//! generating and compiling its own, together with everything it calls
//! (the window, commit and own machinery, a few hundred lines of LLVM IR
//! per helper). Nothing in this crate calls the helpers with `f32`, so
//! without this list every user crate compiled all of them again; with it
//! the first annotated function of a crate costs about as much to compile
//! as the first unannotated one (see BENCHMARKS.md, "Shared f32 instances
//! and lighter generated code").
//! Other element types are compiled where they are used, as before.

#![cfg_attr(not(debug_assertions), allow(unused_imports, unused_macros))]

use super::*;
use crate::tensor::Tensor;

/// Takes the address of each listed function for `f32`.
macro_rules! addresses {
    ($($($path:ident)::+),* $(,)?) => {
        [$($($path)::+::<f32> as *const ()),*]
    };
}

/// Takes the address of each listed method of `$ty<f32>`.
macro_rules! methods {
    ($ty:ident: $($name:ident)*) => {
        [$($ty::<f32>::$name as *const ()),*]
    };
}

/// The addresses of the `f32` instances of the helpers generated code
/// calls: what makes this crate compile them (the list is the point; the
/// addresses are never used). Empty in a build without debug assertions
/// (an optimized one, which shares no instances across crates): there the
/// list would only change how this crate's own code is inlined (an
/// optimized KV update took 1.5% more instructions with it).
///
/// ```
/// let n = funcz_runtime::rt::f32_instances().len();
/// assert_eq!(n > 100, cfg!(debug_assertions));
/// ```
#[doc(hidden)]
pub fn f32_instances() -> Vec<*const ()> {
    #[cfg(debug_assertions)]
    return unoptimized();
    #[cfg(not(debug_assertions))]
    Vec::new()
}

/// [`f32_instances`] in a build with debug assertions.
#[cfg(debug_assertions)]
fn unoptimized() -> Vec<*const ()> {
    // A tensor operand (`'static`: a fn pointer of a generic operand
    // names one type, not one per lifetime).
    type T = &'static Tensor<f32>;
    type W = InPlaceWindow<'static, f32>;
    let mut all = Vec::new();
    all.extend(addresses!(
        replay,
        writeback,
        can_donate,
        can_donate_alias,
        can_donate_elem,
        can_donate_root,
        donated,
        can_update_element,
        check_reorder,
        own_element,
        reordered,
        replaced_by_call,
        slots_at,
        element_index,
        retire_slot,
        write_back_kept,
        multi_out,
        fused_root,
        fused_root_any,
        fused_run,
        fused_run_kernel,
        fused_value,
        fused_value_any,
        check_fresh,
        detach_all,
        identity,
        input,
        inputs,
        input_slice,
        rebind,
        released,
        write_back,
        write_back_all,
        write_back_layout,
        write_back_mut,
        write_back_owned,
        write_back_vec,
        check_args_overlap,
        kept,
        kept_shape,
        output,
        output_root,
        check_current,
        own,
        own_alias,
        own_root,
        commit,
        commit_donated,
        commit_from,
        commit_resized,
        commit_root,
        donated_root,
        handle,
        meta_inplace,
        multi_view,
        read_view,
        sync,
        sync_all,
        version,
        view,
        view_value,
        commit_var,
        commit_vars,
        donated_var,
        own_alias_var,
        own_alias_vars,
        own_var,
        sync_var,
        sync_vars,
        var_view,
        var_view_of,
        view_var,
        window_var,
        window_var_done,
        watch,
        watched,
        inplace_window,
        inplace_window_var,
        window,
        window_done,
    ));
    all.extend(addresses!(
        views::view,
        views::view_var,
        views::var_view,
        views::var_view_of,
        views::view_value,
        views::multi_view,
        views::multi_out,
        views::meta_inplace,
        views::window,
        views::window_var,
        views::commit,
        views::commit_from,
        views::commit_donated,
        views::commit_var,
        views::commit_vars,
        views::check_current,
        views::sync,
        views::sync_var,
        views::sync_vars,
        views::sync_all,
        views::output,
        views::inplace_window,
        views::inplace_window_var,
    ));
    all.extend(addresses!(
        copies::view,
        copies::view_var,
        copies::var_view,
        copies::var_view_of,
        copies::view_value,
        copies::multi_view,
        copies::multi_out,
        copies::meta_inplace,
        copies::window,
        copies::window_var,
        copies::commit,
        copies::commit_from,
        copies::commit_donated,
        copies::commit_var,
        copies::commit_vars,
        copies::check_current,
        copies::sync,
        copies::sync_var,
        copies::sync_vars,
        copies::sync_all,
        copies::output,
        copies::inplace_window,
        copies::inplace_window_var,
    ));
    all.extend(methods!(Var: root input of_pair));
    all.extend(addresses!(Tracked::root, Tracked::input, Tracked::element));
    // The window's op methods without a generic operand (generated code
    // still calls them when an op's arguments must be evaluated after the
    // window; `InPlace`'s are called only by the one-call forms below).
    all.extend(
        methods!(InPlaceWindow: neg_ abs_ relu_ addcmul_ fill_ zero_ copy_ clamp_min_
        clamp_max_ sign_ exp_ log_ sqrt_ sigmoid_ tanh_ addcdiv_ hardtanh_ addcmul1_ addcdiv1_),
    );
    // Those with a generic operand: for a scalar and for a tensor (the
    // instance is chosen by the fn pointer's type).
    macro_rules! typed {
        ($($f:expr => $ty:ty),* $(,)?) => {
            [$({
                let f: $ty = $f;
                f as *const ()
            }),*]
        };
    }
    macro_rules! operand_ops {
        ($($ty:ident as $recv:ty: $($name:ident)*;)*) => { $($(
            all.extend(typed!($ty::$name => fn($recv, f32), $ty::$name => fn($recv, T)));
        )*)* };
    }
    operand_ops!(W as W: add_ sub_ mul_ div_ pow_;);
    all.extend(typed!(
        W::add_scaled_ => fn(W, f32, f32),
        W::add_scaled_ => fn(W, T, f32),
        W::clamp_ => fn(W, f32, f32),
        W::lerp_ => fn(W, T, f32),
    ));
    // The one-call forms (`on_var::add_(&mut v, x)`), for each target form:
    // the ops without a generic operand by name, the others for a scalar
    // and for a tensor.
    macro_rules! form_ops {
        ($f:ident ($($tt:ty),*): $($name:ident)*) => {
            all.extend([$($f::$name::<f32> as *const ()),*]);
            all.extend(typed!(
                $f::add_ => fn($($tt,)* f32), $f::add_ => fn($($tt,)* T),
                $f::sub_ => fn($($tt,)* f32), $f::sub_ => fn($($tt,)* T),
                $f::mul_ => fn($($tt,)* f32), $f::mul_ => fn($($tt,)* T),
                $f::div_ => fn($($tt,)* f32), $f::div_ => fn($($tt,)* T),
                $f::pow_ => fn($($tt,)* f32), $f::pow_ => fn($($tt,)* T),
                $f::add_scaled_ => fn($($tt,)* f32, f32),
                $f::add_scaled_ => fn($($tt,)* T, f32),
                $f::sub_scaled_ => fn($($tt,)* T, f32),
                $f::clamp_ => fn($($tt,)* f32, f32),
                $f::lerp_ => fn($($tt,)* T, f32),
            ));
        };
    }
    macro_rules! all_forms {
        ($($name:ident)*) => {{
            use copies::on_alias as copies_alias;
            use views::on_alias as views_alias;
            form_ops!(on_var(&mut Var<f32>): $($name)*);
            form_ops!(on_root(&mut Tensor<f32>, &mut Tracked): $($name)*);
            form_ops!(on_value(&mut Tensor<f32>): $($name)*);
            form_ops!(views_alias(&mut Var<f32>, &mut Var<f32>): $($name)*);
            form_ops!(copies_alias(&mut Var<f32>, &mut Var<f32>): $($name)*);
            use copies::on_window as copies_window;
            use copies::on_window_var as copies_window_var;
            use views::on_window as views_window;
            use views::on_window_var as views_window_var;
            form_ops!(views_window_var(&mut Var<f32>, ViewMeta): $($name)*);
            form_ops!(copies_window_var(&mut Var<f32>, ViewMeta): $($name)*);
            form_ops!(views_window(&mut Tensor<f32>, &mut Tracked, ViewMeta): $($name)*);
            form_ops!(copies_window(&mut Tensor<f32>, &mut Tracked, ViewMeta): $($name)*);
        }};
    }
    all_forms!(neg_ abs_ relu_ addcmul_ fill_ zero_ copy_ clamp_min_ clamp_max_ sign_ exp_ log_
        sqrt_ sigmoid_ tanh_ addcdiv_ hardtanh_ addcmul1_ addcdiv1_);
    // The input check: the keys of a tensor and of a slice of them (and
    // of references to them: the check's `&dyn InputKey`s), and the check
    // of 2 to 6 tensor inputs (references, `&mut` ones reborrowed).
    macro_rules! input_keys {
        ($($ty:ty),*) => { $(all.extend([
            <$ty as InputKey>::visit_keys as *const (),
            <$ty as InputKey>::single_key as *const (),
            <$ty as InputKey>::single_tensor as *const (),
            <$ty as InputKey>::storage_keys as *const (),
        ]);)* };
    }
    input_keys!(
        Tensor<f32>,
        &Tensor<f32>,
        [Tensor<f32>],
        &[Tensor<f32>],
        Vec<Tensor<f32>>,
        &Vec<Tensor<f32>>
    );
    macro_rules! tensor_tuples {
        ($($tuple:ty),*) => { $(all.extend([
            <$tuple as InputKeys>::check_disjoint as *const (),
            check_inputs_disjoint_of::<$tuple> as *const (),
        ]);)* };
    }
    tensor_tuples!(
        (T, T),
        (T, T, T),
        (T, T, T, T),
        (T, T, T, T, T),
        (T, T, T, T, T, T)
    );
    all.extend([
        core::ptr::drop_in_place::<Var<f32>> as *const (),
        core::ptr::drop_in_place::<W> as *const (),
        core::ptr::drop_in_place::<Window<f32>> as *const (),
    ]);
    all
}
