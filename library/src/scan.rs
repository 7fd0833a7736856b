//! Host side of `kernels::scan`: the single-pass exclusive prefix sum of u32 (exact, wrapping
//! modulo 2^32) and f32 values, and [`Scanner`], the API the source-finding pipeline calls
//! (label renumbering scans u32 flags; compaction, `ops/compact.rs`, shares its scratch).
//!
//! Tolerance of the f32 scan against the f64 reference: a value reaches an output through at
//! most 32 rounded additions inside its tile (a quad, the lanes' scan, the warp's rows, the
//! block's warps, the tile's prefix) and 7 for each tile before it (a window of the look-back
//! is a warp sum and an addition; an inclusive prefix one more), and each rounding changes a
//! value's contribution by a factor of at most `1 + ε`. So an output lies within
//! `ε·(32 + 7·tiles)·Σ|x|` of the exact sum, a first-order bound that holds for any order the
//! look-back takes; rounding the reference to f32 adds `ε·max|prefix|`. The bound is loose,
//! which is why the u32 scan, the same code path, is checked exactly.

use crate::gpu::{
    blocks, refuse, require, require_aligned, require_apart, require_kernel, require_len, CudaContext, DeviceArray,
    DeviceVector, Gpu, GpuResult, KernelArgs, LaunchConfig, Params, Span,
};
use cust::memory::{DeviceBuffer, DeviceCopy, DeviceSlice};
use interface::scan::{scratch_words, tiles, BLOCK, TILE};
use ndarray::{Array1, ArrayView1};

/// A value type the scan kernels take: `u32` and `f32`, and no other.
///
/// Sealed: the binding trusts `KERNEL` to scan values of this type's size, so no other crate
/// may implement it.
///
/// ```compile_fail,E0277
/// // A byte scanned by the u32 kernel would read four times past its buffer.
/// #[derive(Clone, Copy, Default)]
/// #[repr(transparent)]
/// struct Byte(u8);
/// unsafe impl bytemuck::Zeroable for Byte {}
/// unsafe impl bytemuck::Pod for Byte {}
/// unsafe impl cust::memory::DeviceCopy for Byte {}
/// impl cuda_kernels::scan::ScanValue for Byte {
///     const KERNEL: &'static str = "scan_exclusive_u32";
/// }
/// ```
pub trait ScanValue: sealed::Sealed + DeviceCopy + bytemuck::Pod + Default {
    /// The kernel that scans it.
    const KERNEL: &'static str;
}

/// Keeps [`ScanValue`] to the types whose kernels exist.
mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for f32 {}
}

impl ScanValue for u32 {
    const KERNEL: &'static str = "scan_exclusive_u32";
}

impl ScanValue for f32 {
    const KERNEL: &'static str = "scan_exclusive_f32";
}

/// One block of [`BLOCK`] threads per tile of [`TILE`] values.
pub fn tile_config(kernel: &str, n: usize) -> GpuResult<LaunchConfig> {
    let grid = blocks(n, TILE).map_err(|e| refuse(kernel, e.to_string()))?;
    Ok(LaunchConfig { grid: (grid, 1, 1), block: (BLOCK as u32, 1, 1), shared_bytes: 0 })
}

/// Checks the scratch (tile counter and states) and the one-value result word of a tile
/// kernel over `n` values read from `input` and written to `output`: long enough, and no two
/// of them, nor any of them and the input, overlapping.
pub(crate) fn check_scratch<I: DeviceCopy, O: DeviceCopy, R: DeviceCopy>(
    kernel: &str,
    (input, n): (&DeviceSlice<I>, usize),
    output: &DeviceSlice<O>,
    scratch: &DeviceSlice<u64>,
    (result_name, result): (&str, &DeviceSlice<R>),
) -> GpuResult<()> {
    let words = scratch_words(n);
    require_len(kernel, "the scratch", scratch, words)?;
    require_len(kernel, result_name, result, 1)?;
    let written =
        [Span::of("the output", output, n), Span::of("the scratch", scratch, words), Span::of(result_name, result, 1)];
    require_apart(kernel, &written, &[Span::of("the input", input, n)])
}

