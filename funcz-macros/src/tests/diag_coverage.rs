//! Every refusal in `diag.rs` is exercised by a ui test: its doc comment
//! names a file under `funcz-ui/tests/ui/` that exists with its `.stderr`,
//! and expanding the `#[functionalize]` items of that file reports that
//! very refusal (the diag functions record their names under `cfg(test)`).
//! Every message about user code goes through `diag.rs`.

use std::path::PathBuf;

use proc_macro2::TokenStream;
use quote::ToTokens;

const DIAG: &str = include_str!("../diag.rs");

/// The refusals of `diag.rs`: its top-level `pub(crate) fn`s, each with
/// the ui test files its doc comment names.
fn refusals() -> Vec<(String, Vec<String>)> {
    let file = syn::parse_file(DIAG).expect("diag.rs parses");
    let mut out = Vec::new();
    for item in &file.items {
        let syn::Item::Fn(f) = item else { continue };
        if !matches!(f.vis, syn::Visibility::Restricted(_)) {
            continue;
        }
        let mut doc = String::new();
        for a in &f.attrs {
            if let syn::Meta::NameValue(nv) = &a.meta
                && nv.path.is_ident("doc")
                && let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = &nv.value
            {
                doc.push_str(&s.value());
                doc.push(' ');
            }
        }
        out.push((f.sig.ident.to_string(), ui_files_named(&doc)));
    }
    out
}

/// The `NAME` of each `(funcz-ui/tests/ui/NAME.rs)` in `doc`.
fn ui_files_named(doc: &str) -> Vec<String> {
    let marker = "(funcz-ui/tests/ui/";
    let mut names = Vec::new();
    let mut rest = doc;
    while let Some(i) = rest.find(marker) {
        rest = &rest[i + marker.len()..];
        if let Some(end) = rest.find(".rs)") {
            names.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    names
}

fn ui_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../funcz-ui/tests/ui")
}

/// The `(arguments, item)` of each item of `src` under `#[functionalize]`
/// (free items and methods of `impl` blocks), without the attribute.
fn functionalized(src: &str) -> Vec<(TokenStream, TokenStream)> {
    fn take(attrs: &mut Vec<syn::Attribute>) -> Option<TokenStream> {
        let i = attrs
            .iter()
            .position(|a| a.path().is_ident("functionalize"))?;
        Some(match &attrs.remove(i).meta {
            syn::Meta::List(l) => l.tokens.clone(),
            _ => TokenStream::new(),
        })
    }
    let file = syn::parse_file(src).expect("the ui case parses");
    let mut out = Vec::new();
    for mut item in file.items {
        if let syn::Item::Impl(imp) = &mut item {
            for it in &mut imp.items {
                if let syn::ImplItem::Fn(f) = it
                    && let Some(args) = take(&mut f.attrs)
                {
                    out.push((args, f.to_token_stream()));
                }
            }
            continue;
        }
        let attrs = match &mut item {
            syn::Item::Fn(i) => &mut i.attrs,
            syn::Item::Struct(i) => &mut i.attrs,
            syn::Item::Enum(i) => &mut i.attrs,
            syn::Item::Const(i) => &mut i.attrs,
            syn::Item::Static(i) => &mut i.attrs,
            syn::Item::Mod(i) => &mut i.attrs,
            syn::Item::Trait(i) => &mut i.attrs,
            _ => continue,
        };
        if let Some(args) = take(attrs) {
            out.push((args, item.to_token_stream()));
        }
    }
    out
}

/// The refusals reported by expanding the functionalized items of `src`.
fn fired_by(src: &str) -> Vec<&'static str> {
    crate::diag::fired::take();
    for (args, item) in functionalized(src) {
        crate::expand::expand(args, item);
    }
    crate::diag::fired::take()
}

#[test]
fn every_refusal_names_a_ui_test_that_reports_it() {
    let refusals = refusals();
    assert!(
        refusals.len() >= 20,
        "only {} refusals found in diag.rs",
        refusals.len()
    );
    let mut problems = Vec::new();
    for (name, files) in &refusals {
        if files.is_empty() {
            problems.push(format!(
                "`{name}` names no ui test `(funcz-ui/tests/ui/NAME.rs)`"
            ));
        }
        for file in files {
            let rs = ui_dir().join(format!("{file}.rs"));
            let Ok(src) = std::fs::read_to_string(&rs) else {
                problems.push(format!("`{name}` names {file}.rs, which does not exist"));
                continue;
            };
            if !ui_dir().join(format!("{file}.stderr")).exists() {
                problems.push(format!("{file}.rs (for `{name}`) has no .stderr"));
            }
            let fired = fired_by(&src);
            if !fired.contains(&name.as_str()) {
                problems.push(format!(
                    "{file}.rs does not trigger `{name}` (it triggers {fired:?})"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every ui case's refusals are diag functions with names (the name each
/// passes to `refuse` is its own, so the test above can find it).
#[test]
fn every_reported_refusal_is_a_diag_function() {
    let names: Vec<String> = refusals().into_iter().map(|(n, _)| n).collect();
    let mut seen = 0;
    for entry in std::fs::read_dir(ui_dir()).expect("funcz-ui/tests/ui is there") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let src = std::fs::read_to_string(&path).expect("the ui case reads");
        for f in fired_by(&src) {
            seen += 1;
            assert!(
                names.iter().any(|n| n == f),
                "{}: refusal `{f}` is not the name of a diag function",
                path.display()
            );
        }
    }
    assert!(seen >= 20, "only {seen} refusals reported by the ui cases");
}

/// No message about user code is written outside `diag.rs`: the only
/// `.error(` calls left elsewhere are `Ctxt`'s own (among them
/// `Ctxt::internal`, the report of a disagreement between the macro's
/// passes, which is not a refusal of user code).
#[test]
fn refusals_are_only_written_in_diag() {
    let src_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src_dir.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("the source directory reads") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "tests") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 20, "only {} source files found", files.len());
    let mut problems = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(&src_dir)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        let src = std::fs::read_to_string(&path).expect("the source reads");
        let calls: Vec<&str> = src
            .match_indices(".error(")
            .map(|(at, _)| &src[at..])
            .collect();
        let allowed = match rel.as_str() {
            "diag.rs" | "ctxt.rs" => continue,
            _ => 0,
        };
        if calls.len() > allowed {
            problems.push(format!(
                "{rel} calls `.error(` {} time(s): write each refusal as a function of diag.rs",
                calls.len()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
