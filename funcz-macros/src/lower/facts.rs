//! Facts about bindings the lowering asks while it generates code: which
//! variable holds a binding, whether a root is tracked or re-laid-out,
//! what a syntax node is (a tensor? a binding?), and the syncs that bring
//! stale aliases up to date before a statement.
//!
//! Input: a read of `v`, a view of the mutated root `x`.
//! Output: before the statement, `rt::sync_vars(&mut v, &__fz_v_x_0);` (both in an `rt::Var`)

use super::*;
#[allow(unused_imports)]
use crate::params::Passing;

impl Lowerer<'_> {
    /// The variable generated code uses for binding `id`: a tracked root
    /// lives in a hidden variable, so that a user `let` shadowing its name
    /// cannot hide it from the write-backs of its views. Its name is
    /// `__fz_v_{name}_{id}`: the `v_` keeps it apart from every other
    /// hidden name (`__fz_input_{id}`, `__fz_state_{id}`, ...) whatever the
    /// user's name (a parameter called `input` used to collide), and the id
    /// ends it, so two bindings never share one.
    pub fn var(&self, id: usize) -> Ident {
        if self.hidden_var(id) {
            Ident::new(&self.var_name(id), Span::mixed_site())
        } else {
            self.scopes.ident(id).clone()
        }
    }

    /// The text of [`Self::var`], made without an identifier.
    pub(super) fn var_name(&self, id: usize) -> String {
        let name = self.scopes.name_of(id);
        if self.hidden_var(id) {
            format!("__fz_v_{}_{id}", name.trim_start_matches("r#"))
        } else {
            name.to_string()
        }
    }

    /// Whether binding `id`'s value lives in a hidden variable (a root
    /// with state): an `rt::Var`, which holds its value and its state.
    fn hidden_var(&self, id: usize) -> bool {
        matches!(self.scopes.kind(id), Kind::Root { .. }) && self.has_state(id)
    }

    /// Whether binding `id` lives in an `rt::Var` (its value and state in
    /// one local): a root with state (a hidden variable), unless it is an
    /// input passed by value, declared without a value (`let x;`) or named
    /// in a macro that may write it (`bump!(b)`: its patterns may want a
    /// name, not `b.value`); or an alias a `let` bound as one (see
    /// [`Self::bind_alias_var`]). A reference input's `Var` is made by
    /// `rt::Var::input`, which builds both fields where the `Var` lives.
    /// (One local instead of two saved 0.8 M of rustc's instructions per
    /// input in an unoptimized build.)
    pub(crate) fn in_var(&self, id: usize) -> bool {
        (self.hidden_var(id)
            && !matches!(
                self.scopes.kind(id),
                Kind::Root {
                    input: Some(Passing::Value),
                    ..
                }
            )
            && !self.deferred.contains(&id)
            && !self.macro_names.contains(self.scopes.name_of(id)))
            || self.alias_vars.contains(&id)
    }

    /// Binds the alias `id` (just declared by a `let`, with a state) as an
    /// `rt::Var`, unless a macro that may write it names it. True if so.
    pub(super) fn bind_alias_var(&mut self, id: usize) -> bool {
        let ok = self.has_state(id) && !self.macro_names.contains(self.scopes.name_of(id));
        if ok {
            self.alias_vars.insert(id);
        }
        ok
    }

    /// Binding `id`'s current value as an expression: `__fz_v_x_0.value`
    /// (`r.value`) of a root (an alias) held in an `rt::Var`, else its
    /// variable.
    pub(crate) fn value(&self, id: usize) -> Access {
        let v = self.var(id);
        if self.in_var(id) {
            Access::Field(v, Field::Value)
        } else {
            Access::Name(v)
        }
    }

    /// Binding `id`'s state: `__fz_v_x_0.state` (`r.state`) of a root (an
    /// alias) held in an `rt::Var`, else its state variable.
    pub(crate) fn state(&self, id: usize) -> Access {
        if self.in_var(id) {
            Access::Field(self.var(id), Field::State)
        } else {
            Access::Name(state_ident(id))
        }
    }

    /// The name a message shows for binding `id`: a field place's path
    /// (`opt.m`), not its hidden variable.
    pub(crate) fn shown(&self, id: usize) -> String {
        match self.places.iter().find(|(_, _, p)| *p == id) {
            Some((key, _, _)) => key.clone(),
            None => self.scopes.ident(id).to_string(),
        }
    }

    pub(super) fn copies(&self) -> bool {
        self.copies
    }

    pub(super) fn tracked_root(&self, root: usize) -> bool {
        self.facts.mutated.contains(&root) || self.facts.meta.contains(&root)
    }

    pub(super) fn based(&self, id: usize) -> bool {
        matches!(self.scopes.kind(id), Kind::Root { .. }) && self.facts.meta.contains(&id)
    }

    /// True if binding `id` is a collection input (its caller's elements
    /// are in the hidden variable `input_ident(id)`).
    pub(super) fn is_input_coll(&self, id: usize) -> bool {
        matches!(self.scopes.kind(id), Kind::Coll { input: Some(_) })
    }

    /// True if binding `id` is a collection input the body holds handles
    /// of and writes back at exit (one it mutates: see `expand::lower_fn`).
    pub(super) fn is_tracked_input_coll(&self, id: usize) -> bool {
        self.is_input_coll(id) && self.tracked_root(id)
    }

    /// True if binding `id` carries a `Tracked` state.
    pub(super) fn has_state(&self, id: usize) -> bool {
        match self.scopes.kind(id) {
            Kind::Root { .. } => self.tracked_root(id),
            Kind::Alias { root } | Kind::Multi { root } => self.tracked_root(*root),
            _ => false,
        }
    }

    /// The variable holding the root's data, and its state.
    pub(super) fn root_value_state(&self, root: usize) -> (Access, Access) {
        if self.based(root) {
            (
                Access::Name(base_ident(root)),
                Access::Name(base_state_ident(root)),
            )
        } else {
            (self.value(root), self.state(root))
        }
    }

    /// Records that a commit into `root` happened at this point of the
    /// statement being lowered, making `alias` (the mutated one) current.
    pub(super) fn note_commit(&mut self, root: Option<usize>, alias: Option<usize>) {
        if let (Some(r), Some(level)) = (root, self.stmt_mutated.last_mut()) {
            level.push(r);
        }
        if let (Some(a), Some(level)) = (alias, self.stmt_fresh.last_mut()) {
            level.push(a);
        }
    }

    /// A read of alias `id` after a mutation of its root earlier in the
    /// same statement would see a stale value: refuse it.
    pub(super) fn check_stale_read(&self, id: usize, at: &dyn ToTokens) {
        let root = match self.scopes.kind(id) {
            Kind::Alias { root } | Kind::Multi { root } => *root,
            Kind::Root { .. } if self.based(id) => id,
            _ => return,
        };
        let mutated = self.stmt_mutated.last().is_some_and(|l| l.contains(&root));
        let fresh = self.stmt_fresh.last().is_some_and(|l| l.contains(&id));
        if mutated && !fresh {
            crate::diag::stale_read_same_statement(self, at, id, root);
        }
    }

    pub(super) fn mark_mutated(&mut self, id: usize) {
        self.check_elem_aliases(id);
        self.found.mark(&self.scopes, id);
    }

    /// True if `root` may be mutated after the code being lowered: a
    /// mutation lowered later in the text (as the previous pass counted),
    /// or any mutation while inside a loop.
    pub(super) fn mutated_later(&self, root: usize) -> bool {
        let total = self.facts.mutations.get(&root).copied().unwrap_or(0);
        let seen = self.found.mutations.get(&root).copied().unwrap_or(0);
        self.tracked_root(root) && (seen < total || (self.loop_depth > 0 && total > 0))
    }

    pub(super) fn captured(&self, id: usize) -> bool {
        self.closure_floor.last().is_some_and(|&floor| id < floor)
    }

    pub(super) fn push_pre(&mut self, s: Stmt) {
        if let Some(list) = self.pre.last_mut() {
            list.push(s);
        }
    }

    /// Ensures the alias `id` is current before the statement being lowered.
    pub(super) fn need_sync(&mut self, id: usize) {
        if !self.has_state(id) {
            return;
        }
        let current = self.known_current(id);
        match self.synced.last_mut() {
            Some(done) if done.contains(&id) => return,
            Some(done) => done.push(id),
            None => {}
        }
        if current {
            return;
        }
        if let Some(stmt) = self.sync_stmt(id) {
            self.push_pre(stmt);
        }
    }

    /// The statement that regenerates the alias `id` if it is stale.
    pub(super) fn sync_stmt(&self, id: usize) -> Option<Stmt> {
        if !self.has_state(id) {
            return None;
        }
        let rt = rt();
        let (v, s) = (self.value(id), self.state(id));
        match self.scopes.kind(id).clone() {
            Kind::Alias { root } => {
                let (rv, rs) = self.root_value_state(root);
                Some(match (var_pair(&rv, &rs), var_pair(&v, &s)) {
                    (Some(x), Some(a)) => pq!(#rt::sync_vars(&mut #a, &#x);),
                    (Some(x), None) => pq!(#rt::sync_var(&mut #v, &mut #s, &#x);),
                    (None, _) => pq!(#rt::sync(&mut #v, &mut #s, &#rv, &#rs);),
                })
            }
            Kind::Multi { root } => {
                let (rv, rs) = self.root_value_state(root);
                Some(pq!(#rt::sync_all(&mut #v, &mut #s, &#rv, &#rs);))
            }
            Kind::Root { .. } if self.based(id) => {
                let (rv, rs) = self.root_value_state(id);
                Some(pq!(#rt::sync(&mut #v, &mut #s, &#rv, &#rs);))
            }
            _ => None,
        }
    }
}
