//! Assembles the functionalized function: options, inputs prologue, the
//! lowered body, and the write-backs at exit. On any error, emits the
//! original function unchanged plus the errors, so the IDE keeps working.
//!
//! Input: `fn f(xs: &mut [Tensor]) { .. }` whose body mutates `xs`.
//! Output: `rt::check_inputs_disjoint_of(..)`, `let __fz_input_0 = xs;`,
//! `let mut xs = rt::inputs(&__fz_input_0[..]);`, the
//! lowered body, then `rt::write_back_all(&__fz_input_0[..], &xs[..])` at
//! every exit.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{FnArg, ItemFn, Pat, Stmt};

use crate::attr::{self, Remove};
use crate::ctxt::Ctxt;
use crate::lower::{Lowerer, pq};
use crate::params::{self, ParamKind, Passing};
use crate::scope::{Facts, base_ident, input_ident};

/// Expands `#[functionalize(args)]` on `item`. Never panics: bad input
/// gives spanned errors after the original item.
pub fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    // Parsing and lowering recurse once per nesting level of the body (500
    // nested blocks, 2,000-long chains): run on a roomy stack segment.
    stacker::maybe_grow(32 * 1024 * 1024, 64 * 1024 * 1024, || {
        expand_inner(args, item)
    })
}

fn expand_inner(args: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::default();
    let remove = attr::parse(args, &cx);
    let func: ItemFn = match syn::parse2::<ItemFn>(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            crate::diag::not_a_function(&cx, first_tokens(&item));
            return with_errors(item, &cx);
        }
    };
    if let Some(a) = &func.sig.asyncness {
        crate::diag::async_fn(&cx, a);
    }
    if cx.has_errors() {
        return with_errors(item, &cx);
    }
    let (places, tensor_params) = find_places(&func);
    crate::places::check_uses(&func.block, &places, &cx);
    if cx.has_errors() {
        return with_errors(item, &cx);
    }
    let mode = remove;
    // Analysis, then code generation that only reads its facts.
    let facts = crate::analysis::analyze(&func, &places, &tensor_params);
    let strict = std::env::var_os("FUNCZ_STRICT_ANALYSIS").is_some();
    let out = generate(
        func,
        &item,
        &cx,
        mode,
        facts,
        &places,
        &tensor_params,
        strict,
    );
    if cx.has_errors() {
        return with_errors(item, &cx);
    }
    out.into_token_stream()
}

/// Generates the function from the analysis' facts. Code generation
/// records the facts it acted on as it goes; they must be the analysis'
/// facts. Where they are not (a shape the analysis walks differently from
/// code generation: a bug of this crate), with `FUNCZ_STRICT_ANALYSIS` set
/// (this workspace's builds set it) that is a compile error, so that tests
/// find it; without it, the function is generated once more from the facts
/// code generation found (a safety net for users, not a fixpoint: if that
/// generation disagrees again, it is a compile error too). `item` is the
/// function's tokens, parsed again for that second generation (the first
/// consumes `func`: the body is not cloned).
#[allow(clippy::too_many_arguments)]
fn generate(
    func: ItemFn,
    item: &TokenStream,
    cx: &Ctxt,
    mode: Remove,
    facts: Facts,
    places: &[crate::places::Place],
    tensor_params: &crate::fast::HashSet<String>,
    strict: bool,
) -> ItemFn {
    let first_cx = Ctxt::default();
    let name = func.sig.ident.clone();
    let (out, found) = lower_fn(func, &first_cx, mode, facts.clone(), places, tensor_params);
    // (A refused function is re-emitted as written: its facts are moot.)
    if found.same_as(&facts) || first_cx.has_errors() {
        cx.absorb(first_cx);
        return out;
    }
    if strict {
        cx.internal(
            &name,
            format!("its analysis pass found {facts:?}, code generation {found:?}"),
        );
        return out;
    }
    let Ok(func) = syn::parse2::<ItemFn>(item.clone()) else {
        cx.internal(
            &name,
            "the function did not parse a second time".to_string(),
        );
        return out;
    };
    let mut merged = facts;
    merged.mutated.extend(found.mutated.iter());
    merged.meta.extend(found.meta.iter());
    merged.mutations = found.mutations;
    merged.resizes = found.resizes;
    merged.declared = found.declared;
    let retry_cx = Ctxt::default();
    let (out, again) = lower_fn(func, &retry_cx, mode, merged.clone(), places, tensor_params);
    if !again.same_as(&merged) && !retry_cx.has_errors() {
        retry_cx.internal(
            &name,
            format!(
                "two code generations disagree on {}",
                merged.difference(&again).unwrap_or_default()
            ),
        );
    }
    cx.absorb(retry_cx);
    out
}

