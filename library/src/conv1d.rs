//! Host side of `kernels::conv1d`: same-size output, zero padding, 3 to 7 taps in constant
//! memory (the `FILTER` that `conv2d` also uses). The signal is random or read from a `.npy`
//! file (`--signal`); the taps are random (`--filter` of them) or read from a file (`--taps`),
//! since a user's signal filtered with random taps means nothing; `--output` writes the
//! result as `.npy`.
//!
//! Tolerance: as for `conv2d`, `4·taps·ε·max(1, max|x|·max|f|)`.

use crate::conv2d::{filter_side_ok, set_filter};
use crate::gpu::{
    blocks, refuse, require, require_aligned, require_disjoint, require_len, DeviceArray, DeviceVector, Gpu, GpuResult,
    KernelArgs, LaunchConfig, Params,
};
use cust::memory::DeviceSlice;
use interface::conv::{CONV1D_BLOCK, CONV1D_VEC4_SPAN, MAX_RADIUS};
use ndarray::{s, Array1, ArrayView1, Zip};

crate::variants! {
    /// The steps of the 1-D filter.
    pub enum Method {
        /// One output per thread, a block's inputs staged in shared memory.
        Tiled => ("tiled", "conv1d"),
        /// Sixteen outputs per thread, staged with 16-byte loads.
        Vec4 => ("vec4", "conv1d_vec4"),
    }
}

