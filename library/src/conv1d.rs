//! Host side of `kernels::conv1d`: same-size output, zero padding, 3 to 7 taps in constant
//! memory (the `FILTER` that `conv2d` also uses). The signal is random or read from a `.npy`
//! file (`--signal`); the taps are random (`--filter` of them) or read from a file (`--taps`),
//! since a user's signal filtered with random taps means nothing; `--output` writes the
//! result as `.npy`.
//!
//! Tolerance: as for `conv2d`, `4·taps·ε·max(1, max|x|·max|f|)`.

use crate::gpu::{
    blocks, refuse, require_aligned, require_disjoint, require_len, GpuResult, KernelArgs, LaunchConfig, Params,
};
use cust::memory::DeviceSlice;
use interface::conv::{CONV1D_BLOCK, CONV1D_VEC4_SPAN, MAX_RADIUS};
use ndarray::{s, Array1, ArrayView1, Zip};

crate::variants! {
    pub enum Method {
        /// One output per thread, a block's inputs staged in shared memory.
        Tiled => ("tiled", "conv1d"),
        /// Sixteen outputs per thread, staged with 16-byte loads.
        Vec4 => ("vec4", "conv1d_vec4"),
    }
}

impl Method {
    pub fn config(self, n: usize) -> GpuResult<LaunchConfig> {
        let per_block = match self {
            Method::Tiled => CONV1D_BLOCK,
            Method::Vec4 => CONV1D_VEC4_SPAN,
        };
        Ok(LaunchConfig { grid: (blocks(n, per_block)?, 1, 1), ..LaunchConfig::linear(1, CONV1D_BLOCK as u32)? })
    }
}

/// The arguments of `conv1d` and `conv1d_vec4`: `output` is as long as `input`, and the filter
/// in constant memory is `2·radius + 1` taps long.
pub struct Conv1dArgs<'a> {
    pub input: &'a DeviceSlice<f32>,
    pub output: &'a DeviceSlice<f32>,
    pub radius: usize,
}

// SAFETY: the kernels read `input` and write `output[..input.len()]`, checked to exist and not
// to overlap; their shared tiles hold a block's span plus `2·MAX_RADIUS` halo elements and they
// read `2·radius + 1` taps of `FILTER`, so `radius <= MAX_RADIUS` is checked; `conv1d_vec4`
// loads quads of the input, checked 16-byte aligned. The shape is the block of CONV1D_BLOCK
// threads their indexing assumes. The parameters are `input: &[f32], output: *mut f32, radius: usize`.
unsafe impl KernelArgs for Conv1dArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let method = Method::named(kernel)?;
        let n = self.input.len();
        require_len(kernel, "the output", self.output, n)?;
        require_disjoint(kernel, ("the output", self.output, n), ("the input", self.input, n))?;
        if self.radius > MAX_RADIUS {
            return Err(refuse(kernel, format!("radius {} exceeds {MAX_RADIUS}", self.radius)));
        }
        if method == Method::Vec4 {
            require_aligned(kernel, "the input", self.input, 16)?;
        }
        method.config(n)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.input).pointer(self.output).value(self.radius)
    }
}

pub fn cpu_reference(signal: ArrayView1<f32>, filter: ArrayView1<f32>) -> Array1<f32> {
    let r = filter.len() / 2;
    let mut padded = Array1::<f32>::zeros(signal.len() + 2 * r);
    padded.slice_mut(s![r..r + signal.len()]).assign(&signal);
    let mut out = Array1::<f32>::zeros(signal.len());
    Zip::from(&mut out).and(padded.windows(filter.len())).par_for_each(|o, window| {
        *o = window.iter().zip(filter.iter()).map(|(x, f)| x * f).sum();
    });
    out
}
