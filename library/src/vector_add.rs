//! Host side of `kernels::vector_add`: one thread per element. The inputs are random or read
//! from `.npy` files (`--a`, `--b`); `--output` writes c as `.npy`.
//!
//! Tolerance: the GPU performs the same single IEEE addition as the CPU, so the result must be
//! bit-identical.

use crate::gpu::{require_aligned, require_disjoint, require_len, GpuResult, KernelArgs, LaunchConfig, Params};
use cust::memory::DeviceSlice;
use interface::vector::QUADS_PER_THREAD;

crate::variants! {
    pub enum Method {
        /// One thread per element.
        Scalar => ("scalar", "vector_add"),
        /// 16-byte loads and stores, several quads per thread.
        Vec4 => ("vec4", "vector_add_vec4"),
    }
}

impl Method {
    pub fn config(self, n: usize, block: u32) -> GpuResult<LaunchConfig> {
        match self {
            Method::Scalar => LaunchConfig::linear(n, block),
            // One more quad slot than whole quads: its thread adds the `n % 4` tail.
            Method::Vec4 => LaunchConfig::linear((n / 4 + 1).div_ceil(QUADS_PER_THREAD), block),
        }
    }
}

pub fn cpu_reference(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// The arguments of `vector_add` and `vector_add_vec4`: `c = a + b` over `a.len()` elements,
/// `block` threads per block.
pub struct AddArgs<'a> {
    pub a: &'a DeviceSlice<f32>,
    pub b: &'a DeviceSlice<f32>,
    pub c: &'a DeviceSlice<f32>,
    pub block: u32,
}

// SAFETY: the kernels touch elements below `a.len()` of a, b and c (b and c are checked to be
// that long), write only c (checked not to overlap a or b), and read quads of all three only in
// `vector_add_vec4` (checked 16-byte aligned); any grid and block is correct for them. The
// parameters are `a: &[f32], b: &[f32], c: *mut f32`.
unsafe impl KernelArgs for AddArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let method = Method::named(kernel)?;
        let n = self.a.len();
        require_len(kernel, "b", self.b, n)?;
        require_len(kernel, "c", self.c, n)?;
        require_disjoint(kernel, ("c", self.c, n), ("a", self.a, n))?;
        require_disjoint(kernel, ("c", self.c, n), ("b", self.b, n))?;
        if method == Method::Vec4 {
            for (what, buffer) in [("a", self.a), ("b", self.b), ("c", self.c)] {
                require_aligned(kernel, what, buffer, 16)?;
            }
        }
        method.config(n, self.block)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.a).slice(self.b).pointer(self.c)
    }
}