/// The arguments of `scan_exclusive_u32` and `scan_exclusive_f32`: `output` the exclusive sum
/// of `input`, `total` the sum of all, `scratch` the zeroed tile counter and states.
///
/// Only [`Scanner`] builds them, on its own scratch, which it zeroes on the stream before each
/// launch. The look-back needs that, and no check of the arguments can see it: a tile counter
/// left at 1 gives two blocks tiles 1 and 2 of two, and tile 1 waits forever for tile 0's word,
/// a hang. So the fields are private to this crate, and code outside cannot bring its own
/// scratch:
///
/// ```compile_fail,E0451
/// use cuda_kernels::scan::ScanArgs;
/// use cust::memory::DeviceSlice;
///
/// fn with_own_scratch<'a>(
///     input: &'a DeviceSlice<u32>,
///     output: &'a DeviceSlice<u32>,
///     scratch: &'a DeviceSlice<u64>,
///     total: &'a DeviceSlice<u32>,
/// ) -> ScanArgs<'a, u32> {
///     ScanArgs { input, output, scratch, total }
/// }
/// ```
pub struct ScanArgs<'a, T: ScanValue> {
    pub(crate) input: &'a DeviceSlice<T>,
    pub(crate) output: &'a DeviceSlice<T>,
    pub(crate) scratch: &'a DeviceSlice<u64>,
    pub(crate) total: &'a DeviceSlice<T>,
}

// SAFETY: the kernels read `input` (not empty, 16-byte aligned quads), write `output[..n]`
// (checked that long, 16-byte aligned), `scratch[..scratch_words(n)]` and `total[0]`, all
// checked to exist and to overlap nothing else. One block of BLOCK threads per tile. The
// scratch is a `Scanner`'s, zeroed on the stream before every launch (only this crate builds
// these arguments, and only `Scanner::scan` launches them), so every tile number is taken once
// and each tile's look-back ends at tile 0's word; a block whose number is past the last tile
// returns, and the look-back reads only earlier tiles' words, so no access leaves the buffers.
// The parameters are `input: &[T], output: *mut T, scratch: *mut u64, total: *mut T`.
unsafe impl<T: ScanValue> KernelArgs for ScanArgs<'_, T> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &[T::KERNEL], "these scan")?;
        let n = self.input.len();
        if n == 0 {
            return Err(refuse(kernel, "a scan needs at least one value"));
        }
        require_len(kernel, "the output", self.output, n)?;
        check_scratch(kernel, (self.input, n), self.output, self.scratch, ("the total", self.total))?;
        require_aligned(kernel, "the input", self.input, 16)?;
        require_aligned(kernel, "the output", self.output, 16)?;
        tile_config(kernel, n)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.input).pointer(self.output).pointer(self.scratch).pointer(self.total)
    }
}

/// Scratch for scans and compactions of up to `n` values, and the words their results land
/// in. Each call zeroes the scratch it needs on the stream before its kernel (a few words per
/// 4096 values), so calls follow each other on [`Gpu::stream`] with no other reset. The
/// kernels hang on scratch that is not zero ([`ScanArgs`]), so the scratch is private, and a
/// scanner serves only the [`Gpu`] it was made with: calls on two streams could run one's
/// kernel between the other's reset and kernel.
pub struct Scanner {
    n: usize,
    /// The [`Gpu::id`] of the one GPU whose stream every call queues on.
    gpu: u64,
    pub(crate) scratch: DeviceBuffer<u64>,
    total_u32: DeviceBuffer<u32>,
    total_f32: DeviceBuffer<f32>,
    pub(crate) count: DeviceBuffer<u32>,
}

impl Scanner {
    /// Scratch for inputs of up to `n` values (`n >= 1`).
    pub fn new(gpu: &Gpu, n: usize) -> GpuResult<Self> {
        require(n >= 1, || "a scanner needs room for at least one value".into())?;
        tile_config("scan", n)?;
        let words = scratch_words(n);
        gpu.ensure_fits("scan scratch", 8 * words as u64)?;
        let scratch = DeviceBuffer::<u64>::zeroed(words).during("allocating scan scratch")?;
        let total_u32 = DeviceBuffer::<u32>::zeroed(1).during("allocating the scan total")?;
        let total_f32 = DeviceBuffer::<f32>::zeroed(1).during("allocating the scan total")?;
        let count = DeviceBuffer::<u32>::zeroed(1).during("allocating the compaction count")?;
        Ok(Self { n, gpu: gpu.id(), scratch, total_u32, total_f32, count })
    }

    /// The most values one call takes.
    pub fn capacity(&self) -> usize {
        self.n
    }

