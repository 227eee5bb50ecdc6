//! Runs a call that must panic and reports where the panic pointed: the
//! harness of the tests of panic locations (`tests/input_check_location.rs`,
//! `tests/op_panic_location.rs`), included by each with `#[path]`.

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe, Location};
use std::sync::Once;

thread_local! {
    /// Where the last panic on this thread happened (file, line), while
    /// [`panic_of`] runs its call on this thread.
    static LAST: RefCell<Option<Option<(String, u32)>>> = const { RefCell::new(None) };
}

/// Runs `f`, which must panic; returns its message and location (caught
/// by a panic hook, per thread, so tests running in parallel do not mix;
/// other panics, a failed assertion's, go to the default hook).
pub fn panic_of(f: impl FnOnce()) -> (String, String, u32) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let at = info
                .location()
                .map(|l: &Location<'_>| (l.file().to_string(), l.line()));
            let caught = LAST.with(|c| c.borrow_mut().as_mut().map(|slot| *slot = at).is_some());
            if !caught {
                default(info);
            }
        }));
    });
    LAST.with(|c| *c.borrow_mut() = Some(None));
    let err = panic::catch_unwind(AssertUnwindSafe(f));
    let at = LAST.with(|c| c.borrow_mut().take()).flatten();
    let err = err.expect_err("the call panics");
    let msg = err
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    let (file, line) = at.expect("the hook saw the panic");
    (msg, file, line)
}
