//! The function's inputs as bindings: its parameters, left to right, then
//! the field places the body mutates (`self.cache`). The analysis pass and
//! code generation both start from this declaration, so a binding has the
//! same id in both.
//!
//! Input: `fn f(&mut self, x: &Tensor, n: usize)` using `self.cache`.
//! Output: bindings `x` (a `&Tensor` root), `n` (not a tensor) and
//! `__fz_place_0` (the root standing for `self.cache`).

use crate::fast::HashSet;

use proc_macro2::{Ident, Span};
use quote::format_ident;
use syn::{FnArg, ItemFn, Pat};

use crate::params::{self, ParamKind, Passing};
use crate::scope::{Kind, Scopes};

/// The declared inputs.
pub(crate) struct Inputs {
    /// Tensor and collection parameters, then places: (binding, name, kind).
    pub tracked: Vec<(usize, Ident, ParamKind)>,
    /// Field places: (`self.cache`, the binding its base had at entry, the
    /// place's binding).
    pub places: Vec<(String, Option<usize>, usize)>,
}

/// Declares `func`'s parameters and `places` in `scopes` (a scope must be
/// open).
pub(crate) fn declare(
    func: &ItemFn,
    tensor_params: &HashSet<String>,
    places: &[crate::places::Place],
    scopes: &mut Scopes,
) -> Inputs {
    let mut tracked = Vec::new();
    for arg in &func.sig.inputs {
        let FnArg::Typed(pt) = arg else { continue };
        let Pat::Ident(pi) = &*pt.pat else { continue };
        let ident = pi.ident.clone();
        let kind = params::classify(&pt.ty).or_else(|| {
            tensor_params
                .contains(&ident.to_string())
                .then(|| params::classify_assumed(&pt.ty))
                .flatten()
        });
        match kind {
            Some(ParamKind::Tensor(p)) => {
                let id = scopes.declare(
                    &ident,
                    Kind::Root {
                        input: Some(p),
                        known: true,
                    },
                );
                tracked.push((id, ident, ParamKind::Tensor(p)));
            }
            Some(ParamKind::Collection { passing, vec }) => {
                let id = scopes.declare(
                    &ident,
                    Kind::Coll {
                        input: Some((passing, vec)),
                    },
                );
                tracked.push((id, ident, ParamKind::Collection { passing, vec }));
            }
            // (Only field places are lists.)
            Some(ParamKind::Optional | ParamKind::List { .. }) => {
                scopes.declare(&ident, Kind::Optional);
            }
            None => {
                scopes.declare(&ident, Kind::Other);
            }
        }
    }
    let mut declared = Vec::new();
    for (k, place) in places.iter().enumerate() {
        let ident = place_ident(k);
        let base = scopes.lookup(&place.base);
        if place.list {
            let passing = if place.mutable {
                Passing::RefMut
            } else {
                Passing::Ref
            };
            let id = scopes.declare(
                &ident,
                Kind::Coll {
                    input: Some((passing, false)),
                },
            );
            declared.push((place.key.clone(), base, id));
            tracked.push((id, ident, ParamKind::List { passing }));
            continue;
        }
        let id = scopes.declare(
            &ident,
            Kind::Root {
                input: Some(Passing::Value),
                known: true,
            },
        );
        declared.push((place.key.clone(), base, id));
        tracked.push((id, ident, ParamKind::Tensor(Passing::Value)));
    }
    Inputs {
        tracked,
        places: declared,
    }
}

/// The hidden variable holding the `k`-th field place's handle.
pub(crate) fn place_ident(k: usize) -> Ident {
    format_ident!("__fz_place_{}", k, span = Span::mixed_site())
}
