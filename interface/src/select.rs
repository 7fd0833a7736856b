//! Radix select (`kernels/src/select.rs`): the order-preserving key of an f32, the digits its
//! passes take from it, the sizes of its launches and the layout of the state the passes hand
//! each other on the GPU.

/// Passes over the data: one digit of the key each, most significant first.
pub const PASSES: usize = 3;
/// Bits of the first pass's digit (the key's top bits: sign, exponent, two mantissa bits).
pub const HIGH_BITS: u32 = 11;
/// Bits of the second pass's digit.
pub const MIDDLE_BITS: u32 = 11;
/// Bits of the last pass's digit, which ends at the key's lowest bit.
pub const LOW_BITS: u32 = 10;
/// Bits of each pass's digit: 11 + 11 + 10 = 32, so the third pass ends at the whole key.
pub const DIGIT_BITS: [u32; PASSES] = [HIGH_BITS, MIDDLE_BITS, LOW_BITS];
/// Buckets of the widest digit: the stride between the slots' histograms.
pub const RADIX: usize = 1 << 11;
/// Ranks searched at once: the two middle values of an even count, which may part ways in any
/// pass (a k-th value searches the same rank in both).
pub const SLOTS: usize = 2;
/// Counters of the histogram a pass fills: a slot's buckets after the other's.
pub const HISTOGRAM_LEN: usize = SLOTS * RADIX;
/// Threads per block of `select_count_vec4` (a multiple of 32: its loop runs whole warps).
pub const COUNT_BLOCK: usize = 512;
/// Blocks per SM of `select_count_vec4`'s grid, at most: as many as its registers (a batch of
/// quads in flight per thread) let run at once.
pub const COUNT_BLOCKS_PER_SM: usize = 2;
/// 16-byte quads each thread of `select_count_vec4` loads before counting them.
pub const COUNT_QUADS: usize = 4;
/// Buckets per thread of the find, which the last block of a pass runs.
pub const FIND_BUCKETS: usize = RADIX / COUNT_BLOCK;

/// Values the second pass may gather for the last: when the bucket the first pass found holds
/// at most this many, the last pass reads them instead of every value.
pub const GATHER_CAP: usize = 1 << 16;
/// Values one block of `select_count_vec4` counts in one trip of its loop.
pub const VALUES_PER_BLOCK_TRIP: usize = 4 * COUNT_QUADS * COUNT_BLOCK;

/// Blocks that `n` values keep busy for one trip (at least one): the first pass's grid, up to
/// the GPU's fill, and the blocks of the last pass that read a gathering.
#[inline(always)]
pub fn blocks_for(n: usize) -> usize {
    // Not `div_ceil`: the pinned nightly that builds the kernels lacks it.
    let blocks = (n + VALUES_PER_BLOCK_TRIP - 1) / VALUES_PER_BLOCK_TRIP;
    if blocks == 0 {
        1
    } else {
        blocks
    }
}
/// [`STATE_GATHERED`] when the first pass's bucket holds more than [`GATHER_CAP`] values: the
/// last pass reads every value.
pub const NOT_GATHERED: u32 = u32::MAX;

/// Words (u32) of the state: where each word lives.
pub const STATE_WORDS: usize = 8;
/// Values inside the window, from the first pass's histogram.
pub const STATE_COUNT: usize = 0;
/// 1 when there is no rank to find (an empty window, k past the count, or only the count
/// wanted: [`FIND_MEDIAN_UNLESS_COUNT`]): later passes stop.
pub const STATE_EMPTY: usize = 1;
/// Each slot's rank among the values that share its prefix (two words).
pub const STATE_RANK: usize = 2;
/// Each slot's key prefix found so far, the lower bits zero (two words); the whole key after
/// the last pass.
pub const STATE_PREFIX: usize = 4;
/// Values the second pass gathered for the last (0 when the first pass's find decides to
/// gather), or [`NOT_GATHERED`].
pub const STATE_GATHERED: usize = 6;
/// The ticket each block of a pass draws when its counts are in: the last one finds. Zero
/// between launches (it wraps back to zero with the last draw).
pub const STATE_TICKET: usize = 7;

