//! The README's first screen shows what `cargo run --example seed` prints:
//! this test runs the example's code and compares it with the README's
//! first `text` block, line for line.

#[path = "../examples/seed.rs"]
#[allow(dead_code)] // the example's `main`
mod seed;

const README: &str = include_str!("../README.md");

/// The first fenced block of `lang` in `md`.
fn first_block<'a>(md: &'a str, lang: &str) -> &'a str {
    let fence = format!("```{lang}\n");
    let start = md.find(&fence).expect("a fenced block") + fence.len();
    let len = md[start..].find("```").expect("a closing fence");
    &md[start..start + len]
}

#[test]
fn readme_shows_the_seed_example_output() {
    let shown = first_block(README, "text");
    let printed = seed::report();
    assert_eq!(
        shown.trim_end(),
        printed.trim_end(),
        "update the README's first text block with `cargo run --example seed`"
    );
    // And it is on the first screen: before any other section's prose.
    let at = README.find(shown).unwrap();
    assert!(at < README.find("## Add it to your project").unwrap());
}

#[test]
fn readme_keeps_the_two_setup_commands_and_how_to_add_it() {
    let sh = first_block(README, "sh");
    assert!(sh.contains("cargo run --example seed"), "{sh}");
    assert!(sh.contains("cargo test --workspace"), "{sh}");
    assert!(README.contains("cargo add funcz"));
    assert!(first_block(README, "toml").contains("funcz = \""));
    // No rustdoc-only hidden lines in Rust blocks: they render literally
    // outside rustdoc (on GitHub, on crates.io).
    let mut in_rust = false;
    for line in README.lines() {
        if let Some(lang) = line.strip_prefix("```") {
            in_rust = !in_rust && lang.starts_with("rust");
        } else if in_rust {
            assert!(
                line != "#" && !line.starts_with("# "),
                "hidden line: {line}"
            );
        }
    }
}
