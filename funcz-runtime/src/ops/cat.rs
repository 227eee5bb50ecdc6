//! The copy kernel of `cat` and `stack`: the parts are read in place (each
//! storage locked once) and copied into the output in one pass.

use std::sync::RwLockReadGuard;

use crate::element::Element;
use crate::storage::huge;
use crate::tensor::Tensor;
use crate::view::gather::append_from;

/// The row-major values of the concatenation of `parts`: each part's
/// row-major values seen as `[outer, chunks[j]]`, and for each `o` in
/// `0..outer` the `o`-th chunk of every part in turn. `chunks` has one
/// entry per part, and each part has `outer * chunks[j]` elements.
pub(super) fn concat<T: Element>(parts: &[&Tensor<T>], outer: usize, chunks: &[usize]) -> Vec<T> {
    debug_assert_eq!(parts.len(), chunks.len());
    let total = outer * chunks.iter().sum::<usize>();
    let mut out = huge::with_capacity(total);
    if outer == 1 {
        // One chunk per part (`cat` along the first dimension, `stack` at
        // 0): one part locked at a time.
        for t in parts {
            let g = t.storage.read();
            append_from(&mut out, &g, &t.layout);
        }
        return out;
    }
    // Strided parts are copied out row-major first; the storages of the
    // others are locked once each (parts may share one), in address order
    // (the crate's rule for holding several locks).
    let owned: Vec<Option<Vec<T>>> = parts
        .iter()
        .map(|t| (!t.layout.is_contiguous()).then(|| t.to_vec()))
        .collect();
    let mut order: Vec<usize> = (0..parts.len()).filter(|&j| owned[j].is_none()).collect();
    order.sort_by_key(|&j| parts[j].storage_key());
    let mut guards: Vec<(usize, RwLockReadGuard<'_, Vec<T>>)> = Vec::new();
    let mut slot = vec![0usize; parts.len()];
    for &j in &order {
        let key = parts[j].storage_key();
        if guards.last().is_none_or(|(k, _)| *k != key) {
            guards.push((key, parts[j].storage.read()));
        }
        slot[j] = guards.len() - 1;
    }
    let srcs: Vec<&[T]> = (0..parts.len())
        .map(|j| match &owned[j] {
            Some(v) => v.as_slice(),
            None if parts[j].numel() == 0 => &[],
            None => {
                let l = &parts[j].layout;
                &guards[slot[j]].1[l.offset..l.offset + l.numel()]
            }
        })
        .collect();
    for o in 0..outer {
        for (s, &c) in srcs.iter().zip(chunks) {
            out.extend_from_slice(&s[o * c..(o + 1) * c]);
        }
    }
    out
}
