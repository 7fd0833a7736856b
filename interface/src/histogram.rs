//! The histogram's bins and the rule that puts a value in a bin, shared by the kernels and the
//! CPU reference: the same f32 operations in the same order, so every value lands in the same
//! bin on both sides.

/// Bins when the user does not choose.
pub const DEFAULT_BINS: u32 = 256;

/// Where a value lands: its bin, or `None` for a value the histogram does not count.
pub trait BinRule: Copy {
    type Value: Copy;
    fn bins(&self) -> u32;
    fn bin(&self, value: Self::Value) -> Option<u32>;
}

/// Value `v` counts in bin `v`; values of `bins` and above count nowhere.
#[derive(Debug, Clone, Copy)]
pub struct U32Bins {
    bins: u32,
}

impl U32Bins {
    #[inline(always)]
    pub fn new(bins: u32) -> Self {
        Self { bins }
    }
}

impl BinRule for U32Bins {
    type Value = u32;
    #[inline(always)]
    fn bins(&self) -> u32 {
        self.bins
    }
    #[inline(always)]
    fn bin(&self, value: u32) -> Option<u32> {
        if value < self.bins {
            Some(value)
        } else {
            None
        }
    }
}

/// `bins` equal bins over `[min, max)`: bin `floor((v - min) * bins / (max - min))`, clamped
/// to the last bin against rounding at the top edge. NaN, infinities and values outside the
/// range count nowhere (NaN fails every comparison).
#[derive(Debug, Clone, Copy)]
pub struct F32Bins {
    min: f32,
    max: f32,
    bins: u32,
    bins_per_unit: f32,
}

impl F32Bins {
    #[inline(always)]
    pub fn new(min: f32, max: f32, bins: u32) -> Self {
        Self { min, max, bins, bins_per_unit: bins as f32 / (max - min) }
    }
}

impl BinRule for F32Bins {
    type Value = f32;
    #[inline(always)]
    fn bins(&self) -> u32 {
        self.bins
    }
    #[inline(always)]
    fn bin(&self, value: f32) -> Option<u32> {
        if !(value >= self.min && value < self.max) {
            return None;
        }
        // In range, so the product lies in [0, bins]: the cast cannot overflow.
        let bin: u32 = unsafe { ((value - self.min) * self.bins_per_unit).to_int_unchecked() };
        Some(if bin >= self.bins { self.bins - 1 } else { bin })
    }
}
