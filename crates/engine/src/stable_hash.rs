//! FNV-1a over bytes: the same value in every build and on every platform (std's hasher is
//! neither), for names that must not change between releases: a workspace's checkpoint store,
//! the app's single-instance name.

pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3))
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_the_published_fnv1a_values() {
        // Changing this would rename every workspace's checkpoint store.
        assert_eq!(super::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
