//! The layout of the o200k rank table, shared by the build script that writes it and the counter
//! that reads it.
//!
//! The table is an open-addressing hash table of [`SLOTS`] 64-bit slots, linear probing, each slot
//! empty (0) or one token: its length in bytes, its offset in the token bytes
//! (`engine/data/o200k_base.bin` after the lengths), its rank and a tag of its hash, so that a
//! probe rarely compares bytes of another token. A token sits at or after [`home`] of its [`hash`],
//! before the next empty slot.

/// Ordinary o200k tokens: ranks 0 to 199,997, every one present.
pub(crate) const TOKENS: usize = 199_998;

/// Slots of the table: a power of two, about 1.3 slots a token.
pub(crate) const SLOTS: usize = 1 << 18;

/// Bits of a slot holding the token's length (1 to 128 bytes; 0 marks an empty slot).
const LENGTH_BITS: u32 = 8;
/// Bits of a slot holding the token's offset in the token bytes (1,397,670 bytes in all).
const OFFSET_BITS: u32 = 21;
/// Bits of a slot holding the rank (below 2^18).
const RANK_BITS: u32 = 18;
/// Where the tag starts: the tag fills the slot's 17 high bits.
const TAG_SHIFT: u32 = LENGTH_BITS + OFFSET_BITS + RANK_BITS;
/// Bits of the tag.
const TAG_BITS: u32 = 64 - TAG_SHIFT;
/// Bits of a hash that [`home`] takes.
const HOME_BITS: u32 = SLOTS.trailing_zeros();

/// A 64-bit hash of `bytes` (a multiply-rotate hash over 8-byte words; its high bits are well
/// mixed).
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0xf135_7aea_2e62_a9c5;
    let mut state = (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("chunks of 8 bytes"));
        state = (state.rotate_left(26) ^ word).wrapping_mul(K);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        state = (state.rotate_left(26) ^ u64::from_le_bytes(word)).wrapping_mul(K);
    }
    state ^ (state >> 32)
}

/// The first slot probed for a token of hash `hash`: its top 18 bits.
pub(crate) fn home(hash: u64) -> usize {
    (hash >> (64 - HOME_BITS)) as usize
}

/// The tag stored with a token of hash `hash`: 17 bits of it below those [`home`] takes.
pub(crate) fn tag(hash: u64) -> u64 {
    (hash >> (64 - HOME_BITS - TAG_BITS)) & ((1 << TAG_BITS) - 1)
}

/// The slot of a token of `length` bytes at `offset` in the token bytes, with `rank` and `tag`.
#[allow(dead_code, reason = "the build script packs, the counter unpacks")]
pub(crate) fn pack(length: usize, offset: usize, rank: u32, tag: u64) -> u64 {
    assert!((1..1 << LENGTH_BITS).contains(&length), "a token of 1 to 255 bytes");
    assert!(offset < 1 << OFFSET_BITS && rank < 1 << RANK_BITS, "offset and rank fit their bits");
    length as u64
        | ((offset as u64) << LENGTH_BITS)
        | (u64::from(rank) << (LENGTH_BITS + OFFSET_BITS))
        | (tag << TAG_SHIFT)
}

/// A slot's token: its length (0 for an empty slot), offset, rank and tag.
#[allow(dead_code, reason = "the build script packs, the counter unpacks")]
pub(crate) fn unpack(slot: u64) -> (usize, usize, u32, u64) {
    let field = |shift: u32, bits: u32| (slot >> shift) & ((1 << bits) - 1);
    (
        field(0, LENGTH_BITS) as usize,
        field(LENGTH_BITS, OFFSET_BITS) as usize,
        field(LENGTH_BITS + OFFSET_BITS, RANK_BITS) as u32,
        slot >> TAG_SHIFT,
    )
}
