//! Host side of `kernels::compact`: stream compaction of f32 values to those inside a
//! [`Window`] (`low < v < high` in f64; NaN in none), stable, in one pass with the scan's
//! look-back and [`Scanner`]'s scratch. The CPU reference filters with the same
//! `Window::contains`, so the result must match exactly, bit for bit, and nothing past the
//! count may be written.

use crate::gpu::{
    refuse, require, require_aligned, require_kernel, require_len, DeviceArray, DeviceVector, Gpu, GpuResult,
    KernelArgs, LaunchConfig, Params,
};
use crate::reduce::check_window;
use crate::scan::{check_scratch, tile_config, Scanner};
use cust::memory::DeviceSlice;
use interface::window::Window;
use ndarray::{Array1, ArrayView1};

/// The compaction kernel.
pub const KERNEL: &str = "compact_window_f32";

/// The arguments of `compact_window_f32`: the values of `input` inside `window`, packed in
/// order at the start of `output`, their number in `count`; `scratch` the zeroed tile counter
/// and states.
///
/// As [`ScanArgs`](crate::scan::ScanArgs), whose look-back the kernel shares, only [`Scanner`]
/// builds them, on its own scratch zeroed before each launch (on other scratch the kernel can
/// wait forever), so code outside this crate cannot:
///
/// ```compile_fail,E0451
/// use cuda_kernels::compact::CompactArgs;
/// use interface::window::Window;
/// use cust::memory::DeviceSlice;
///
/// fn with_own_scratch<'a>(
///     input: &'a DeviceSlice<f32>,
///     output: &'a DeviceSlice<f32>,
///     scratch: &'a DeviceSlice<u64>,
///     count: &'a DeviceSlice<u32>,
/// ) -> CompactArgs<'a> {
///     CompactArgs { input, window: Window::FINITE, output, scratch, count }
/// }
/// ```
pub struct CompactArgs<'a> {
    pub(crate) input: &'a DeviceSlice<f32>,
    pub(crate) window: Window,
    pub(crate) output: &'a DeviceSlice<f32>,
    pub(crate) scratch: &'a DeviceSlice<u64>,
    pub(crate) count: &'a DeviceSlice<u32>,
}

// SAFETY: the kernel reads `input` (not empty, fewer than 2^32 values, 16-byte aligned quads),
// writes kept values to `output` at places below `input.len()` (the kernel skips any other),
// `scratch[..scratch_words(n)]` and `count[0]`; all checked to exist and to overlap nothing
// else. One block of BLOCK threads per tile, and a block whose tile is past the last returns.
// The scratch is a `Scanner`'s, zeroed on the stream before every launch (only this crate
// builds these arguments, and only `Scanner::compact_async` launches them), so the look-back
// ends, as for `ScanArgs`. Any window is safe: NaN bounds keep nothing. The parameters are
// `input: &[f32], low: f64, high: f64, output: *mut f32, scratch: *mut u64, count: *mut u32`.
unsafe impl KernelArgs for CompactArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &[KERNEL], "compaction")?;
        let n = self.input.len();
        if n == 0 || n > u32::MAX as usize {
            return Err(refuse(kernel, format!("compaction takes 1 to 2^32 - 1 values, not {n}")));
        }
        require_len(kernel, "the output", self.output, n)?;
        check_scratch(kernel, (self.input, n), self.output, self.scratch, ("the count", self.count))?;
        require_aligned(kernel, "the input", self.input, 16)?;
        tile_config(kernel, n)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new()
            .slice(self.input)
            .value(self.window.low)
            .value(self.window.high)
            .pointer(self.output)
            .pointer(self.scratch)
            .pointer(self.count)
    }
}

impl Scanner {
    /// Queues the compaction of `input` to the values inside `window`, in order, at the start
    /// of `output` (at least as long as `input`, disjoint from it; `input` 16-byte aligned,
    /// `1 <= input.len() <= capacity()`), on the gpu's stream, without waiting. The count lands
    /// in [`Scanner::count`]; nothing past it in `output` is written.
    ///
    /// # Safety
    /// Queued, not finished, on return: `input`, `output` and the scanner must stay allocated
    /// until the stream has run it (see [`Gpu::launch`]).
    pub unsafe fn compact_async(
        &self,
        gpu: &Gpu,
        input: &DeviceSlice<f32>,
        window: Window,
        output: &DeviceSlice<f32>,
    ) -> GpuResult<()> {
        self.reset(gpu, input.len(), "a compaction")?;
        // SAFETY: the caller keeps the buffers alive until the stream has run the kernel.
        unsafe {
            gpu.launch(KERNEL, &CompactArgs { input, window, output, scratch: &self.scratch, count: &self.count })
        }
    }

