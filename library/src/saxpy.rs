//! Host side of `kernels::saxpy`: a grid-stride loop over a grid sized to the GPU, not to the
//! data.
//!
//! Tolerance: the GPU may fuse the multiply-add (one rounding instead of two). With x and y in
//! [-1, 1) and a = 2.5, |a·x| + |y| <= 3.5, so the two differ by at most one rounding of that
//! size: 3.5·ε.

use crate::gpu::{require_aligned, require_disjoint, require_len, GpuResult, KernelArgs, LaunchConfig, Params};
use cust::memory::DeviceSlice;

pub const A: f32 = 2.5;
/// Blocks per SM when the grid is left to the host: with 256 threads, a full SM.
pub const BLOCKS_PER_SM: u32 = 8;

crate::variants! {
    pub enum Method {
        /// One element per pass of the loop.
        Gridstride => ("gridstride", "saxpy"),
        /// Four elements per pass, with 16-byte loads and stores.
        Vec4 => ("vec4", "saxpy_vec4"),
    }
}

pub fn cpu_reference(a: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter().zip(y).map(|(x, y)| a * x + y).collect()
}

/// The arguments of `saxpy` and `saxpy_vec4`: `y = a·x + y` over `x.len()` elements, by a
/// one-dimensional grid of `grid` blocks of `block` threads (any sizes: the loop is grid-stride).
pub struct SaxpyArgs<'a> {
    pub a: f32,
    pub x: &'a DeviceSlice<f32>,
    pub y: &'a DeviceSlice<f32>,
    pub grid: u32,
    pub block: u32,
}

// SAFETY: the kernels read `x[..n]` and read and write `y[..n]`, n = x.len(), with y checked to
// be that long and not to overlap x; `saxpy_vec4` moves quads of both, checked 16-byte aligned.
// A grid-stride loop is correct on any one-dimensional grid (with a second dimension, two
// threads would share an index and race on `y`), which is the only shape built here. The
// parameters are `a: f32, x: &[f32], y: *mut f32`.
unsafe impl KernelArgs for SaxpyArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let method = Method::named(kernel)?;
        let n = self.x.len();
        require_len(kernel, "y", self.y, n)?;
        require_disjoint(kernel, ("y", self.y, n), ("x", self.x, n))?;
        if method == Method::Vec4 {
            require_aligned(kernel, "x", self.x, 16)?;
            require_aligned(kernel, "y", self.y, 16)?;
        }
        LaunchConfig::grid_stride(0, 0, self.block, self.grid)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().value(self.a).slice(self.x).pointer(self.y)
    }
}
