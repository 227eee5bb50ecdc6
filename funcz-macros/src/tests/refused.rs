//! The refused half of the never-miscompile corpus (scripts/gen_corpus.py,
//! tests/never_miscompile.rs for the accepted half): each case is refused
//! in at least one mode, every refusal is a `compile_error!` whose message
//! has a `help:` line, and the original function is still emitted.

use proc_macro2::TokenStream;

const REFUSED: &str = include_str!("refused.txt");

#[test]
fn refused_corpus_cases_are_spanned_errors_with_help() {
    let mut cases = 0;
    for src in REFUSED.split("\n=====\n").filter(|s| !s.trim().is_empty()) {
        let name = src.lines().next().unwrap_or_default();
        let mut refusals = 0;
        for args in ["", "remove = \"mutations_and_views\""] {
            let item: TokenStream = src.parse().expect("the case tokenizes");
            let out = crate::expand::expand(args.parse().expect("arguments tokenize"), item);
            let text = out.to_string();
            if !text.contains("compile_error") {
                continue;
            }
            refusals += 1;
            let file = syn::parse2::<syn::File>(out).expect("the refusal parses as Rust");
            let mut fns = 0;
            for item in &file.items {
                match item {
                    syn::Item::Fn(_) => fns += 1,
                    syn::Item::Macro(m) => {
                        let msg = m.mac.tokens.to_string();
                        assert!(
                            msg.contains("help:"),
                            "{name}: a refusal without help: {msg}"
                        );
                    }
                    other => panic!("{name}: unexpected item {}", quote::quote!(#other)),
                }
            }
            assert_eq!(fns, 1, "{name}: the original function is emitted once");
        }
        assert!(
            refusals > 0,
            "{name} is listed as refused but expands in both modes"
        );
        cases += 1;
    }
    assert!(cases >= 10, "only {cases} refused cases");
}