/// `select_count_vec4`'s `find` argument: `rank` in both slots.
pub const FIND_RANK: u32 = 0;
/// `select_count_vec4`'s `find` argument: the two middle ranks, from the count.
pub const FIND_MEDIAN: u32 = 1;
/// `select_count_vec4`'s `find` argument: the two middle ranks, unless the window holds exactly
/// `rank` values; then only the count is wanted (a κσ round that clipped nothing), and the
/// passes after the first stop as for an empty window.
pub const FIND_MEDIAN_UNLESS_COUNT: u32 = 2;

/// The key that orders f32 values as unsigned integers: a positive value (sign bit 0) gets its
/// sign bit set, above every negative one; a negative value gets all its bits flipped, so a
/// larger magnitude gives a smaller key. -0.0 comes just before +0.0, as `f32::total_cmp`
/// orders them, and NaN past the infinities (a window never holds it).
#[inline(always)]
pub fn key(value: f32) -> u32 {
    let bits = value.to_bits();
    bits ^ (((bits as i32 >> 31) as u32) | 0x8000_0000)
}

/// The value whose key is `key`: [`key`] undone.
#[inline(always)]
pub fn value(key: u32) -> f32 {
    f32::from_bits(if key & 0x8000_0000 != 0 { key ^ 0x8000_0000 } else { !key })
}

/// Bits of pass `pass`'s digit, [`DIGIT_BITS`] read with constant indices: a kernel given the
/// pass at run time indexes no array (which would live in local memory).
#[inline(always)]
pub fn digit_bits(pass: usize) -> u32 {
    match pass {
        0 => DIGIT_BITS[0],
        1 => DIGIT_BITS[1],
        _ => DIGIT_BITS[2],
    }
}

/// Where pass `pass`'s digit starts in the key: 21, 10, 0.
#[inline(always)]
pub fn shift(pass: usize) -> u32 {
    match pass {
        0 => 32 - DIGIT_BITS[0],
        1 => 32 - DIGIT_BITS[0] - DIGIT_BITS[1],
        _ => 0,
    }
}

/// The key bits above pass `pass`'s digit, the prefix the earlier passes fixed (none in the
/// first pass).
#[inline(always)]
pub fn prefix_mask(pass: usize) -> u32 {
    match pass {
        0 => 0,
        _ => !((1u32 << (shift(pass) + digit_bits(pass))) - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_as_total_cmp_and_invert() {
        let values = [f32::NEG_INFINITY, -f32::MAX, -1.5, -1e-40, -0.0, 0.0, 1e-40, 1.0, f32::MAX, f32::INFINITY];
        for pair in values.windows(2) {
            assert!(key(pair[0]) < key(pair[1]), "{} before {}", pair[0], pair[1]);
            assert_eq!(pair[0].total_cmp(&pair[1]), key(pair[0]).cmp(&key(pair[1])));
        }
        for v in values {
            assert_eq!(value(key(v)).to_bits(), v.to_bits());
        }
    }

    #[test]
    fn digits_cover_the_key_once() {
        assert_eq!((shift(0), shift(1), shift(2)), (21, 10, 0));
        for (p, &bits) in DIGIT_BITS.iter().enumerate() {
            assert_eq!(digit_bits(p), bits);
        }
        assert_eq!((prefix_mask(0), prefix_mask(1), prefix_mask(2)), (0, 0xFFE0_0000, 0xFFFF_FC00));
        assert_eq!(DIGIT_BITS.iter().sum::<u32>(), 32);
        assert!(DIGIT_BITS.iter().all(|&b| (1usize << b) <= RADIX));
        assert_eq!(RADIX % COUNT_BLOCK, 0);
    }
}