/// The field places (`self.cache`, `c.0`) of non-tensor parameters and of
/// `self`, tracked like tensor inputs, and the parameters the body uses as
/// tensors.
fn find_places(func: &ItemFn) -> (Vec<crate::places::Place>, crate::fast::HashSet<String>) {
    let (bases, mutable, tensors) = signature_bases(func);
    let (mut places, params) = crate::places::find(&func.block, &bases, &tensors);
    for p in &mut places {
        p.mutable = mutable.contains(&p.base);
    }
    (places, params)
}

type Names = crate::fast::HashSet<String>;

/// The names a field place may start from (`self` and the parameters not
/// classified as tensors), those of them passed mutably, and the tensor
/// parameters.
pub(crate) fn signature_bases(func: &ItemFn) -> (Names, Names, Names) {
    let mut bases: crate::fast::HashSet<String> = crate::fast::HashSet::default();
    let mut mutable: crate::fast::HashSet<String> = crate::fast::HashSet::default();
    let mut tensors: crate::fast::HashSet<String> = crate::fast::HashSet::default();
    for arg in &func.sig.inputs {
        match arg {
            FnArg::Receiver(r) => {
                bases.insert("self".to_string());
                let by_mut = match &r.kind {
                    syn::ReceiverKind::Reference(_, _, m) => m.is_some(),
                    syn::ReceiverKind::Typed(_, ty) => match &**ty {
                        syn::Type::Reference(t) => t.mutability.is_some(),
                        _ => r.mutability.is_some(),
                    },
                    _ => r.mutability.is_some(),
                };
                if by_mut {
                    mutable.insert("self".to_string());
                }
            }
            FnArg::Typed(pt) => {
                if let Pat::Ident(pi) = &*pt.pat
                    && params::classify(&pt.ty).is_some()
                {
                    tensors.insert(crate::fast::text(&pi.ident));
                } else if let Pat::Ident(pi) = &*pt.pat
                    && params::classify(&pt.ty).is_none()
                {
                    bases.insert(crate::fast::text(&pi.ident));
                    let by_mut = match &*pt.ty {
                        syn::Type::Reference(t) => t.mutability.is_some(),
                        _ => pi.mutability.is_some(),
                    };
                    if by_mut {
                        mutable.insert(crate::fast::text(&pi.ident));
                    }
                }
            }
        }
    }
    (bases, mutable, tensors)
}

/// The parameters (and `self`) whose fields are checked as field reads:
/// those that are neither tensors nor readers of their own (tuples, slices
/// and options of tensors, see `params::reader_keys`).
fn struct_bases(func: &ItemFn) -> crate::fast::HashSet<String> {
    func.sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Receiver(_) => Some("self".to_string()),
            FnArg::Typed(pt) => match &*pt.pat {
                // (Tuples and slices of tensors are readers of their own.)
                Pat::Ident(pi)
                    if params::classify(&pt.ty).is_none()
                        && params::reader_keys(quote!(x), &pt.ty).is_empty() =>
                {
                    Some(crate::fast::text(&pi.ident))
                }
                _ => None,
            },
        })
        .collect()
}

