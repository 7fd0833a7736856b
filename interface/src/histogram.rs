//! The histogram's bins and the rule that puts a value in a bin, shared by the kernels and the
//! CPU reference: the same f32 operations in the same order, so every value lands in the same
//! bin on both sides.

use crate::LaunchBounds;

/// Bins when the user does not choose.
pub const DEFAULT_BINS: u32 = 256;

/// The f32 kernels' bounds: any block up to 1024 threads, and two such blocks per SM. ptxas
/// then keeps a thread within 32 registers, so that the host's eight blocks of 256 threads per
/// SM all fit at once; the exact edges' f64 state would otherwise take a few more, and with
/// them only six blocks fit and the last two run as a second wave.
pub const F32_BOUNDS_THREADS: u32 = 1024;
pub const F32_BOUNDS_BLOCKS: u32 = 2;
pub const F32_BOUNDS: [LaunchBounds; 2] = [
    LaunchBounds {
        kernel: "histogram_shared_f32",
        max_threads: F32_BOUNDS_THREADS,
        min_blocks_per_sm: F32_BOUNDS_BLOCKS,
    },
    LaunchBounds {
        kernel: "histogram_shared_vec4_f32",
        max_threads: F32_BOUNDS_THREADS,
        min_blocks_per_sm: F32_BOUNDS_BLOCKS,
    },
];

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

/// `bins` equal bins over `[lo, hi]`, exactly as `np.histogram(x, bins, range=(lo, hi))` bins
/// f32 values. NumPy's edges are `linspace(lo, hi, bins + 1)` computed in f64 and rounded to
/// f32 (the data's type): edge `b` is `f32(b · step + lo)`, `step = (hi - lo) / bins`, the
/// last edge `f32(hi)`. Bin `b` holds `edge[b] <= v < edge[b + 1]`, and the last bin also its
/// upper edge. Values outside `[edge[0], edge[bins]]`, infinities and NaN count nowhere (NaN
/// fails every comparison).
///
/// The bin is first estimated in f32, `(v - edge[0]) · bins / (hi - lo)`, as NumPy does. The
/// estimate can be one bin off near an edge, so where it lies within [`F32Bins::near`] bins of
/// a bin's border it is corrected against the exact edges. Far from a border, the estimate is
/// the bin: the correction costs f64 arithmetic only for the few values near one.
#[derive(Debug, Clone, Copy)]
pub struct F32Bins {
    lo: f64,
    step: f64,
    first: f32,
    last: f32,
    bins: u32,
    bins_per_unit: f32,
    near: f32,
}

/// `a · b + c` with both operations rounded, as NumPy's `linspace` computes it. libNVVM would
/// contract a multiply and an add into one `fma`, which rounds once and can move an edge by an
/// ulp; explicitly rounded PTX operations are never contracted.
#[inline(always)]
fn mul_then_add(a: f64, b: f64, c: f64) -> f64 {
    #[cfg(target_os = "cuda")]
    {
        let (product, sum): (u64, u64);
        // SAFETY: arithmetic on registers only.
        unsafe {
            core::arch::asm!("mul.rn.f64 {p}, {a}, {b};", p = out(reg64) product, a = in(reg64) a.to_bits(), b = in(reg64) b.to_bits());
            core::arch::asm!("add.rn.f64 {s}, {p}, {c};", s = out(reg64) sum, p = in(reg64) product, c = in(reg64) c.to_bits());
        }
        f64::from_bits(sum)
    }
    #[cfg(not(target_os = "cuda"))]
    {
        a * b + c
    }
}

impl F32Bins {
    /// `lo < hi`, both finite, `bins >= 1` (the host checks).
    #[inline(always)]
    pub fn new(lo: f64, hi: f64, bins: u32) -> Self {
        let first = lo as f32;
        let last = hi as f32;
        let per_unit = bins as f64 / (hi - lo);
        // How far the f32 estimate can stray from the exact edges, in bins: each edge is
        // rounded to f32 (half an ulp of the largest magnitude, 2^-24 of it), `lo` itself too,
        // and the estimate takes three f32 roundings of a result below `bins` (2^-24 each).
        // Four times that is the margin: well past the worst case, and still few values.
        let (low, high) = (if lo < 0.0 { -lo } else { lo }, if hi < 0.0 { -hi } else { hi });
        let magnitude = if low > high { low } else { high };
        let straying = (2.0 * magnitude * per_unit + 3.0 * bins as f64) * (1.0 / 16_777_216.0);
        Self {
            lo,
            step: (hi - lo) / bins as f64,
            first,
            last,
            bins,
            bins_per_unit: per_unit as f32,
            near: (4.0 * straying) as f32,
        }
    }

    /// Edge `b` of `0..=bins`, as NumPy computes it.
    #[inline(always)]
    pub fn edge(&self, b: u32) -> f32 {
        if b == self.bins {
            self.last
        } else {
            mul_then_add(b as f64, self.step, self.lo) as f32
        }
    }

    /// The margin, in bins, within which the f32 estimate is checked against the edges.
    pub fn near(&self) -> f32 {
        self.near
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
        if !(value >= self.first && value <= self.last) {
            return None;
        }
        let estimate = (value - self.first) * self.bins_per_unit;
        // SAFETY: in range, so the estimate lies in [0, bins · (1 + 2^-22)]: it converts
        // without overflow.
        let whole: u32 = unsafe { estimate.to_int_unchecked() };
        let fraction = estimate - whole as f32;
        let mut bin = if whole >= self.bins { self.bins - 1 } else { whole };
        if whole >= self.bins || fraction < self.near || fraction > 1.0 - self.near {
            while bin > 0 && value < self.edge(bin) {
                bin -= 1;
            }
            while bin + 1 < self.bins && value >= self.edge(bin + 1) {
                bin += 1;
            }
        }
        Some(bin)
    }
}