    /// Zeroes the counter and tile states a call over `n` values uses, on the stream: part of
    /// every call, so timing a call counts it.
    pub fn reset(&self, gpu: &Gpu, n: usize, what: &str) -> GpuResult<()> {
        require(gpu.id() == self.gpu, || format!("{what}: the scanner was made for another Gpu"))?;
        require(n >= 1 && n <= self.n, || format!("{what} of {n} values: the scanner holds 1 to {}", self.n))?;
        gpu.zero("scan scratch", &self.scratch.index(..scratch_words(n)))
    }

    /// # Safety
    /// Queued, not finished, on return: `input`, `output`, `total` and the scanner must stay
    /// allocated until the stream has run the scan (see [`Gpu::launch`]).
    unsafe fn scan<T: ScanValue>(
        &self,
        gpu: &Gpu,
        input: &DeviceSlice<T>,
        output: &DeviceSlice<T>,
        total: &DeviceSlice<T>,
    ) -> GpuResult<()> {
        self.reset(gpu, input.len(), "a scan")?;
        // SAFETY: the caller keeps the buffers alive until the stream has run the scan.
        unsafe { gpu.launch(T::KERNEL, &ScanArgs { input, output, scratch: &self.scratch, total }) }
    }

    /// `output[i] = input[0] + … + input[i-1]`, wrapping modulo 2^32, queued on the gpu's
    /// stream (no synchronization). `input` and `output` are 16-byte aligned (any buffer from
    /// an allocation is), disjoint (no in-place scan), `output` at least as long as `input`,
    /// and `1 <= input.len() <= capacity()`. The sum of all lands in [`Scanner::total_u32`].
    ///
    /// # Safety
    /// Queued, not finished, on return: `input`, `output` and the scanner must stay allocated
    /// until the stream has run the scan (see [`Gpu::launch`]).
    pub unsafe fn exclusive_sum_u32(
        &self,
        gpu: &Gpu,
        input: &DeviceSlice<u32>,
        output: &DeviceSlice<u32>,
    ) -> GpuResult<()> {
        // SAFETY: the caller keeps `input`, `output` and `self` alive until the scan ran.
        unsafe { self.scan(gpu, input, output, &self.total_u32) }
    }

    /// [`Scanner::exclusive_sum_u32`], then waits for it and returns the sum of all the input.
    pub fn exclusive_sum_u32_total(
        &self,
        gpu: &Gpu,
        input: &DeviceSlice<u32>,
        output: &DeviceSlice<u32>,
    ) -> GpuResult<u32> {
        // SAFETY: the download below waits for the scan before `input`, `output` or `self` go.
        unsafe { self.exclusive_sum_u32(gpu, input, output) }?;
        Ok(gpu.download("the scan total", &self.total_u32, 1)?[0])
    }

    /// The device word the last u32 scan writes its total to, for work queued after it.
    pub fn total_u32(&self) -> &DeviceSlice<u32> {
        &self.total_u32
    }

    /// The exclusive sum of f32 values, in f32 (within the tolerance in this module's doc), on
    /// the stream; as [`Scanner::exclusive_sum_u32`] otherwise. The total lands in
    /// [`Scanner::total_f32`].
    ///
    /// # Safety
    /// As for [`Scanner::exclusive_sum_u32`].
    pub unsafe fn exclusive_sum_f32(
        &self,
        gpu: &Gpu,
        input: &DeviceSlice<f32>,
        output: &DeviceSlice<f32>,
    ) -> GpuResult<()> {
        // SAFETY: the caller keeps `input`, `output` and `self` alive until the scan ran.
        unsafe { self.scan(gpu, input, output, &self.total_f32) }
    }

    /// The device word the last f32 scan writes its total to.
    pub fn total_f32(&self) -> &DeviceSlice<f32> {
        &self.total_f32
    }
}

/// The exclusive sum of u32 values, wrapping as the kernel does, and the total.
pub fn cpu_reference_u32(values: &[u32]) -> (Vec<u32>, u32) {
    let mut sum = 0u32;
    let out = values
        .iter()
        .map(|&v| {
            let before = sum;
            sum = sum.wrapping_add(v);
            before
        })
        .collect();
    (out, sum)
}