    /// [`Scanner::compact_async`], then waits and returns how many values were kept.
    pub fn compact(
        &self,
        gpu: &Gpu,
        input: &DeviceSlice<f32>,
        window: Window,
        output: &DeviceSlice<f32>,
    ) -> GpuResult<usize> {
        // SAFETY: the download below waits for the kernel before `input`, `output` or `self` go.
        unsafe { self.compact_async(gpu, input, window, output) }?;
        Ok(gpu.download("the compaction count", &self.count, 1)?[0] as usize)
    }

    /// The device word the last compaction writes its count to.
    pub fn count(&self) -> &DeviceSlice<u32> {
        &self.count
    }
}

/// The values inside `window`, in order.
pub fn cpu_reference(values: &[f32], window: Window) -> Vec<f32> {
    values.iter().copied().filter(|&v| window.contains(v)).collect()
}

/// An error unless the input has values, fewer than 2^32 (the kernel counts in u32), and the
/// output room for all of them.
fn check_shapes(input: usize, output: usize) -> GpuResult<()> {
    require(input > 0, || "compact: the input is empty".into())?;
    require(u32::try_from(input).is_ok(), || {
        format!("compact: {input} values; the compaction counts fewer than 2^32")
    })?;
    require(output >= input, || {
        format!("compact: the output holds {output} elements, the input {input} needs at least {input}")
    })
}

/// Stream compaction on `gpu`: the values of `input` inside `window` (`low < v < high`, compared
/// in f64; NaN and the infinities lie in no window, [`Window::FINITE`] keeps every finite
/// value), in their order (stable), at the start of `output`; returns how many, `count`. As
/// `input[(input > low) & (input < high)]` in NumPy, and [`cpu_reference`] here, bit for bit.
/// `output[count..]` is left as it was.
///
/// `output` must hold at least as many elements as `input` (any number may be kept); `input`
/// is not empty and holds fewer than 2^32 values; neither window bound is NaN; both arrays
/// live on `gpu`. All checked before anything runs.
///
/// Synchronous: the compaction's scratch (a [`Scanner`], zeroed before the launch) is made for
/// the call and freed at its return, so the function waits for the kernel, and brings the
/// count back with it.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::compact::{compact, cpu_reference};
/// use cuda_kernels::{DeviceArray, Window};
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let mut values = cuda_kernels::data::random_normal(100_003, 3);
/// values[10] = f32::NAN;
/// let input = DeviceArray::from_slice(&gpu, &values)?;
/// let mut output = DeviceArray::zeros(&gpu, values.len())?;
/// let window = Window::new(-0.5, 1.5);
/// let count = compact(&gpu, &input, window, &mut output)?;
/// let expected = cpu_reference(&values, window);
/// assert_eq!(count, expected.len());
/// assert_eq!(output.to_array(&gpu)?.as_slice().unwrap()[..count], expected[..]);
/// # Ok(())
/// # }
/// ```
pub fn compact(
    gpu: &Gpu,
    input: &DeviceVector<f32>,
    window: Window,
    output: &mut DeviceVector<f32>,
) -> GpuResult<usize> {
    check_shapes(input.len(), output.len())?;
    check_window("compact", window)?;
    gpu.bind()?;
    let (source, destination) = (input.slice(gpu)?, output.slice(gpu)?);
    let scanner = Scanner::new(gpu, input.len())?;
    // SAFETY: the arrays record the kernel, and the count's download below waits for it
    // before the scanner goes.
    unsafe { scanner.compact_async(gpu, source, window, destination) }?;
    input.record_use(gpu)?;
    output.record_use(gpu)?;
    gpu.synchronize("the compaction")?;
    Ok(gpu.download("the compaction count", scanner.count(), 1)?[0] as usize)
}

