use super::expand_pretty;

#[test]
fn dev_print() {
    let src = std::env::var("FZ_SRC").unwrap_or_default();
    if !src.is_empty() {
        println!(
            "{}",
            expand_pretty(&std::env::var("FZ_ARGS").unwrap_or_default(), &src)
        );
    }
}