/// The exclusive sum of f32 values, summed in f64 and rounded to f32, the total, and the f32
/// kernel's tolerance (see the module doc).
pub fn cpu_reference_f32(values: &[f32]) -> (Vec<f32>, f32, f64) {
    let (mut sum, mut magnitude, mut largest) = (0f64, 0f64, 0f64);
    let out = values
        .iter()
        .map(|&v| {
            let before = sum;
            sum += v as f64;
            magnitude += (v as f64).abs();
            largest = largest.max(sum.abs());
            before as f32
        })
        .collect();
    let roundings = 32.0 + 7.0 * tiles(values.len()) as f64;
    let tolerance = f32::EPSILON as f64 * (roundings * magnitude + largest);
    (out, sum as f32, tolerance)
}

pub use crate::data::Input;

/// The scan kernel of `input`'s values.
pub fn kernel(input: Input) -> &'static str {
    match input {
        Input::U32 => u32::KERNEL,
        Input::F32 => f32::KERNEL,
    }
}

/// An error unless the input has values and the output exactly as many. `function` prefixes
/// the message.
fn check_shapes(function: &str, input: usize, output: usize) -> GpuResult<()> {
    require(input > 0, || format!("{function}: the input is empty"))?;
    require(output == input, || {
        format!("{function}: the output holds {output} elements, the input {input} needs {input}")
    })
}

/// The exclusive prefix sum of `input` on `gpu`, into `output`: `output[i] = input[0] + … +
/// input[i-1]` (`output[0]` is 0), as `np.concatenate([[0], np.cumsum(input)[:-1]])`, in one
/// pass (decoupled look-back). Returns the total, the sum of all of `input`.
///
/// - u32: exact, wrapping modulo 2^32 as `wrapping_add` does ([`cpu_reference_u32`]).
/// - f32: added in f32, in an order that depends on the look-back, so within the tolerance
///   that [`cpu_reference_f32`] returns beside its f64 sums rounded to f32 (about
///   `ε·(32 + 7·tiles)·Σ|x|`, as this module's doc derives); the total too. No output depends
///   on a later input: a NaN makes every later output and the total NaN.
///
/// `input` and `output` must have the same length, at least 1 (an empty input is an error, not
/// an empty scan); both live on `gpu`; an in-place scan is ruled out by the borrows.
///
/// Synchronous: the scan's scratch (a [`Scanner`], zeroed before the launch) is made for the
/// call and freed at its return, so the function waits for the kernel, and brings the total
/// back with it.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::scan::{cpu_reference_f32, cpu_reference_u32, exclusive_scan};
/// use cuda_kernels::DeviceArray;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let flags: Vec<u32> = (0..100_003u32).map(|i| (i * 7919 % 3 == 0) as u32).collect();
/// let input = DeviceArray::from_slice(&gpu, &flags)?;
/// let mut places = DeviceArray::zeros(&gpu, flags.len())?;
/// let total = exclusive_scan(&gpu, &input, &mut places)?;
/// let (expected, expected_total) = cpu_reference_u32(&flags);
/// assert_eq!((places.to_array(&gpu)?.to_vec(), total), (expected, expected_total));
///
/// let values = cuda_kernels::data::random_f32(5003, 2);
/// let input = DeviceArray::from_slice(&gpu, &values)?;
/// let mut output = DeviceArray::zeros(&gpu, values.len())?;
/// let total = exclusive_scan(&gpu, &input, &mut output)?;
/// let (expected, expected_total, tolerance) = cpu_reference_f32(&values);
/// for (got, want) in output.to_array(&gpu)?.iter().zip(&expected) {
///     assert!(f64::from((got - want).abs()) <= tolerance, "{got} vs {want}");
/// }
/// assert!(f64::from((total - expected_total).abs()) <= tolerance);
/// # Ok(())
/// # }
/// ```
pub fn exclusive_scan<T: ScanValue>(gpu: &Gpu, input: &DeviceVector<T>, output: &mut DeviceVector<T>) -> GpuResult<T> {
    check_shapes("exclusive_scan", input.len(), output.len())?;
    gpu.bind()?;
    let (source, destination) = (input.slice(gpu)?, output.slice(gpu)?);
    let scanner = Scanner::new(gpu, input.len())?;
    let total = DeviceVector::<T>::zeros(gpu, 1)?;
    // SAFETY: the arrays record the scan, and `to_array` below waits for it before the scanner
    // goes.
    unsafe { scanner.scan(gpu, source, destination, total.slice(gpu)?) }?;
    input.record_use(gpu)?;
    output.record_use(gpu)?;
    total.record_use(gpu)?;
    Ok(total.to_array(gpu)?[0])
}