/// The values of `input` inside `window`, in order, computed on `gpu`: copies `input` (any
/// memory layout) to the GPU, runs [`compact`], and copies back the kept values alone. An
/// empty input or a NaN window bound is an error; a window that keeps nothing gives an empty
/// array.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::compact::{compact_array, cpu_reference};
/// use cuda_kernels::Window;
/// use ndarray::array;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let values = array![3.1f32, -7.0, 0.4, f32::NAN, 2.2, 9.9, 5.0, f32::INFINITY];
/// let kept = compact_array(&gpu, values.view(), Window::new(0.0, 5.0))?;
/// assert_eq!(kept, array![3.1f32, 0.4, 2.2], "5 is a bound: outside");
/// assert_eq!(kept.to_vec(), cpu_reference(values.as_slice().unwrap(), Window::new(0.0, 5.0)));
/// assert!(compact_array(&gpu, values.view(), Window::new(10.0, 20.0))?.is_empty());
/// # Ok(())
/// # }
/// ```
pub fn compact_array(gpu: &Gpu, input: ArrayView1<f32>, window: Window) -> GpuResult<Array1<f32>> {
    check_shapes(input.len(), input.len())?;
    check_window("compact", window)?;
    let input = DeviceArray::from_array(gpu, input)?;
    let mut output = DeviceArray::zeros(gpu, input.len())?;
    let count = compact(gpu, &input, window, &mut output)?;
    if count == 0 {
        return Ok(Array1::zeros(0));
    }
    Ok(Array1::from(gpu.download("the kept values", output.slice(gpu)?, count)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::KernelArgs;
    use crate::scan::tests::{check_binding, same_memory, shifted, FakeMemory};
    use interface::scan::scratch_words;

    #[test]
    fn the_compaction_binding_matches_its_ptx_entry_and_refuses_bad_arguments() {
        let mut memory = FakeMemory::new();
        let n = 5000;
        let window = Window::new(-0.25, 0.25);
        let (input, output) = (memory.slice::<f32>(n), memory.slice::<f32>(n));
        let (scratch, count) = (memory.slice::<u64>(scratch_words(n)), memory.slice::<u32>(1));
        let with = |input, output, scratch, count| -> Box<dyn KernelArgs> {
            Box::new(CompactArgs { input, window, output, scratch, count })
        };
        let refused = [
            ("output short", with(input, memory.slice(n - 1), scratch, count)),
            ("output is input", with(input, input, scratch, count)),
            ("scratch short", with(input, output, memory.slice(scratch_words(n) - 1), count)),
            ("no count", with(input, output, scratch, memory.slice(0))),
            ("count inside the output", with(input, output, scratch, same_memory(output))),
            ("empty input", with(memory.slice(0), output, scratch, count)),
            ("input misaligned", with(shifted(memory.slice(n + 1)), output, scratch, count)),
        ];
        check_binding(KERNEL, &*with(input, output, scratch, count), &refused);
    }

    #[test]
    fn reference_keeps_order_and_excludes_bounds_and_nan() {
        let values = [0.1, -0.3, 0.25, f32::NAN, -0.2, 0.0, f32::INFINITY, -0.25];
        assert_eq!(cpu_reference(&values, Window::new(-0.25, 0.25)), vec![0.1, -0.2, 0.0]);
        assert!(cpu_reference(&values, Window::new(0.5, 0.25)).is_empty(), "an empty window keeps nothing");
    }

    #[test]
    fn api_shapes_are_checked() {
        assert!(check_shapes(1, 1).is_ok());
        assert!(check_shapes(5, 6).is_ok(), "a longer output is fine");
        assert!(check_shapes(u32::MAX as usize, u32::MAX as usize).is_ok());
        let message = check_shapes(0, 3).unwrap_err().to_string();
        assert!(message.contains("compact: the input is empty"), "{message}");
        let message = check_shapes(5, 4).unwrap_err().to_string();
        assert!(message.contains("compact: the output holds 4 elements, the input 5 needs at least 5"), "{message}");
        let message = check_shapes(1 << 32, 1 << 32).unwrap_err().to_string();
        assert!(message.contains("compact: 4294967296 values; the compaction counts fewer than 2^32"), "{message}");
    }
}
