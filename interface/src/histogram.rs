//! The histogram's bins and the rule that puts a value in a bin, shared by the kernels and the
//! CPU reference: the same f32 operations in the same order, so every value lands in the same
//! bin on both sides.

/// Bins of the fixed-size histograms.
pub const NUM_BINS: usize = 256;

/// Where a value lands: its bin, or `None` for a value the histogram does not count.
pub trait BinRule: Copy {
    type Value: Copy;
    fn bin(&self, value: Self::Value) -> Option<u32>;
}

/// Value `v` counts in bin `v`; values of [`NUM_BINS`] and above count nowhere.
#[derive(Debug, Clone, Copy)]
pub struct U32Bins;

impl BinRule for U32Bins {
    type Value = u32;
    #[inline(always)]
    fn bin(&self, value: u32) -> Option<u32> {
        if (value as usize) < NUM_BINS {
            Some(value)
        } else {
            None
        }
    }
}

/// [`NUM_BINS`] equal bins over `[min, max)`: bin `floor((v - min) * bins / (max - min))`,
/// clamped to the last bin against rounding at the top edge. NaN, infinities and values
/// outside the range count nowhere (NaN fails every comparison).
#[derive(Debug, Clone, Copy)]
pub struct F32Bins {
    min: f32,
    max: f32,
    bins_per_unit: f32,
}

impl F32Bins {
    #[inline(always)]
    pub fn new(min: f32, max: f32) -> Self {
        Self { min, max, bins_per_unit: NUM_BINS as f32 / (max - min) }
    }
}

impl BinRule for F32Bins {
    type Value = f32;
    #[inline(always)]
    fn bin(&self, value: f32) -> Option<u32> {
        if !(value >= self.min && value < self.max) {
            return None;
        }
        // In range, so the product lies in [0, NUM_BINS]: the cast cannot overflow.
        let bin: u32 = unsafe { ((value - self.min) * self.bins_per_unit).to_int_unchecked() };
        Some(if bin as usize >= NUM_BINS { NUM_BINS as u32 - 1 } else { bin })
    }
}