/// The exclusive prefix sum of `input` and its total, computed on `gpu`: copies `input` (any
/// memory layout) to the GPU, runs [`exclusive_scan`], and returns the output, as long as the
/// input, with the total. An empty input is an error.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::scan::{cpu_reference_u32, exclusive_scan_array};
/// use ndarray::array;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let input = array![3u32, 1, 4, 1, 5, u32::MAX];
/// let (output, total) = exclusive_scan_array(&gpu, input.view())?;
/// assert_eq!(output, array![0u32, 3, 4, 8, 9, 14]);
/// assert_eq!(total, 13, "14 + (2^32 - 1), modulo 2^32");
/// assert_eq!((output.to_vec(), total), cpu_reference_u32(input.as_slice().unwrap()));
/// let (output, total) = exclusive_scan_array(&gpu, array![0.5f32, -2.0, 0.25].view())?;
/// assert_eq!((output, total), (array![0.0f32, 0.5, -1.5], -1.25));
/// # Ok(())
/// # }
/// ```
pub fn exclusive_scan_array<T: ScanValue>(gpu: &Gpu, input: ArrayView1<T>) -> GpuResult<(Array1<T>, T)> {
    check_shapes("exclusive_scan", input.len(), input.len())?;
    let input = DeviceArray::from_array(gpu, input)?;
    let mut output = DeviceArray::zeros(gpu, input.len())?;
    let total = exclusive_scan(gpu, &input, &mut output)?;
    Ok((output.to_array(gpu)?, total))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::gpu::{GpuError, KERNELS_PTX};
    use cust::memory::DevicePointer;

    /// Device slices at made-up addresses, each 1 MiB past the last (so disjoint and 256-byte
    /// aligned), which the checks measure and never dereference: the launch checks of the
    /// bindings that only this crate builds, as `host/tests/launch_checks.rs` runs them for
    /// the others.
    pub(crate) struct FakeMemory(u64);

    impl FakeMemory {
        pub(crate) fn new() -> Self {
            Self(0)
        }

        pub(crate) fn slice<T: DeviceCopy>(&mut self, len: usize) -> &'static DeviceSlice<T> {
            self.0 += 1 << 20;
            view(self.0, len)
        }
    }

    /// `len` elements of `T` at `address`.
    fn view<T: DeviceCopy>(address: u64, len: usize) -> &'static DeviceSlice<T> {
        // SAFETY: only the checks look at it (its address and length); no test launches it.
        Box::leak(Box::new(unsafe { DeviceSlice::from_raw_parts(DevicePointer::from_raw(address), len) }))
    }

    /// The same elements one `T` further on: misaligned for 16-byte accesses.
    pub(crate) fn shifted<T: DeviceCopy>(slice: &DeviceSlice<T>) -> &'static DeviceSlice<T> {
        Box::leak(Box::new(slice.index(1..)))
    }

    /// `buffer`'s memory seen as `U`s: scratch or a result word that overlaps it.
    pub(crate) fn same_memory<T: DeviceCopy, U: DeviceCopy>(buffer: &DeviceSlice<T>) -> &'static DeviceSlice<U> {
        view(buffer.as_device_ptr().as_raw(), buffer.len() * size_of::<T>() / size_of::<U>())
    }

    /// The PTX entry of `kernel`, from its name to the next entry.
    fn ptx_entry(kernel: &str) -> &'static str {
        let start =
            KERNELS_PTX.find(&format!(".entry {kernel}(")).unwrap_or_else(|| panic!("{kernel} is not in the PTX"));
        let rest = &KERNELS_PTX[start..];
        &rest[..rest[1..].find(".entry ").map_or(rest.len(), |end| end + 1)]
    }

    /// The size in bytes of each parameter of the PTX entry `kernel` (all 64- or 32-bit here).
    fn ptx_parameters(kernel: &str) -> Vec<usize> {
        let entry = ptx_entry(kernel);
        let list = &entry[..entry.find(')').expect("a parameter list")];
        let sizes = list.split(',').filter(|p| p.contains(".param")).map(|p| {
            let bits = [64, 32]
                .into_iter()
                .find(|bits| ["u", "s", "b", "f"].iter().any(|t| p.contains(&format!(".{t}{bits} "))));
            bits.unwrap_or_else(|| panic!("{kernel}: a parameter of unknown size: {p}")) / 8
        });
        sizes.collect()
    }

    /// Checks a binding as `launch_checks.rs` does: `valid` is accepted for `kernel` with the
    /// PTX entry's parameter sizes and refused for another family's kernel, every one of
    /// `refused` is refused, and where the entry moves 16 bytes at a time through global
    /// memory a misaligned buffer is among them.
    pub(crate) fn check_binding(kernel: &str, valid: &dyn KernelArgs, refused: &[(&str, Box<dyn KernelArgs>)]) {
        valid.checked_config(kernel).unwrap_or_else(|e| panic!("{kernel}: valid arguments refused: {e}"));
        assert_eq!(valid.params(kernel).sizes(), ptx_parameters(kernel), "{kernel}: binding vs PTX parameters");
        let is_refused = |result: GpuResult<LaunchConfig>, what: &str| match result {
            Err(GpuError::InvalidLaunch { .. }) => {}
            other => panic!("{kernel} with {what}: expected a refused launch, got {other:?}"),
        };
        is_refused(valid.checked_config("transpose_naive"), "its arguments for transpose_naive");
        for (what, args) in refused {
            is_refused(args.checked_config(kernel), what);
        }
        let wide = ptx_entry(kernel).lines().any(|l| {
            let l = l.trim_start();
            (l.starts_with("ld.global") || l.starts_with("st.global")) && l.contains(".v4")
        });
        let misaligned = refused.iter().any(|(what, _)| what.contains("misaligned"));
        assert!(!wide || misaligned, "{kernel} has 16-byte global accesses but no alignment case");
    }

    /// The scan of `T`'s cases: short and overlapping buffers, too little scratch, misalignment.
    fn check_scan<T: ScanValue>() {
        let mut memory = FakeMemory::new();
        let n = 5000;
        let (input, output) = (memory.slice::<T>(n), memory.slice::<T>(n));
        let (scratch, total) = (memory.slice::<u64>(scratch_words(n)), memory.slice::<T>(1));
        let with = |input, output, scratch, total| -> Box<dyn KernelArgs> {
            Box::new(ScanArgs { input, output, scratch, total })
        };
        let refused = [
            ("output short", with(input, memory.slice(n - 1), scratch, total)),
            ("output is input", with(input, input, scratch, total)),
            ("scratch short", with(input, output, memory.slice(scratch_words(n) - 1), total)),
            ("scratch inside the output", with(input, output, same_memory(output), total)),
            ("no total", with(input, output, scratch, memory.slice(0))),
            ("empty input", with(memory.slice(0), output, scratch, total)),
            ("input misaligned", with(shifted(memory.slice(n + 1)), output, scratch, total)),
            ("output misaligned", with(input, shifted(memory.slice(n + 1)), scratch, total)),
        ];
        check_binding(T::KERNEL, &*with(input, output, scratch, total), &refused);
    }

    #[test]
    fn the_scan_binding_matches_its_ptx_entries_and_refuses_bad_arguments() {
        check_scan::<u32>();
        check_scan::<f32>();
    }

    #[test]
    fn u32_reference_is_exclusive_and_wraps() {
        assert_eq!(cpu_reference_u32(&[3, 1, 4]), (vec![0, 3, 4], 8));
        assert_eq!(cpu_reference_u32(&[u32::MAX, 2]), (vec![0, u32::MAX], 1));
    }

    #[test]
    fn f32_reference_sums_in_f64_and_scales_its_tolerance_with_the_magnitudes() {
        let (out, total, tolerance) = cpu_reference_f32(&[1.0, -3.0, 0.5]);
        assert_eq!((out, total), (vec![0.0, 1.0, -2.0], -1.5));
        // One tile, Σ|x| = 4.5, the largest |prefix| is 2.
        assert_eq!(tolerance, f32::EPSILON as f64 * (39.0 * 4.5 + 2.0));
    }

    #[test]
    fn api_shapes_are_checked() {
        assert!(check_shapes("exclusive_scan", 1, 1).is_ok());
        assert!(check_shapes("exclusive_scan", 8193, 8193).is_ok());
        let message = check_shapes("exclusive_scan", 0, 0).unwrap_err().to_string();
        assert!(message.contains("exclusive_scan: the input is empty"), "{message}");
        let message = check_shapes("exclusive_scan", 5, 4).unwrap_err().to_string();
        assert!(message.contains("exclusive_scan: the output holds 4 elements, the input 5 needs 5"), "{message}");
        let message = check_shapes("exclusive_scan", 5, 6).unwrap_err().to_string();
        assert!(message.contains("the output holds 6 elements, the input 5 needs 5"), "{message}");
    }
}