/// For tests: the analysis' facts of `func`, code generation's facts
/// generating from them, and the function generated with `facts` instead
/// (`strict` as `FUNCZ_STRICT_ANALYSIS`) with the errors reported.
#[cfg(test)]
pub(crate) fn facts_and_output(
    func: &ItemFn,
    mode: Remove,
    facts: Option<Facts>,
    strict: bool,
) -> (Facts, Facts, ItemFn, Vec<String>) {
    let (places, tensor_params) = find_places(func);
    let analysis = crate::analysis::analyze(func, &places, &tensor_params);
    let cx = Ctxt::default();
    let (_, found) = lower_fn(
        func.clone(),
        &cx,
        mode,
        analysis.clone(),
        &places,
        &tensor_params,
    );
    let cx = Ctxt::default();
    let used = facts.unwrap_or_else(|| analysis.clone());
    let tokens = func.to_token_stream();
    let out = generate(
        func.clone(),
        &tokens,
        &cx,
        mode,
        used,
        &places,
        &tensor_params,
        strict,
    );
    let errors = cx.take().iter().map(|e| e.to_string()).collect();
    (analysis, found, out, errors)
}

fn first_tokens(item: &TokenStream) -> TokenStream {
    item.clone().into_iter().take(3).collect()
}

fn with_errors(item: TokenStream, cx: &Ctxt) -> TokenStream {
    let errors = cx.take().into_iter().map(|e| e.to_compile_error());
    quote!(#item #(#errors)*)
}

fn lower_fn(
    func: ItemFn,
    cx: &Ctxt,
    mode: Remove,
    facts: Facts,
    places: &[crate::places::Place],
    tensor_params: &crate::fast::HashSet<String>,
) -> (ItemFn, Facts) {
    let name = crate::fast::text(&func.sig.ident);
    let mut lw = Lowerer::new(cx, mode, facts, name.clone());
    lw.elide_syncs = crate::lower::without_closures(&func.block);
    lw.macro_names = crate::lower::macro_names(&func.block);
    lw.scopes.push();
    let declared = crate::inputs::declare(&func, tensor_params, places, &mut lw.scopes);
    let inputs = declared.tracked;
    lw.places = declared.places;
    // The runtime with the mode fixed (`rt::views` / `rt::copies`): the
    // calls do not pass it.
    let mut prologue: Vec<Stmt> = vec![match mode {
        Remove::Mutations => pq!(
            #[allow(unused_imports)]
            use ::funcz::rt::views as __fz_rt;
        ),
        Remove::MutationsAndViews => pq!(
            #[allow(unused_imports)]
            use ::funcz::rt::copies as __fz_rt;
        ),
    }];
    for (k, place) in places.iter().enumerate() {
        let ident = crate::inputs::place_ident(k);
        let e = &place.expr;
        // A list is borrowed for the whole body (its uses all go through
        // the hidden variable); `rt::list` names the types it may be.
        prologue.push(match (place.list, place.mutable) {
            (false, _) => pq!(let #ident = __fz_rt::place_handle(&#e);),
            (true, true) => pq!(let #ident = __fz_rt::list_mut(&mut #e);),
            (true, false) => pq!(let #ident = __fz_rt::list(&#e);),
        });
    }
    let tracked = |id: usize| lw.facts.mutated.contains(&id) || lw.facts.meta.contains(&id);
    let mut exit: Vec<Stmt> = Vec::new();
    let any_tracked = inputs.iter().any(|(id, _, _)| tracked(*id));
    // Parameters that only hold tensors to read (`Option<&Tensor>`,
    // `(&Tensor, usize)`, `&[&Tensor]`) may alias a mutated input.
    let mut readers: Vec<(String, TokenStream)> = Vec::new();
    for arg in &func.sig.inputs {
        if let FnArg::Typed(pt) = arg
            && let Pat::Ident(pi) = &*pt.pat
            && !inputs.iter().any(|(_, i, _)| *i == pi.ident)
            && !places.iter().any(|p| pi.ident == p.base)
        {
            let ident = &pi.ident;
            for key in params::reader_keys(quote!(#ident), &pt.ty) {
                readers.push((crate::fast::text(&pi.ident), key));
            }
        }
    }
    // Fields of struct parameters the body reads as tensors, against the
    // inputs it mutates.
    let bases = struct_bases(&func);
    let field_reads = crate::places::field_reads(&func.block, &bases, places);
    // Compound-assigned fields left as written (numbers, as far as the
    // body shows): checked at compile time not to be tensors.
    for (e, span) in crate::places::untracked_compounds(&func.block, &bases, places) {
        prologue.push(syn::parse_quote_spanned!(span => {
            #[allow(unused_imports)]
            use ::funcz::rt::{OtherCompound as _, TensorCompound as _};
            (&__fz_rt::CompoundProbe(&#e)).not_a_tensor();
        }));
    }
    // `("x", &x as &dyn InputKey)` of an input, named by its place's path
    // for a field.
    let entry = |id: usize, ident: &proc_macro2::Ident, kind: &ParamKind| -> TokenStream {
        let n = match lw.places.iter().find(|(_, _, p)| *p == id) {
            Some((key, _, _)) => key.clone(),
            None => ident.to_string(),
        };
        match kind {
            ParamKind::List { .. } => quote!((
                #n,
                &__fz_rt::TensorList::tensors(&*#ident) as &dyn __fz_rt::InputKey
            )),
            _ => quote!((#n, &#ident as &dyn __fz_rt::InputKey)),
        }
    };
    if !field_reads.is_empty() && any_tracked {
        let mutated_inputs = inputs
            .iter()
            .filter(|(id, _, _)| tracked(*id))
            .map(|(id, ident, kind)| entry(*id, ident, kind));
        let reads = field_reads.iter().map(|(key, e)| {
            quote!((#key, &{
                #[allow(unused_imports)]
                use ::funcz::rt::{ViaKey as _, ViaNone as _};
                (&__fz_rt::KeyProbe(&#e)).key()
            } as &dyn __fz_rt::InputKey))
        });
        prologue.push(
            pq!(__fz_rt::check_readers_disjoint(#name, &[#(#mutated_inputs),*], &[#(#reads),*]);),
        );
    }
    let many = inputs.len() + readers.len() > 1
        || inputs
            .iter()
            .any(|(_, _, k)| matches!(k, ParamKind::Collection { .. } | ParamKind::List { .. }));
    if any_tracked && many && inputs.len() + readers.len() <= 12 {
        // Names, and a tuple of references the runtime coerces to
        // `&dyn InputKey` (not each function: cheaper debug builds).
        let mut names: Vec<String> = Vec::new();
        let mut keys: Vec<TokenStream> = Vec::new();
        for (id, ident, kind) in &inputs {
            names.push(match lw.places.iter().find(|(_, _, p)| p == id) {
                Some((key, _, _)) => key.clone(),
                None => ident.to_string(),
            });
            // A reference parameter is passed as itself (reborrowed): a
            // reference to the parameter would be one more indirection for
            // the check and one more borrow for the function's borrow check.
            keys.push(match kind {
                ParamKind::List { .. } => quote!(&__fz_rt::TensorList::tensors(&*#ident)),
                ParamKind::Tensor(Passing::Ref)
                | ParamKind::Collection {
                    passing: Passing::Ref,
                    ..
                } => quote!(#ident),
                ParamKind::Tensor(Passing::RefMut)
                | ParamKind::Collection {
                    passing: Passing::RefMut,
                    ..
                } => quote!(&*#ident),
                _ => quote!(&#ident),
            });
        }
        for (n, key) in &readers {
            names.push(n.clone());
            keys.push(quote!(&#key));
        }
        // (The names as one string: an array of them is a promoted
        // constant, which an unoptimized build pays for in each function.)
        let names = names.join(",");
        prologue.push(pq!(__fz_rt::check_inputs_disjoint_of(#name, #names, (#(#keys,)*));));
    } else if any_tracked && many {
        let entries = inputs
            .iter()
            .map(|(id, ident, kind)| entry(*id, ident, kind))
            .chain(
                readers
                    .iter()
                    .map(|(n, key)| quote!((#n, &#key as &dyn __fz_rt::InputKey))),
            );
        prologue.push(pq!(__fz_rt::check_inputs_disjoint(#name, &[#(#entries),*]);));
    }
    lw.inputs = inputs
        .iter()
        .map(|(id, ident, _)| {
            let e = if tracked(*id) {
                let i = input_ident(*id);
                quote!(#i)
            } else {
                quote!(#ident)
            };
            (ident.to_string(), e)
        })
        .collect();
    let assigned = crate::elements::assigned_elements(&func.block);
    for (id, ident, kind) in &inputs {
        let name = match lw.places.iter().find(|(_, _, p)| p == id) {
            Some((key, _, _)) => key.clone(),
            None => ident.to_string(),
        };
        let can_assign = matches!(
            kind,
            ParamKind::Collection {
                passing: Passing::RefMut | Passing::Value,
                ..
            } | ParamKind::List {
                passing: Passing::RefMut
            }
        );
        if tracked(*id) && can_assign && assigned.contains(&name) {
            lw.replaced.insert(*id);
        }
    }
    for (id, ident, kind) in &inputs {
        let id = *id;
        if !tracked(id) {
            continue;
        }
        let input = input_ident(id);
        let replaced = crate::scope::replaced_ident(id);
        if lw.replaced.contains(&id) {
            prologue.push(pq!(let mut #replaced = __fz_rt::Replaced::default();));
        }
        match kind {
            ParamKind::Tensor(p) => {
                let var = lw.var(id);
                let (v, s) = (lw.value(id), lw.state(id));
                // A reference input is one `rt::Var` (see
                // `Lowerer::in_var`); one passed by value is rebound, a
                // handle and its state.
                let in_var = lw.in_var(id);
                match p {
                    Passing::Value => {
                        // (`mut`: assigning the parameter rebinds it, see
                        // `Lowerer::lower_assign`.)
                        prologue.push(
                            pq!(#[allow(unused_mut)] let mut #input = __fz_rt::input(&#ident);),
                        );
                        prologue.push(pq!(let mut #var = #ident;));
                    }
                    Passing::Ref => {
                        prologue.push(pq!(let #input = #ident;));
                        prologue.push(if in_var {
                            pq!(let mut #var = __fz_rt::Var::input(#input);)
                        } else {
                            pq!(let mut #var = __fz_rt::input(#input);)
                        });
                    }
                    Passing::RefMut => {
                        prologue.push(pq!(let #input = #ident;));
                        prologue.push(if in_var {
                            pq!(let mut #var = __fz_rt::Var::input(&*#input);)
                        } else {
                            pq!(let mut #var = __fz_rt::input(&*#input);)
                        });
                    }
                }
                if in_var {
                    prologue.extend(lw.base_prologue(id));
                } else {
                    prologue.extend(lw.root_prologue(id));
                }
                let based = lw.facts.meta.contains(&id);
                let b = base_ident(id);
                exit.push(match (p, based) {
                    (Passing::RefMut, true) => {
                        pq!(__fz_rt::write_back_layout(&mut *#input, &#b, &#s);)
                    }
                    (Passing::Value, true) => {
                        pq!(__fz_rt::write_back_owned(&#input, &#b);)
                    }
                    (_, true) => pq!(__fz_rt::write_back(&*#input, &#b);),
                    (Passing::Value, false) => {
                        pq!(__fz_rt::write_back_owned(&#input, &#v);)
                    }
                    (Passing::RefMut, false) => {
                        pq!(__fz_rt::write_back_mut(&mut *#input, &#v);)
                    }
                    (_, false) => pq!(__fz_rt::write_back(&*#input, &#v);),
                });
            }
            ParamKind::Optional => {}
            ParamKind::List { passing } => {
                prologue.push(pq!(let #input = #ident;));
                prologue.push(pq!(let mut #ident = __fz_rt::list_handles(&*#input);));
                exit.push(match passing {
                    Passing::RefMut if lw.replaced.contains(&id) => {
                        pq!(__fz_rt::write_back_slots(&mut *#input, &#ident[..], &#replaced);)
                    }
                    Passing::RefMut => {
                        pq!(__fz_rt::write_back_list(&mut *#input, &#ident[..]);)
                    }
                    _ => pq!(__fz_rt::write_back_all(__fz_rt::TensorList::tensors(#input), &#ident[..]);),
                });
            }
            ParamKind::Collection { passing, vec } => {
                match passing {
                    Passing::Value => {
                        prologue.push(pq!(
                            #[allow(unused_mut)]
                            let mut #input = __fz_rt::inputs(&#ident[..]);
                        ));
                        prologue.push(pq!(let mut #ident = #ident;));
                    }
                    _ if !*vec => {
                        // A slice: reborrowed, and its handles boxed (see
                        // `rt::input_slice`), with no `Index`/`Deref` calls.
                        prologue.push(pq!(let #input = #ident;));
                        prologue.push(pq!(
                            let mut #ident = __fz_rt::input_slice(&*#input);
                        ));
                    }
                    _ => {
                        prologue.push(pq!(let #input = #ident;));
                        prologue.push(pq!(
                            let mut #ident = __fz_rt::inputs(&#input[..]);
                        ));
                    }
                }
                // The caller's tensors and the body's, as slices: a slice
                // input and its boxed handles reborrowed, others indexed.
                let (callers, items) = if !*vec && *passing != Passing::Value {
                    (quote!(&*#input), quote!(&*#ident))
                } else {
                    (quote!(&#input[..]), quote!(&#ident[..]))
                };
                exit.push(match (passing, vec) {
                    (Passing::RefMut, _) if lw.replaced.contains(&id) => {
                        pq!(__fz_rt::write_back_slots(&mut *#input, #items, &#replaced);)
                    }
                    (Passing::Value, _) if lw.replaced.contains(&id) => {
                        pq!(__fz_rt::write_back_kept(#callers, #items, &#replaced);)
                    }
                    (Passing::RefMut, true) => {
                        pq!(__fz_rt::write_back_vec(&mut *#input, #items);)
                    }
                    _ => pq!(__fz_rt::write_back_all(#callers, #items);),
                });
            }
        }
    }
    lw.exit = exit.clone();
    lw.fn_tail = true;
    // The output is the function with its body replaced: the body is moved
    // out (not cloned) to be lowered.
    let mut out = func;
    let body = std::mem::take(&mut out.block.stmts);
    // (The tail as written, read after the lowering: see below.)
    let written_tail = match body.last() {
        Some(Stmt::Expr(e, None)) => Some(e.clone()),
        _ => None,
    };
    let mut stmts = lw.lower_stmts(body);
    // Whether the tail, as written, moves an input (decided on the user's
    // code: the lowered tail is opaque tokens).
    let tail_moves = written_tail.is_some_and(|e| lw.moves_input(&e));
    match stmts.pop() {
        Some(Stmt::Expr(e, None)) if !matches!(e, syn::Expr::ForLoop(_) | syn::Expr::While(_)) => {
            let tail = lw.lower_tail(e, tail_moves);
            stmts.push(Stmt::Expr(tail, None));
        }
        // The last statement may diverge (`loop { .. }`, `panic!(..);`):
        // the write-back after it is then unreachable, not the user's code
        // to be warned about.
        Some(other) => {
            stmts.push(other);
            if !exit.is_empty() {
                stmts.push(pq!(#[allow(unreachable_code)] { #(#exit)* }));
            }
        }
        None => stmts.extend(exit),
    }
    lw.scopes.pop();
    // A tracked parameter is moved into its hidden variable at entry, so a
    // `mut` the user wrote on it would now be reported unused.
    let moved: Vec<String> = inputs
        .iter()
        .filter(|(id, _, kind)| {
            matches!(
                kind,
                ParamKind::Tensor(Passing::Value)
                    | ParamKind::Collection {
                        passing: Passing::Value,
                        ..
                    }
            ) && (lw.facts.mutated.contains(id) || lw.facts.meta.contains(id))
        })
        .map(|(_, ident, _)| ident.to_string())
        .collect();
    for arg in out.sig.inputs.iter_mut() {
        if let FnArg::Typed(pt) = arg
            && let Pat::Ident(pi) = &mut *pt.pat
            && moved.contains(&crate::fast::text(&pi.ident))
        {
            pi.mutability = None;
        }
    }
    prologue.extend(stmts);
    out.block.stmts = prologue;
    let mut found = lw.found;
    found.declared = std::mem::take(&mut lw.scopes.declared);
    (out, found)
}
