//! Real PyTorch code, ported the way PyTorch writes it (in-place ops, slice
//! assignment, masks, state updated in place), run as the original and both
//! functionalized modes and compared with values recorded from PyTorch
//! itself (`scripts/record_ported.py` → `tests/fixtures/ported.json`;
//! torch's version is in the fixture).
//!
//! - `optim.rs`: the single-tensor implementations of `torch.optim`'s SGD
//!   (momentum, nesterov), Adam and AdamW (with amsgrad), RMSprop
//!   (centered), Adagrad, Adadelta, Adamax, NAdam, RAdam and Rprop, three
//!   steps each; the parameter and every state tensor are compared.
//! - `optim_module.rs`: Adam and SGD (momentum, nesterov) as classes: state
//!   in `Vec<Tensor>` fields of the optimizer struct, created lazily on the
//!   first step, `step(&mut self, ..)` a method.
//! - `functional.rs`: `torch.nn.functional`'s softmax, log_softmax,
//!   layer_norm, batch_norm in training (running statistics updated in
//!   place), group_norm, rms_norm, embedding, cross_entropy (with label
//!   smoothing), nll_loss, mse_loss and scaled dot-product attention with a
//!   causal mask.

// The ports keep PyTorch's shape: its argument lists (torch.optim's
// functions take every hyperparameter), `&` on every tensor argument,
// names bound then returned, and a name declared before the branches that
// assign it.
#![allow(
    clippy::too_many_arguments,
    clippy::needless_borrows_for_generic_args,
    clippy::let_and_return,
    clippy::needless_late_init
)]

#[macro_use]
#[path = "../common/mod.rs"]
mod common;
mod fixture;
mod functional;
mod optim;
mod optim_module;
