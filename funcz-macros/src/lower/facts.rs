//! Facts about bindings the lowering asks while it generates code: which
//! variable holds a binding, whether a root is tracked or re-laid-out,
//! what a syntax node is (a tensor? a binding?), and the syncs that bring
//! stale aliases up to date before a statement.

#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    /// The variable generated code uses for binding `id`: a tracked root
    /// lives in a hidden variable, so that a user `let` shadowing its name
    /// cannot hide it from the write-backs of its views. Its name is
    /// `__fz_v_{name}_{id}`: the `v_` keeps it apart from every other
    /// hidden name (`__fz_input_{id}`, `__fz_state_{id}`, ...) whatever the
    /// user's name (a parameter called `input` used to collide), and the id
    /// ends it, so two bindings never share one.
    pub fn var(&self, id: usize) -> Ident {
        if matches!(self.scopes.kind(id), Kind::Root { .. }) && self.has_state(id) {
            let name = self.scopes.ident(id).to_string();
            let name = name.trim_start_matches("r#");
            format_ident!("__fz_v_{}_{}", name, id, span = Span::mixed_site())
        } else {
            self.scopes.ident(id).clone()
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

    /// True if binding `id` carries a `Tracked` state.
    pub(super) fn has_state(&self, id: usize) -> bool {
        match self.scopes.kind(id) {
            Kind::Root { .. } => self.tracked_root(id),
            Kind::Alias { root } | Kind::Multi { root } => self.tracked_root(*root),
            _ => false,
        }
    }

    /// The variable holding the root's data, and its state.
    pub(super) fn root_value_state(&self, root: usize) -> (TokenStream, TokenStream) {
        if self.based(root) {
            let (b, s) = (base_ident(root), base_state_ident(root));
            (quote!(#b), quote!(#s))
        } else {
            let (v, s) = (self.var(root), state_ident(root));
            (quote!(#v), quote!(#s))
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
            self.error(
                at,
                format!(
                    "`{}` is read after `{}` is mutated in the same statement; #[functionalize] regenerates views \
                     between statements",
                    self.scopes.ident(id),
                    self.scopes.ident(root)
                ),
                "split the statement in two: do the in-place op first, then read the view",
            );
        }
    }

    pub(super) fn mark_mutated(&mut self, id: usize) {
        self.check_elem_aliases(id);
        if let Some(root) = self.scopes.root_of(id) {
            *self.found.mutations.entry(root).or_default() += 1;
        }
        match self.scopes.kind(id).clone() {
            Kind::Root { .. } | Kind::Coll { .. } => {
                self.found.mutated.insert(id);
            }
            Kind::Alias { root } | Kind::Multi { root } => {
                self.found.mutated.insert(root);
            }
            Kind::ElemRef { coll } | Kind::ElemAt { coll, .. } => {
                self.found.mutated.insert(coll);
            }
            _ => {}
        }
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

    pub(super) fn binding_of(&self, e: &Expr) -> Option<usize> {
        match e {
            Expr::Path(p)
                if p.qself.is_none()
                    && p.path.segments.len() == 1
                    && p.path.leading_colon.is_none() =>
            {
                self.scopes.lookup(&p.path.segments[0].ident.to_string())
            }
            Expr::Paren(p) => self.binding_of(&p.expr),
            Expr::Group(g) => self.binding_of(&g.expr),
            Expr::Field(_) => self.place_of(e),
            _ => None,
        }
    }

    /// The binding of a tracked field place (`self.cache`), unless the
    /// body has shadowed the name it starts from.
    pub(super) fn place_of(&self, e: &Expr) -> Option<usize> {
        if self.places.is_empty() {
            return None;
        }
        let (base, key) = crate::places::place_key(e)?;
        let (_, at_entry, id) = self.places.iter().find(|(k, _, _)| *k == key)?;
        (base == "self" || self.scopes.lookup(&base) == *at_entry).then_some(*id)
    }

    pub(super) fn is_tensor_binding(&self, id: usize) -> bool {
        matches!(
            self.scopes.kind(id),
            Kind::Root { known: true, .. }
                | Kind::Alias { .. }
                | Kind::ElemRef { .. }
                | Kind::ElemAt { .. }
                | Kind::Ambiguous
                | Kind::Plain
        )
    }

    /// Whether `e` evaluates to a tensor, as far as the syntax shows.
    pub(super) fn is_tensor_expr(&self, e: &Expr) -> bool {
        match e {
            Expr::Path(p) => {
                if let Some(id) = self.binding_of(e) {
                    return self.is_tensor_binding(id);
                }
                p.path.segments.len() >= 2 && p.path.segments.iter().any(|s| s.ident == "Tensor")
            }
            Expr::Field(_) => self
                .place_of(e)
                .is_some_and(|id| self.is_tensor_binding(id)),
            Expr::Paren(p) => self.is_tensor_expr(&p.expr),
            Expr::Group(g) => self.is_tensor_expr(&g.expr),
            Expr::If(_) | Expr::Match(_) | Expr::Block(_) => {
                let t = tails(e);
                !t.is_empty() && t.iter().all(|t| self.is_tensor_expr(t))
            }
            Expr::Reference(r) => self.is_tensor_expr(&r.expr),
            Expr::Unary(u) => self.is_tensor_expr(&u.expr),
            Expr::Binary(b) => self.is_tensor_expr(&b.left) || self.is_tensor_expr(&b.right),
            Expr::Index(i) => self.binding_of(&i.expr).is_some_and(|id| {
                matches!(self.scopes.kind(id), Kind::Coll { .. } | Kind::Multi { .. })
            }),
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) => p.path.segments.iter().any(|s| s.ident == "Tensor"),
                _ => false,
            },
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                match optable::lookup(&name) {
                    Some(info) => {
                        !matches!(info.kind, OpKind::MultiView { .. } | OpKind::Autograd)
                            && self.is_tensor_expr(&m.receiver)
                    }
                    None => false,
                }
            }
            _ => false,
        }
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
        match self.synced.last_mut() {
            Some(done) if done.contains(&id) => return,
            Some(done) => done.push(id),
            None => {}
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
        let mode = self.mode;
        let rt = rt();
        let (v, s) = (self.var(id), state_ident(id));
        match self.scopes.kind(id).clone() {
            Kind::Alias { root } => {
                let (rv, rs) = self.root_value_state(root);
                Some(pq!(#rt::sync(&mut #v, &mut #s, &#rv, &#rs, #mode);))
            }
            Kind::Multi { root } => {
                let (rv, rs) = self.root_value_state(root);
                Some(pq!(#rt::sync_all(&mut #v, &mut #s, &#rv, &#rs, #mode);))
            }
            Kind::Root { .. } if self.based(id) => {
                let (rv, rs) = self.root_value_state(id);
                Some(pq!(#rt::sync(&mut #v, &mut #s, &#rv, &#rs, #mode);))
            }
            _ => None,
        }
    }
}
