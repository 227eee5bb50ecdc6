//! The macro's own hash maps and sets (names, binding ids), with a cheap
//! hasher: cargo builds proc macros unoptimized in a debug build, where
//! the standard library's SipHash rounds were a tenth of each expansion.
//! (Keys come from the function being expanded; nothing to defend against.)

use std::hash::{BuildHasherDefault, Hasher};

/// `std`'s map with [`Fast`] hashing.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<Fast>>;

/// `std`'s set with [`Fast`] hashing.
pub(crate) type HashSet<T> = std::collections::HashSet<T, BuildHasherDefault<Fast>>;

/// Multiplicative hashing, a word at a time.
#[derive(Default, Clone, Copy)]
pub(crate) struct Fast(u64);

impl Fast {
    #[inline]
    fn mix(&mut self, word: u64) {
        // (2^64 / the golden ratio: spreads each word over the high bits,
        // which the table's probing reads first.)
        self.0 = (self.0.rotate_left(26) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl Hasher for Fast {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.mix(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let mut last = [0u8; 8];
        let rest = chunks.remainder();
        last[..rest.len()].copy_from_slice(rest);
        self.mix(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 56));
    }

    fn write_u8(&mut self, i: u8) {
        self.mix(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.mix(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.mix(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.mix(i as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
