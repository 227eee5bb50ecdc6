//! Bindings and lexical scopes: what each tensor variable is (a root, an
//! alias of a root, a collection of roots, ...). Ids are handed out in
//! traversal order, so two passes over the same body agree on them.

use crate::fast::HashMap;

use proc_macro2::{Ident, Span};
use quote::format_ident;

use crate::params::Passing;

/// What a binding is, as far as aliasing goes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    /// Not a tensor (or not one the macro tracks).
    Other,
    /// Owns its storage: a tensor input or a fresh local. `known` is false
    /// for the result of a call the macro cannot see (maybe not a tensor).
    Root { input: Option<Passing>, known: bool },
    /// A view of `root`'s storage.
    Alias { root: usize },
    /// A `Vec` of views of `root` (`split`, `chunk`, `unbind`).
    Multi { root: usize },
    /// A collection of independent roots (a slice or `Vec` of tensors).
    Coll { input: Option<(Passing, bool)> },
    /// A loop variable referring to one element of the collection `coll`.
    ElemRef { coll: usize },
    /// `let x = &coll[i]` (or `&mut`): a name for the place `coll[index]`,
    /// `index` being the hidden variable the index was evaluated into.
    ElemAt { coll: usize, index: Ident },
    /// Made in branches from different bases: cannot be tracked.
    Ambiguous,
    /// A tensor that is only read (bound from an `Option<&Tensor>` input).
    Plain,
    /// An `Option` of tensors (an input).
    Optional,
}

#[derive(Clone, Debug)]
pub(crate) struct Binding {
    pub ident: Ident,
    pub kind: Kind,
}

/// Facts the analysis pass computes and code generation reads.
#[derive(Clone, Debug, Default)]
pub(crate) struct Facts {
    /// Roots whose data is mutated (directly, through an alias, or by an
    /// opaque call), and collections whose elements are.
    pub mutated: crate::fast::IdSet,
    /// Roots whose own layout is changed by `t_`, `transpose_`, ...
    pub meta: crate::fast::IdSet,
    /// How many mutations of each root the body has, so code generation
    /// knows whether one comes later than the code it is writing.
    pub mutations: HashMap<usize, usize>,
    /// How many `resize_` calls on each root the body has.
    pub resizes: HashMap<usize, usize>,
    /// Every binding declared, in order, with its kind when declared: code
    /// generation must declare the same ones (so that ids agree).
    pub declared: Vec<(String, Kind)>,
}

impl Facts {
    /// Binding `id` is written: its root's mutation count goes up, and its
    /// root (or, for an element, its collection) is mutated.
    pub fn mark(&mut self, scopes: &Scopes, id: usize) {
        if let Some(root) = scopes.root_of(id) {
            *self.mutations.entry(root).or_default() += 1;
        }
        match scopes.kind(id) {
            Kind::Root { .. } | Kind::Coll { .. } => {
                self.mutated.insert(id);
            }
            Kind::Alias { root } | Kind::Multi { root } => {
                self.mutated.insert(*root);
            }
            Kind::ElemRef { coll } | Kind::ElemAt { coll, .. } => {
                self.mutated.insert(*coll);
            }
            _ => {}
        }
    }

    /// Whether two sets of facts agree in everything code generation reads.
    pub fn same_as(&self, other: &Self) -> bool {
        self.difference(other).is_none()
    }

    /// The first thing two sets of facts disagree on, in words.
    pub fn difference(&self, other: &Self) -> Option<String> {
        if let Some(k) = (0..self.declared.len().max(other.declared.len()))
            .find(|&k| self.declared.get(k) != other.declared.get(k))
        {
            return Some(format!(
                "binding {k} is {:?} in one, {:?} in the other",
                self.declared.get(k),
                other.declared.get(k)
            ));
        }
        let named = |id: &usize| {
            self.declared
                .get(*id)
                .map_or(format!("#{id}"), |(n, _)| n.clone())
        };
        let sets = [
            ("mutated", &self.mutated, &other.mutated),
            ("re-laid-out", &self.meta, &other.meta),
        ];
        for (what, a, b) in sets {
            if let Some(id) = a.first_difference(b) {
                return Some(format!("whether `{}` is {what}", named(&id)));
            }
        }
        for (what, a, b) in [
            ("mutations", &self.mutations, &other.mutations),
            ("resizes", &self.resizes, &other.resizes),
        ] {
            if let Some(id) = a.keys().chain(b.keys()).find(|id| a.get(id) != b.get(id)) {
                return Some(format!(
                    "the number of {what} of `{}`: {:?} against {:?}",
                    named(id),
                    a.get(id),
                    b.get(id)
                ));
            }
        }
        None
    }
}

