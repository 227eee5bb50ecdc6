//! The macro's hasher (`fast.rs`).

use std::hash::Hasher;

use crate::fast::{Fast, HashMap, HashSet};

#[test]
fn names_that_differ_hash_apart_and_maps_find_them() {
    let names = [
        "x",
        "y",
        "xs",
        "__fz_v_x_0",
        "__fz_v_x_1",
        "a_long_name_of_17",
        "a_long_name_of_18",
    ];
    let hashes: HashSet<u64> = names
        .iter()
        .map(|n| {
            let mut h = Fast::default();
            h.write(n.as_bytes());
            h.finish()
        })
        .collect();
    assert_eq!(hashes.len(), names.len());
    let map: HashMap<String, usize> = names
        .iter()
        .enumerate()
        .map(|(k, n)| (n.to_string(), k))
        .collect();
    for (k, n) in names.iter().enumerate() {
        assert_eq!(map.get(*n), Some(&k));
    }
    let ids: HashSet<usize> = (0..1000).collect();
    assert!((0..1000).all(|i| ids.contains(&i)) && !ids.contains(&1000));
}
