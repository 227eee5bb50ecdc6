//! The macro's hasher (`fast.rs`).

use std::hash::Hasher;

use crate::fast::{Fast, HashMap, HashSet, IdSet};

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

#[test]
fn an_id_set_holds_ids_across_words_and_names_the_first_difference() {
    let mut a = IdSet::default();
    assert!(!a.contains(&0) && !a.contains(&1000));
    assert!(a.insert(3));
    assert!(!a.insert(3), "a second insert is not fresh");
    a.extend([64, 130, 0]);
    for id in [0, 3, 64, 130] {
        assert!(a.contains(&id), "{id}");
    }
    for id in [1, 63, 65, 129, 131, 5000] {
        assert!(!a.contains(&id), "{id}");
    }
    assert_eq!(a.iter().collect::<Vec<_>>(), [0, 3, 64, 130]);
    let mut b = a.clone();
    assert_eq!(a.first_difference(&b), None);
    b.insert(200);
    assert_eq!(a.first_difference(&b), Some(200));
    assert_eq!(b.first_difference(&a), Some(200));
    let mut c = IdSet::default();
    c.extend([0, 3, 64]);
    assert_eq!(a.first_difference(&c), Some(130));
}