impl Method {
    /// The launch of this step over a signal of `n` values: blocks of `CONV1D_BLOCK` threads,
    /// each covering `CONV1D_BLOCK` outputs (`Tiled`) or `CONV1D_VEC4_SPAN` (`Vec4`).
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
    /// The signal.
    pub input: &'a DeviceSlice<f32>,
    /// The filtered signal, at least as long as `input`.
    pub output: &'a DeviceSlice<f32>,
    /// The filter's radius: `(taps - 1) / 2`, at most `MAX_RADIUS`.
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

/// Cross-correlation of `signal` with an odd-length `filter`, zero padding, the output as long
/// as the signal: `out[i] = Σ filter[k] · signal[i + k - r]`, `r = filter.len() / 2`, the
/// definition the kernels implement.
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

/// The step [`conv1d`] takes: [`Method::Vec4`], sixteen outputs per thread staged with 16-byte
/// loads, about twice as fast as [`Method::Tiled`] on long signals; every device array's
/// alignment allows its loads.
pub const DEFAULT_METHOD: Method = Method::Vec4;

/// An error unless `taps` is a filter the kernels take (3, 5 or 7 taps); its radius.
fn taps_radius(taps: usize) -> GpuResult<usize> {
    require(filter_side_ok(taps), || format!("conv1d: the filter has {taps} taps; it must have 3, 5 or 7"))?;
    Ok(taps / 2)
}

/// An error unless the signal has elements and the output is as long.
fn check_lengths(signal: usize, output: usize) -> GpuResult<()> {
    require(signal > 0, || "conv1d: the signal is empty: there is nothing to filter".into())?;
    require(output == signal, || {
        format!("conv1d: the output holds {output} elements, the signal {signal} needs {signal}")
    })
}

/// The one-dimensional cross-correlation of `signal` with `taps`, with zero padding, on `gpu`
/// with the default step ([`DEFAULT_METHOD`]): for `2r + 1` taps, `output[i] = Σ_k taps[k] ·
/// signal[i + k - r]`, a `signal` element outside `0..n` reading as zero (the filter is not
/// flipped, as in deep-learning frameworks and `scipy.ndimage.correlate1d`). `output` has the
/// signal's length. Elements may differ from [`cpu_reference`] by the rounding of the sum,
/// `4·taps·ε·max(1, max|x|·max|f|)`.
///
/// Checked before anything runs: the signal is not empty, the output is as long, the filter
/// has 3, 5 or 7 taps, and both arrays live on `gpu`.
///
/// Asynchronous: the taps are written to the constant memory of `gpu`'s module (a copy that
/// waits for the work already queued on `gpu`, which may read the previous filter), then the
/// kernel is queued on `gpu`'s stream and the function returns without waiting.
/// [`DeviceArray::to_array`] waits for it, and dropping an array waits for the kernel that uses
/// it. Each [`Gpu`] has its own module, so its filter is its own.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::conv1d::{conv1d, cpu_reference};
/// use cuda_kernels::DeviceArray;
/// use ndarray::{array, Array1};
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let signal = Array1::from_shape_fn(1001, |i| ((i * 37) % 101) as f32 / 101.0);
/// let taps = array![0.25f32, 0.5, 0.25];
/// let input = DeviceArray::from_array(&gpu, signal.view())?;
/// let mut output = DeviceArray::zeros(&gpu, signal.len())?;
/// conv1d(&gpu, &input, taps.view(), &mut output)?;
/// let expected = cpu_reference(signal.view(), taps.view());
/// for (gpu_value, cpu_value) in output.to_array(&gpu)?.iter().zip(&expected) {
///     assert!((gpu_value - cpu_value).abs() <= 1e-6);
/// }
/// # Ok(())
/// # }
/// ```
pub fn conv1d(
    gpu: &Gpu,
    signal: &DeviceVector<f32>,
    taps: ArrayView1<f32>,
    output: &mut DeviceVector<f32>,
) -> GpuResult<()> {
    conv1d_with(gpu, signal, taps, output, DEFAULT_METHOD)
}

/// [`conv1d`] with the step `method`.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::conv1d::{conv1d_with, cpu_reference, Method};
/// use cuda_kernels::DeviceArray;
/// use ndarray::{array, Array1};
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let signal = Array1::from_shape_fn(257, |i| (i % 7) as f32 - 3.0);
/// let taps = array![1.0f32, -2.0, 0.0, 2.0, -1.0];
/// let input = DeviceArray::from_array(&gpu, signal.view())?;
/// let mut output = DeviceArray::zeros(&gpu, signal.len())?;
/// for method in Method::ALL.iter().copied() {
///     conv1d_with(&gpu, &input, taps.view(), &mut output, method)?;
///     // Small integers: every sum is exact.
///     assert_eq!(output.to_array(&gpu)?, cpu_reference(signal.view(), taps.view()));
/// }
/// # Ok(())
/// # }
/// ```
pub fn conv1d_with(
    gpu: &Gpu,
    signal: &DeviceVector<f32>,
    taps: ArrayView1<f32>,
    output: &mut DeviceVector<f32>,
    method: Method,
) -> GpuResult<()> {
    check_lengths(signal.len(), output.len())?;
    let radius = taps_radius(taps.len())?;
    gpu.bind()?;
    let args = Conv1dArgs { input: signal.slice(gpu)?, output: output.slice(gpu)?, radius };
    set_filter(gpu, &taps.to_vec())?;
    // SAFETY: the arrays record this launch right after it, so none is freed before it ran.
    unsafe { gpu.launch(method.kernel(), &args) }?;
    signal.record_use(gpu)?;
    output.record_use(gpu)
}

/// The cross-correlation of `signal` with `taps` (3, 5 or 7 of them), with zero padding,
/// computed on `gpu`: copies the signal to the GPU, runs [`conv1d`], and returns the result
/// once the GPU has finished. An empty signal or another number of taps is an error.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::conv1d::{conv1d_array, cpu_reference};
/// use ndarray::array;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let signal = array![1.0f32, 2.0, 3.0, 4.0, 5.0];
/// let taps = array![1.0f32, 0.0, -1.0];
/// let output = conv1d_array(&gpu, signal.view(), taps.view())?;
/// assert_eq!(output, array![-2.0f32, -2.0, -2.0, -2.0, 4.0]);
/// assert_eq!(output, cpu_reference(signal.view(), taps.view()));
/// # Ok(())
/// # }
/// ```
pub fn conv1d_array(gpu: &Gpu, signal: ArrayView1<f32>, taps: ArrayView1<f32>) -> GpuResult<Array1<f32>> {
    check_lengths(signal.len(), signal.len())?;
    taps_radius(taps.len())?;
    let signal = DeviceArray::from_array(gpu, signal)?;
    let mut output = DeviceArray::zeros(gpu, signal.len())?;
    conv1d(gpu, &signal, taps, &mut output)?;
    output.to_array(gpu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn reference_correlates_with_zero_padding() {
        let out = cpu_reference(array![1.0f32, 2.0, 3.0, 4.0, 5.0].view(), array![1.0f32, 0.0, -1.0].view());
        assert_eq!(out, array![-2.0f32, -2.0, -2.0, -2.0, 4.0]);
    }

    #[test]
    fn shapes_are_checked() {
        assert!(check_lengths(1, 1).is_ok());
        assert_eq!((taps_radius(3).unwrap(), taps_radius(5).unwrap(), taps_radius(7).unwrap()), (1, 2, 3));
        let message = check_lengths(10, 9).unwrap_err().to_string();
        assert!(message.contains("conv1d: the output holds 9 elements, the signal 10 needs 10"), "{message}");
        let message = check_lengths(0, 0).unwrap_err().to_string();
        assert!(message.contains("conv1d: the signal is empty"), "{message}");
        for taps in [0, 1, 2, 4, 9] {
            let message = taps_radius(taps).unwrap_err().to_string();
            assert!(message.contains(&format!("conv1d: the filter has {taps} taps; it must have 3, 5 or 7")));
        }
    }
}
