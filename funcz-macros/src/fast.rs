//! What the macro runs most, made cheap for the unoptimized build cargo
//! gives proc macros in a debug profile: its hash maps and sets (names,
//! binding ids) with a cheap hasher (the standard library's SipHash rounds
//! were a tenth of each expansion; keys come from the function being
//! expanded, nothing to defend against), a bitset of binding ids
//! ([`IdSet`]), and identifiers' texts ([`text`]).

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
        // A word at a time by hand: `chunks_exact` and `try_into` are
        // several calls per word in an unoptimized build.
        let (mut i, n) = (0, bytes.len());
        while i + 8 <= n {
            let mut w = 0u64;
            let mut k = 0;
            while k < 8 {
                w |= u64::from(bytes[i + k]) << (8 * k);
                k += 1;
            }
            self.mix(w);
            i += 8;
        }
        let mut w = (n - i) as u64;
        let mut k = 0;
        while i + k < n {
            w ^= u64::from(bytes[i + k]) << (8 * k);
            k += 1;
        }
        self.mix(w ^ ((n - i) as u64) << 56);
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

/// A set of binding ids (small integers, dense from 0): a bit per id.
/// `contains` is a shift and a mask, where a hash set's lookup in an
/// unoptimized build is about 500 instructions (the lowering asks whether
/// a root is tracked some 300 times per function).
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub(crate) struct IdSet {
    words: Vec<u64>,
}

impl IdSet {
    /// Adds `id`; true if it was not in the set.
    pub(crate) fn insert(&mut self, id: usize) -> bool {
        let (w, bit) = (id / 64, 1u64 << (id % 64));
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        let fresh = self.words[w] & bit == 0;
        self.words[w] |= bit;
        fresh
    }

    pub(crate) fn contains(&self, id: &usize) -> bool {
        let (w, bit) = (*id / 64, 1u64 << (*id % 64));
        w < self.words.len() && self.words[w] & bit != 0
    }

    /// The ids, in increasing order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64)
                .filter(move |b| bits & (1u64 << b) != 0)
                .map(move |b| w * 64 + b)
        })
    }

    /// The smallest id in one of the two sets and not the other.
    pub(crate) fn first_difference(&self, other: &IdSet) -> Option<usize> {
        let n = self.words.len().max(other.words.len());
        (0..n).find_map(|w| {
            let a = self.words.get(w).copied().unwrap_or(0);
            let b = other.words.get(w).copied().unwrap_or(0);
            let d = a ^ b;
            (d != 0).then(|| w * 64 + d.trailing_zeros() as usize)
        })
    }
}

impl Extend<usize> for IdSet {
    fn extend<I: IntoIterator<Item = usize>>(&mut self, ids: I) {
        for id in ids {
            self.insert(id);
        }
    }
}

/// An identifier's text. (`format!` runs the standard library's own,
/// optimized, string writer; `to_string` instantiates it in this crate,
/// unoptimized in a debug build: 650 instructions against 460.)
pub(crate) fn text(ident: &proc_macro2::Ident) -> String {
    format!("{ident}")
}