#[derive(Default)]
pub(crate) struct Scopes {
    pub bindings: Vec<Binding>,
    /// Each binding's kind when it was declared (see `Facts::declared`).
    pub declared: Vec<(String, Kind)>,
    /// The names declared in each open scope, innermost last (to forget
    /// them when it closes).
    stack: Vec<Vec<String>>,
    /// Each name in scope: its declarations in open scopes, the visible one
    /// last: (binding, is a `let r = &x` name for it). A map, not a scan of
    /// the scopes: a body of thousands of `let`s looks names up in O(1).
    names: HashMap<String, Vec<(usize, bool)>>,
}

impl Scopes {
    pub fn push(&mut self) {
        self.stack.push(Vec::new());
    }

    pub fn pop(&mut self) {
        for name in self.stack.pop().unwrap_or_default() {
            if let Some(decls) = self.names.get_mut(&name) {
                decls.pop();
                if decls.is_empty() {
                    self.names.remove(&name);
                }
            }
        }
    }

    pub fn declare(&mut self, ident: &Ident, kind: Kind) -> usize {
        let id = self.bindings.len();
        self.declared.push((crate::fast::text(ident), kind.clone()));
        self.bindings.push(Binding {
            ident: ident.clone(),
            kind,
        });
        self.name(ident, id, false);
        id
    }

    /// `let r = &x;`: `r` becomes another name for binding `id` (its uses
    /// read `&x`, its in-place ops mutate `x`).
    pub fn declare_ref(&mut self, ident: &Ident, id: usize) {
        self.name(ident, id, true);
    }

    fn name(&mut self, ident: &Ident, id: usize, is_ref: bool) {
        if self.stack.is_empty() {
            self.push();
        }
        let name = crate::fast::text(ident);
        self.names
            .entry(name.clone())
            .or_default()
            .push((id, is_ref));
        self.stack.last_mut().expect("a scope is open").push(name);
    }

    /// Whether `name` is, in the current scope, a `let r = &x` name.
    pub fn is_ref_name(&self, name: &str) -> bool {
        self.names
            .get(name)
            .and_then(|d| d.last())
            .is_some_and(|&(_, r)| r)
    }

    pub fn lookup(&self, name: &str) -> Option<usize> {
        self.names
            .get(name)
            .and_then(|d| d.last())
            .map(|&(id, _)| id)
    }

    pub fn kind(&self, id: usize) -> &Kind {
        &self.bindings[id].kind
    }

    pub fn ident(&self, id: usize) -> &Ident {
        &self.bindings[id].ident
    }

    /// Binding `id`'s name as written (`x`, `r#type`), without asking the
    /// compiler for its identifier's text again.
    pub fn name_of(&self, id: usize) -> &str {
        &self.declared[id].0
    }

    /// The root a tensor binding's storage belongs to.
    pub fn root_of(&self, id: usize) -> Option<usize> {
        match self.kind(id) {
            Kind::Root { .. } => Some(id),
            Kind::Alias { root } | Kind::Multi { root } => Some(*root),
            Kind::ElemRef { coll } | Kind::ElemAt { coll, .. } => Some(*coll),
            _ => None,
        }
    }
}

/// The hidden state variable of binding `id` (`Tracked` or `Vec<Tracked>`).
pub(crate) fn state_ident(id: usize) -> Ident {
    Ident::new(&state_name(id), Span::mixed_site())
}

/// The text of [`state_ident`] (what `lower/current.rs` looks for in
/// generated tokens).
pub(crate) fn state_name(id: usize) -> String {
    format!("__fz_state_{id}")
}

/// The hidden base of a root whose layout is changed in place.
pub(crate) fn base_ident(id: usize) -> Ident {
    Ident::new(&base_name(id), Span::mixed_site())
}

/// The text of [`base_ident`].
pub(crate) fn base_name(id: usize) -> String {
    format!("__fz_base_{id}")
}

/// The hidden state of that hidden base.
pub(crate) fn base_state_ident(id: usize) -> Ident {
    Ident::new(&base_state_name(id), Span::mixed_site())
}

/// The text of [`base_state_ident`].
pub(crate) fn base_state_name(id: usize) -> String {
    format!("__fz_base_state_{id}")
}

/// The caller's handle of an input, kept for the write-back at exit.
/// The `rt::Replaced` of collection input `id` whose elements the body
/// assigns.
pub(crate) fn replaced_ident(id: usize) -> Ident {
    format_ident!("__fz_replaced_{}", id, span = Span::mixed_site())
}

/// The hidden handle of input `id` as the caller passed it.
pub(crate) fn input_ident(id: usize) -> Ident {
    format_ident!("__fz_input_{}", id, span = Span::mixed_site())
}
