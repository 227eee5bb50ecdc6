//! The field-place scan is skipped when the body never uses a base as a
//! place starts (`places::uses_a_base`): over this repository's functions
//! (its tests, examples and the expander's corpus), whenever the check
//! says so, the full scan finds no place and no parameter either.

use std::path::Path;

use syn::visit::Visit;
use syn::{Block, ItemFn};

use crate::expand::signature_bases;
use crate::places::{find_all, uses_a_base};

/// Every function of `file` (in modules, impls, and in macro invocations
/// whose tokens parse as items, as the tests' `variants! { .. }` do).
fn functions(file: &syn::File, out: &mut Vec<ItemFn>) {
    struct Collect<'o>(&'o mut Vec<ItemFn>);
    impl<'ast> Visit<'ast> for Collect<'_> {
        fn visit_item_fn(&mut self, f: &'ast ItemFn) {
            self.0.push(f.clone());
            syn::visit::visit_item_fn(self, f);
        }
        fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
            self.0.push(ItemFn {
                attrs: f.attrs.clone(),
                vis: f.vis.clone(),
                modifiers: f.modifiers.clone(),
                sig: f.sig.clone(),
                block: Box::new(f.block.clone()),
            });
            syn::visit::visit_impl_item_fn(self, f);
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            if let Ok(inner) = syn::parse2::<syn::File>(m.tokens.clone()) {
                self.visit_file(&inner);
            }
        }
    }
    Collect(out).visit_file(file);
}

fn sources() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out: Vec<String> = super::corpus::CORPUS
        .iter()
        .map(|s| s.to_string())
        .collect();
    for dir in [
        "tests",
        "tests/ported",
        "examples",
        "benches",
        "funcz-difftest/src",
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "rs") {
                out.push(std::fs::read_to_string(&p).expect("a source file reads"));
            }
        }
    }
    out
}

#[test]
fn the_base_check_skips_only_scans_that_find_nothing() {
    let (mut fns, mut files) = (Vec::new(), 0);
    for src in sources() {
        if let Ok(file) = syn::parse_file(&src) {
            files += 1;
            functions(&file, &mut fns);
        }
    }
    let (mut skipped, mut found) = (0, 0);
    for f in &fns {
        let (bases, _, tensors) = signature_bases(f);
        let block: &Block = &f.block;
        let (places, params) = find_all(block, &bases, &tensors);
        if !uses_a_base(block, &bases) {
            assert!(
                places.is_empty() && params.is_empty(),
                "skipped the scan of `{}`, which finds {:?} and {params:?}",
                f.sig.ident,
                places.iter().map(|p| &p.key).collect::<Vec<_>>(),
            );
            skipped += usize::from(!bases.is_empty());
        } else if !places.is_empty() || !params.is_empty() {
            found += 1;
        }
    }
    // (The check is exercised both ways: functions with bases it skips,
    // and functions whose places it lets the scan find.)
    assert!(
        files > 20 && fns.len() > 500,
        "{files} files, {} functions",
        fns.len()
    );
    assert!(skipped > 20, "{skipped} skipped with bases");
    assert!(found > 20, "{found} with places found");
}
