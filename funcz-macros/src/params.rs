//! Which parameters are tensors, and how they are passed.
//!
//! Input: `x: &Tensor`, `xs: &mut [Tensor]`, `y: Option<&Tensor>`, `n: usize`.
//! Output: `Tensor(Ref)`, `Collection { passing: RefMut, vec: false }`,
//! `Optional`, none.

use syn::{GenericArgument, PathArguments, Type};

/// How a tensor (or a collection of tensors) reaches the function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Passing {
    /// `x: Tensor` (a handle sharing the caller's storage).
    Value,
    /// `x: &Tensor`.
    Ref,
    /// `x: &mut Tensor`.
    RefMut,
}

/// A tensor parameter's shape of type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParamKind {
    Tensor(Passing),
    /// `&[Tensor]`, `&mut [Tensor]`, `Vec<Tensor>`, `&Vec<Tensor>`, `&mut Vec<Tensor>`.
    Collection {
        passing: Passing,
        vec: bool,
    },
    /// A list of tensors held in a field (`opt.m`, a `Vec<Tensor>` or
    /// `[Tensor; N]`), borrowed for the body: `RefMut` when the struct is
    /// reached mutably.
    List {
        passing: Passing,
    },
    /// `Option<&Tensor>`, `Option<Tensor>`: the tensors it holds are read,
    /// never mutated.
    Optional,
}

/// True if `ty` names the tensor type (`Tensor`, `Tensor<f64>`,
/// `funcz::Tensor<T>`).
pub(crate) fn is_tensor_type(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => {
            p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Tensor")
        }
        Type::Group(g) => is_tensor_type(&g.elem),
        Type::Paren(p) => is_tensor_type(&p.elem),
        _ => false,
    }
}

fn vec_of_tensor(ty: &Type) -> bool {
    if let Type::Path(p) = ty
        && let Some(seg) = p.path.segments.last()
        && seg.ident == "Vec"
        && let PathArguments::AngleBracketed(a) = &seg.arguments
        && let Some(GenericArgument::Type(t)) = a.args.first()
    {
        return is_tensor_type(t);
    }
    false
}

fn option_of_tensor(ty: &Type) -> bool {
    if let Type::Path(p) = ty
        && let Some(seg) = p.path.segments.last()
        && seg.ident == "Option"
        && let PathArguments::AngleBracketed(a) = &seg.arguments
        && let Some(GenericArgument::Type(t)) = a.args.first()
    {
        return match t {
            Type::Reference(r) => is_tensor_type(&r.elem),
            t => is_tensor_type(t),
        };
    }
    false
}

/// True if `ty` holds tensors a body could read (a tensor, a reference to
/// one, an `Option`, slice, `Vec` or tuple of them).
fn holds_tensors(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => holds_tensors(&r.elem),
        Type::Slice(s) => holds_tensors(&s.elem),
        Type::Tuple(t) => t.elems.iter().any(holds_tensors),
        Type::Paren(p) => holds_tensors(&p.elem),
        Type::Group(g) => holds_tensors(&g.elem),
        Type::Path(p) => {
            if is_tensor_type(ty) {
                return true;
            }
            match p.path.segments.last() {
                Some(seg) if seg.ident == "Option" || seg.ident == "Vec" => match &seg.arguments {
                    PathArguments::AngleBracketed(a) => a.args.iter().any(|g| match g {
                        GenericArgument::Type(t) => holds_tensors(t),
                        _ => false,
                    }),
                    _ => false,
                },
                _ => false,
            }
        }
        _ => false,
    }
}

/// Expressions (each `&dyn rt::InputKey`-able) for the tensors a parameter
/// of type `ty` that the body only reads holds: `Option<&Tensor>`, tuples
/// (`c.0`), slices and `Vec`s of references. The entry check refuses them
/// when they share storage with a tensor input the body mutates.
pub(crate) fn reader_keys(
    base: proc_macro2::TokenStream,
    ty: &Type,
) -> Vec<proc_macro2::TokenStream> {
    match ty {
        Type::Reference(r) => reader_keys(base, &r.elem),
        Type::Paren(p) => reader_keys(base, &p.elem),
        Type::Group(g) => reader_keys(base, &g.elem),
        Type::Tuple(t) => t
            .elems
            .iter()
            .enumerate()
            .flat_map(|(i, ty)| {
                let i = syn::Index::from(i);
                reader_keys(quote::quote!((#base).#i), ty)
            })
            .collect(),
        ty if holds_tensors(ty) => vec![base],
        _ => Vec::new(),
    }
}

/// Classifies a parameter whose type the macro cannot see through (a type
/// alias such as `type Mat = Tensor<f32>`) but which the body uses as a
/// tensor (the receiver of an in-place op): by how it is passed.
pub(crate) fn classify_assumed(ty: &Type) -> Option<ParamKind> {
    let plain = |t: &Type| {
        matches!(t, Type::Path(p) if p.qself.is_none()
            && !p.path.segments.last().is_some_and(|s| s.ident == "Option" || s.ident == "Vec"))
    };
    match ty {
        Type::Reference(r) if plain(&r.elem) => {
            Some(ParamKind::Tensor(if r.mutability.is_some() {
                Passing::RefMut
            } else {
                Passing::Ref
            }))
        }
        t if plain(t) => Some(ParamKind::Tensor(Passing::Value)),
        _ => None,
    }
}

/// Classifies a parameter type.
pub(crate) fn classify(ty: &Type) -> Option<ParamKind> {
    if option_of_tensor(ty) {
        return Some(ParamKind::Optional);
    }
    if is_tensor_type(ty) {
        return Some(ParamKind::Tensor(Passing::Value));
    }
    if vec_of_tensor(ty) {
        return Some(ParamKind::Collection {
            passing: Passing::Value,
            vec: true,
        });
    }
    if let Type::Reference(r) = ty {
        let passing = if r.mutability.is_some() {
            Passing::RefMut
        } else {
            Passing::Ref
        };
        if is_tensor_type(&r.elem) {
            return Some(ParamKind::Tensor(passing));
        }
        if vec_of_tensor(&r.elem) {
            return Some(ParamKind::Collection { passing, vec: true });
        }
        if let Type::Slice(s) = &*r.elem
            && is_tensor_type(&s.elem)
        {
            return Some(ParamKind::Collection {
                passing,
                vec: false,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> Option<ParamKind> {
        classify(&syn::parse_str(s).unwrap())
    }

    #[test]
    fn kinds() {
        assert_eq!(k("Tensor"), Some(ParamKind::Tensor(Passing::Value)));
        assert_eq!(
            k("&funcz::Tensor<f64>"),
            Some(ParamKind::Tensor(Passing::Ref))
        );
        assert_eq!(k("&mut Tensor"), Some(ParamKind::Tensor(Passing::RefMut)));
        assert_eq!(
            k("&mut [Tensor]"),
            Some(ParamKind::Collection {
                passing: Passing::RefMut,
                vec: false
            })
        );
        assert_eq!(
            k("Vec<Tensor<f32>>"),
            Some(ParamKind::Collection {
                passing: Passing::Value,
                vec: true
            })
        );
        assert_eq!(k("usize"), None);
        assert_eq!(k("&[f32]"), None);
    }
}
