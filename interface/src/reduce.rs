//! Launch shapes of the reduction kernels (`kernels/src/reduce/`), and the moments they
//! compute: their layout in memory and how two sets' moments merge.

/// Threads per block of every reduction kernel: the shared trees and the warp-sum stage are
/// sized for it (a power of two, a whole number of warps).
pub const BLOCK: usize = 256;
/// Warps per block: the partials the warp-shuffle stages leave in shared memory.
pub const WARPS: usize = BLOCK / 32;
/// Blocks per SM in the grid of `reduce_vec4`: eight times the 8 that fit at once (2048
/// threads). One wave of blocks, each walking its share to the end, finishes when the slowest
/// SM does, and SMs do not get equal shares of the memory's bandwidth; with eight waves of
/// shorter blocks, the SMs that finish a block early start the next, and the work balances.
/// (Measured on an H100 at 2^28 values: each doubling from one wave to eight was faster.)
pub const BLOCKS_PER_SM: usize = 64;
/// Blocks per SM of `reduce_moments`. Its per-thread state takes about 64 registers (the
/// CUDA C twin a few more), so only three or four blocks fit on an SM at once, and a
/// grid-stride grid must fit in one wave: a second wave would leave the SMs of the first idle
/// while it runs.
pub const MOMENTS_BLOCKS_PER_SM: usize = 3;
/// Quads (16-byte loads) each thread of `reduce_vec4` issues before it adds any of them. Eight
/// blocks of 256 threads on each SM keep 64 KiB in flight per SM this way, several times what
/// the memory's latency needs; a shorter pass leaves the grid's last threads less to finish.
pub const QUADS_PER_PASS: usize = 2;
/// The same for `reduce_moments`, whose one wave of three or four blocks per SM needs more
/// loads in flight per thread to keep as many bytes in flight.
pub const MOMENTS_QUADS_PER_PASS: usize = 4;
/// The sum kernels finish in two levels (`kernels/src/reduce/mod.rs`): the last block of each
/// group of `FINISH_GROUP` consecutive blocks adds the group's partials, and the last of those
/// adds the groups' totals. Each level is one load per thread (at most `BLOCK`) for a grid of
/// up to `FINISH_GROUP · BLOCK` blocks, where one level over thousands of partials took several
/// loads per thread in sequence.
pub const FINISH_GROUP: usize = 64;

/// Tickets the sum kernels need for a grid of `blocks` blocks: one per group, then one for the
/// groups' totals.
pub const fn finish_tickets(blocks: usize) -> usize {
    // div_ceil is newer than the nightly that builds the kernels.
    (blocks + FINISH_GROUP - 1) / FINISH_GROUP + 1
}

/// Values one block of a grid-stride kernel covers in one pass.
pub const VALUES_PER_PASS: usize = 4 * QUADS_PER_PASS * BLOCK;

/// `reduce_moments` writes each block's moments, and the result, as `MOMENTS_FIELDS` f64 in
/// this order ([`Moments::fields`]). Every field is exact in f64: the counts stay below 2^53
/// (the host checks), and min and max are f32 values.
pub const MOMENTS_FIELDS: usize = 6;
pub const MOMENTS_COUNT: usize = 0;
pub const MOMENTS_NAN: usize = 1;
pub const MOMENTS_MEAN: usize = 2;
pub const MOMENTS_M2: usize = 3;
pub const MOMENTS_MIN: usize = 4;
pub const MOMENTS_MAX: usize = 5;

/// The moments of the values inside a window: how many, how many values were NaN (in no
/// window), the members' mean and M2 (the sum of their squared deviations from the mean), and
/// their minimum and maximum (+∞ and −∞ when there are none). `reduce_moments` merges them
/// over threads, warps and blocks, and the host reads the result's [`Moments::fields`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moments {
    pub count: u64,
    pub nan: u64,
    pub mean: f64,
    pub m2: f64,
    pub min: f32,
    pub max: f32,
}

impl Moments {
    /// The moments of no values, which a merge leaves the other side unchanged by.
    pub const EMPTY: Moments =
        Moments { count: 0, nan: 0, mean: 0.0, m2: 0.0, min: f32::INFINITY, max: f32::NEG_INFINITY };

    /// Chan's merge of two sets' moments: `δ = mean_b − mean_a`, `mean = mean_a + δ·n_b/n`,
    /// `M2 = M2_a + M2_b + δ²·n_a·n_b/n`. An empty side leaves the other unchanged.
    /// `mul_add(a, b, c)` is `a·b + c` rounded once, which `no_std` has no function for: the
    /// GPU passes its `fma`, the host `f64::mul_add`.
    #[inline(always)]
    pub fn merge<F: Fn(f64, f64, f64) -> f64>(self, other: Moments, mul_add: F) -> Moments {
        let count = self.count + other.count;
        let share = if count == 0 { 0.0 } else { other.count as f64 / count as f64 };
        let delta = other.mean - self.mean;
        Moments {
            count,
            nan: self.nan + other.nan,
            mean: mul_add(delta, share, self.mean),
            m2: mul_add(delta * delta, self.count as f64 * share, self.m2 + other.m2),
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }

    /// The fields as `reduce_moments` writes them, each at its `MOMENTS_*` index.
    #[inline(always)]
    pub fn fields(self) -> [f64; MOMENTS_FIELDS] {
        let mut fields = [0.0; MOMENTS_FIELDS];
        fields[MOMENTS_COUNT] = self.count as f64;
        fields[MOMENTS_NAN] = self.nan as f64;
        fields[MOMENTS_MEAN] = self.mean;
        fields[MOMENTS_M2] = self.m2;
        fields[MOMENTS_MIN] = self.min as f64;
        fields[MOMENTS_MAX] = self.max as f64;
        fields
    }

    /// The moments whose [`Moments::fields`] are `f`.
    #[inline(always)]
    pub fn from_fields(f: [f64; MOMENTS_FIELDS]) -> Moments {
        Moments {
            count: f[MOMENTS_COUNT] as u64,
            nan: f[MOMENTS_NAN] as u64,
            mean: f[MOMENTS_MEAN],
            m2: f[MOMENTS_M2],
            min: f[MOMENTS_MIN] as f32,
            max: f[MOMENTS_MAX] as f32,
        }
    }

    /// The standard deviation with ddof 0 (`np.std`), `None` when there are no members. Host
    /// only: the GPU's `no_std` has no square root.
    #[cfg(not(target_os = "cuda"))]
    pub fn std(&self) -> Option<f64> {
        (self.count > 0).then(|| (self.m2 / self.count as f64).sqrt())
    }
}

/// Blocks of a grid-stride kernel over `n` values on `sms` SMs: `per_sm` per SM, or fewer when
/// `n` does not give every block a pass (a small image should not wake a thousand blocks to
/// add nothing).
pub const fn grid_stride_blocks(n: usize, sms: usize, per_sm: usize) -> usize {
    let full = per_sm * sms;
    // div_ceil is newer than the nightly that builds the kernels.
    let needed = n / VALUES_PER_PASS + (n % VALUES_PER_PASS != 0) as usize;
    let blocks = if needed < full { needed } else { full };
    if blocks == 0 {
        1
    } else {
        blocks
    }
}
