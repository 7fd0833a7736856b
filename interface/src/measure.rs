//! Shapes shared by the measuring kernel (`kernels/src/measure.rs`) and its host: the launch,
//! and the layout of the record each label accumulates into.

/// Consecutive pixels of one row a thread measures: a run of equal labels among them is
/// summed in registers and reaches global memory once.
pub const ITEMS: usize = 16;
/// Threads per block.
pub const BLOCK: u32 = 256;
/// 8-byte words of one label's record, which starts zeroed:
/// - word 0, 1, 2 (f64): flux, flux · row, flux · column;
/// - word 3 (two u32): pixels, then [`peak_key`] of the brightest pixel;
/// - word 4 (two u32): `u32::MAX - y_min`, then `y_max`;
/// - word 5 (two u32): `u32::MAX - x_min`, then `x_max`.
///
/// Every u32 field grows by `atomicAdd` or `atomicMax`, so zero is the right start for all
/// of them (the minima are kept as their complement).
pub const RECORD_WORDS: usize = 6;
/// Byte offsets of the u32 fields in a record.
pub const PIXELS: usize = 24;
pub const PEAK: usize = 28;
pub const Y_MIN: usize = 32;
pub const Y_MAX: usize = 36;
pub const X_MIN: usize = 40;
pub const X_MAX: usize = 44;

/// An unsigned key ordered as the floats are (for every value but NaN): negative floats
/// have their bits flipped, positive ones their sign bit set. The maximum key is the
/// maximum value, and every key of a number is above 0, the zeroed record's start.
#[inline(always)]
pub fn peak_key(value: f32) -> u32 {
    let bits = value.to_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// The value whose [`peak_key`] is `key`.
#[inline(always)]
pub fn peak_of(key: u32) -> f32 {
    f32::from_bits(if key >> 31 == 1 { key & 0x7FFF_FFFF } else { !key })
}
