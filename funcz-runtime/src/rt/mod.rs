//! The runtime half of `#[functionalize]`.
//!
//! The macro decides statically which variables alias which root and where
//! to write back and regenerate; this module carries each alias's view chain
//! as a value ([`Tracked`]) and performs the functional updates:
//! [`view`] makes an alias (a view or a `*_copy`, by [`Mode`]), [`commit`]
//! writes a mutated alias's new value back into its root through the chain's
//! inverses, [`sync`] regenerates a stale alias from its root, and
//! [`write_back`] copies a mutated input's final value into the caller's
//! tensor at exit. Functional updates reuse buffers nobody else can
//! observe: generated code runs the in-place kernel on a value that
//! [`can_donate`] (or [`can_donate_alias`]) allows, then [`donated_root`] /
//! [`commit_donated`] record it as the functional op with a fresh identity,
//! and write-backs into a uniquely held root write only the window
//! (`writeback_into`); traces stay functional.
//!
//! Generated code calls these functions by absolute path
//! (`::funcz::rt::...`); they are public so that expansions compile in user
//! crates, and documented so that a reader of an expansion knows what each
//! call does.

mod apply;
mod chain;
mod donate;
mod elements;
mod exit;
mod fuse;
mod fuse_kernel;
mod fuse_multi;
mod inplace;
mod instances;
pub use instances::f32_instances;
mod inputs;
mod kept;
mod list;
mod meta;
mod modes;
mod output;
mod own;
mod readers;
mod tracked;
mod untracked;
mod var;
pub use inplace::{
    InPlace, inplace_alias, inplace_root, inplace_value, inplace_var, on_root, on_value, on_var,
};
pub use modes::{copies, views};
mod watch;
mod window;

pub use chain::{replay, writeback};
pub use donate::{can_donate, can_donate_alias, can_donate_elem, can_donate_root, donated};
pub use elements::{
    Replaced, can_update_element, check_reorder, element_index, own_element, reordered,
    replaced_by_call, replaced_by_call_all, retire_slot, slots, slots_at, write_back_kept,
    write_back_slots,
};
pub use exit::{Exit, is_exit, multi_out, resized};
pub use fuse::{
    FloatFuseTable, FuseArg, FuseTable, Fusion, IntoFuseArg, Step, StepArg, StepOperand,
    fused_passes, fused_root, fused_root_any, fused_run, fused_run_kernel, fused_value,
    fused_value_any, kernel_blocks, set_min_fused,
};
pub use fuse_kernel::{
    FusedOperand, FusedParams, Kernel, fuse_loop, fuse_loop_wide, k, kernels_run,
};
pub use fuse_multi::{MultiKernel, elems_fusable, fuse_loop_multi, fused_elems, multi_passes};
pub use inputs::{
    InputKey, InputKeys, Owned, check_fresh, check_inputs_disjoint, check_inputs_disjoint_of,
    check_temp, detach_all, identity, input, input_slice, inputs, owned, place_handle, rebind,
    released, write_back, write_back_all, write_back_layout, write_back_mut, write_back_owned,
    write_back_vec,
};
pub use kept::{check_args_overlap, kept, kept_shape};
pub use list::{TensorList, list, list_handles, list_mut, write_back_list};
pub use meta::{MultiMeta, ViewMeta};
pub use output::{output, output_root};
pub use own::{check_current, own, own_alias, own_root};
pub use readers::{KeyProbe, ViaKey, ViaNone, check_readers_disjoint};
pub use tracked::{
    Tracked, bind_view, bind_views, check_chain_copy, commit, commit_donated, commit_from,
    commit_resized, commit_root, donated_root, handle, meta_inplace, multi_view, read_view,
    refresh_chain, resize_root, resize_view, sync, sync_all, version, view, view_value,
};
pub use untracked::{CompoundProbe, OtherCompound, TensorCompound, UntrackedCompound};
pub use var::{
    Var, commit_var, commit_vars, donated_var, own_alias_var, own_alias_vars, own_var, sync_var,
    sync_vars, var_view, var_view_of, view_var, window_var, window_var_done,
};
pub use watch::{Watch, watch, watched};
pub use window::{InPlaceWindow, Window, inplace_window, inplace_window_var, window, window_done};

/// Which ops the functionalized body may still run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `remove = "mutations"`: views stay views.
    Views,
    /// `remove = "mutations_and_views"`: every view becomes its `*_copy`.
    Copies,
}
