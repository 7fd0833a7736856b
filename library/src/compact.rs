//! Host side of `kernels::compact`: stream compaction of f32 values to those inside a
//! [`Window`] (`low < v < high` in f64; NaN in none), stable, in one pass with the scan's
//! look-back and [`Scanner`]'s scratch. The CPU reference filters with the same
//! `Window::contains`, so the result must match exactly, bit for bit, and nothing past the
//! count may be written.

use crate::gpu::{
    refuse, require_aligned, require_kernel, require_len, Gpu, GpuResult, KernelArgs, LaunchConfig, Params,
};
use crate::scan::{check_scratch, tile_config, Scanner};
use cust::memory::DeviceSlice;
use interface::window::Window;

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
    pub fn compact_async(
        &self,
        gpu: &Gpu,
        input: &DeviceSlice<f32>,
        window: Window,
        output: &DeviceSlice<f32>,
    ) -> GpuResult<()> {
        self.reset(gpu, input.len(), "a compaction")?;
        gpu.launch(KERNEL, &CompactArgs { input, window, output, scratch: &self.scratch, count: &self.count })
    }

    /// [`Scanner::compact_async`], then waits and returns how many values were kept.
    pub fn compact(
        &self,
        gpu: &Gpu,
        input: &DeviceSlice<f32>,
        window: Window,
        output: &DeviceSlice<f32>,
    ) -> GpuResult<usize> {
        self.compact_async(gpu, input, window, output)?;
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
}
