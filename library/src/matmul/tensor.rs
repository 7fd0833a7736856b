//! `--dtype tf32|bf16|f16`: the tensor-core steps (`kernels/src/matmul/mma_*.rs`). A and B
//! arrive as f32 and are converted once on the GPU (`convert.rs`) into rows padded to
//! `MMA_ROW_ALIGN` elements; the products accumulate in f32 and write f32. The CPU rounds the
//! same inputs the same way ([`Dtype::round`]) for the reference, which is f64.
//!
//! Tolerance ([`tolerance`]): both sides multiply the same rounded values, and a product of two
//! of them (at most 11 significant bits each) is exact in f32, so the GPU's only error is its
//! f32 accumulation: the same as an f32 SGEMM's, `4·k·ε` (see `super`'s tolerance), doubled
//! because the tensor cores do not round their additions to nearest (they may truncate, an
//! error of up to one unit in the last place where rounding makes half of one). Inputs from
//! files scale it by `max(1, max|a|·max|b|)` as in f32.
//!
//! On a Hopper GPU the TF32 wgmma steps read B transposed: a third conversion
//! (`convert_tf32_transposed`) writes Bᵀ beside the B that mma.sync reads.

use super::hopper::{self, OutputMap, Precision, Step as HopperStep, TensorMap, TensorMaps, WgmmaArgs};
use super::launch::{mma_launch, TensorStep};
use super::rounding::{round_bf16, round_f16, round_tf32};
use crate::gpu::{
    product, refuse, require_aligned, require_disjoint, require_kernel, require_len, Gpu, GpuError, GpuResult,
    KernelArgs, LaunchConfig, Params,
};
use cust::memory::{DeviceBuffer, DeviceCopy, DeviceSlice};
use cust::stream::Stream;
use interface::matmul::{CONVERT_THREADS, MMA_ROW_ALIGN};
use interface::transpose::{WIDE_BLOCK_ROWS, WIDE_TILE};

/// The type the tensor cores read A and B in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dtype {
    /// f32 on the FP32 lanes: the SGEMM ladder.
    #[default]
    F32,
    /// TF32 (f32's exponent, 10 mantissa bits) on the tensor cores.
    Tf32,
    /// bfloat16 (f32's exponent, 7 mantissa bits) on the tensor cores.
    Bf16,
    /// IEEE half (5-bit exponent, 10 mantissa bits) on the tensor cores.
    F16,
}

impl Dtype {
    /// The tensor-core step for this type (none for f32).
    pub fn step(self) -> Option<TensorStep> {
        match self {
            Dtype::F32 => None,
            Dtype::Tf32 => Some(TensorStep::MmaTf32),
            Dtype::Bf16 => Some(TensorStep::MmaBf16),
            Dtype::F16 => Some(TensorStep::MmaF16),
        }
    }

    /// `x` rounded to this type, as the GPU's conversion rounds it, as an f32.
    pub fn round(self, x: f32) -> f32 {
        match self {
            Dtype::F32 => x,
            Dtype::Tf32 => round_tf32(x),
            Dtype::Bf16 => round_bf16(x),
            Dtype::F16 => round_f16(x),
        }
    }
}

/// The reference's tolerance for the tensor-core steps (the module's doc derives it).
pub fn tolerance(k: usize) -> f64 {
    2.0 * super::tolerance(k)
}

/// An element type the tensor-core kernels read, and their kernels that read it.
pub trait TensorInput: DeviceCopy + bytemuck::Pod {
    /// The products that read it…
    const PRODUCTS: &'static [&'static str];
    /// …and the conversions that write it.
    const CONVERSIONS: &'static [&'static str];
    /// Elements each conversion thread writes: f32 one, 16-bit types a pair.
    const PER_THREAD: usize;
}

impl TensorInput for f32 {
    const PRODUCTS: &'static [&'static str] = &["matmul_mma_tf32_128x256"];
    const CONVERSIONS: &'static [&'static str] = &["convert_tf32"];
    const PER_THREAD: usize = 1;
}

/// bf16 and f16 bits.
impl TensorInput for u16 {
    const PRODUCTS: &'static [&'static str] = &["matmul_mma_bf16_128x256", "matmul_mma_f16_128x256"];
    const CONVERSIONS: &'static [&'static str] = &["convert_bf16", "convert_f16"];
    const PER_THREAD: usize = 2;
}

/// `cols` padded to `MMA_ROW_ALIGN`, or an error when that overflows.
fn padded(kernel: &str, cols: usize) -> GpuResult<usize> {
    cols.checked_next_multiple_of(MMA_ROW_ALIGN).ok_or_else(|| refuse(kernel, format!("{cols} columns overflow")))
}

/// The arguments of the conversions: `src` (rows × cols f32) into `dst` (rows × padded cols).
pub struct ConvertArgs<'a, T: TensorInput> {
    /// The f32 matrix, `rows × cols` row-major.
    pub src: &'a DeviceSlice<f32>,
    /// The converted matrix, rows `cols` padded to `MMA_ROW_ALIGN` elements apart.
    pub dst: &'a DeviceSlice<T>,
    /// Rows of the matrix.
    pub rows: usize,
    /// Columns of the matrix.
    pub cols: usize,
}

// SAFETY: the kernels read `src[..rows·cols]` and write `dst[..rows·padded(cols)]`, both
// checked to be that long (products checked for overflow) and not to overlap; a 16-bit `dst`,
// written as 32-bit pairs, is checked 4-byte aligned. Any 1D launch suits their grid-stride
// loop. The parameters are `src: &[f32], dst: *mut {f32,u32}, rows: usize, cols: usize`.
unsafe impl<T: TensorInput> KernelArgs for ConvertArgs<'_, T> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, T::CONVERSIONS, "ConvertArgs")?;
        let (read, written) =
            (product(kernel, self.rows, self.cols)?, product(kernel, self.rows, padded(kernel, self.cols)?)?);
        require_len(kernel, "the source", self.src, read)?;
        require_len(kernel, "the destination", self.dst, written)?;
        require_disjoint(kernel, ("the destination", self.dst, written), ("the source", self.src, read))?;
        require_aligned(kernel, "the destination", self.dst, 4)?;
        convert_launch::<T>(written)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.src).pointer(self.dst).value(self.rows).value(self.cols)
    }
}

/// A conversion's launch: a thread per `T::PER_THREAD` of the `written` elements.
fn convert_launch<T: TensorInput>(written: usize) -> GpuResult<LaunchConfig> {
    LaunchConfig::linear(written / T::PER_THREAD, CONVERT_THREADS as u32)
}

/// The conversion that writes Bᵀ for the TF32 wgmma steps.
pub const CONVERT_TRANSPOSED: &str = "convert_tf32_transposed";

/// The arguments of [`CONVERT_TRANSPOSED`]: `src` (rows × cols f32) into `dst`, its transpose
/// rounded to TF32 (cols × rows, rows `padded(rows)` apart; the padding is left unwritten).
pub struct ConvertTransposedArgs<'a> {
    /// The f32 matrix, `rows × cols` row-major.
    pub src: &'a DeviceSlice<f32>,
    /// Its transpose rounded to TF32, `cols` rows of `padded(rows)` elements.
    pub dst: &'a DeviceSlice<f32>,
    /// Rows of `src`.
    pub rows: usize,
    /// Columns of `src`.
    pub cols: usize,
}

// SAFETY: the kernel reads `src[..rows·cols]` and writes within `dst[..cols·padded(rows)]`, both
// checked that long (products checked for overflow) and disjoint; its launch is
// `convert_transposed_launch`'s, a `WIDE_TILE × WIDE_BLOCK_ROWS` block per `WIDE_TILE` square, as
// its shared tile is sized for. The parameters are `src: &[f32], dst: *mut f32, rows, cols`.
unsafe impl KernelArgs for ConvertTransposedArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &[CONVERT_TRANSPOSED], "ConvertTransposedArgs")?;
        let (read, written) =
            (product(kernel, self.rows, self.cols)?, product(kernel, self.cols, padded(kernel, self.rows)?)?);
        require_len(kernel, "the source", self.src, read)?;
        require_len(kernel, "the destination", self.dst, written)?;
        require_disjoint(kernel, ("the destination", self.dst, written), ("the source", self.src, read))?;
        convert_transposed_launch(self.rows, self.cols)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.src).pointer(self.dst).value(self.rows).value(self.cols)
    }
}

/// The transposing conversion's launch: one block per `WIDE_TILE` square of the source.
fn convert_transposed_launch(rows: usize, cols: usize) -> GpuResult<LaunchConfig> {
    LaunchConfig::tiles_2d(cols, rows, (WIDE_TILE, WIDE_TILE), (WIDE_TILE as u32, WIDE_BLOCK_ROWS as u32), 0)
}

/// Each conversion with its launch for a `rows × cols` matrix.
pub fn conversions(rows: usize, cols: usize) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
    let written = product("convert", rows, padded("convert", cols)?)?;
    let tf32 = f32::CONVERSIONS.iter().map(|&kernel| Ok((kernel, convert_launch::<f32>(written)?)));
    let half = u16::CONVERSIONS.iter().map(|&kernel| Ok((kernel, convert_launch::<u16>(written)?)));
    let transposed = std::iter::once(Ok((CONVERT_TRANSPOSED, convert_transposed_launch(rows, cols)?)));
    tf32.chain(half).chain(transposed).collect()
}

/// An error when an input lies past the range of `dtype` (f16's largest is 65504): it would
/// become infinite on the tensor cores.
pub fn require_in_range(dtype: Dtype, a: &[f32], b: &[f32]) -> GpuResult<()> {
    for (name, values) in [("A", a), ("B", b)] {
        if let Some(i) = values.iter().position(|&x| dtype.round(x).is_infinite()) {
            let reason = format!("{name}[{i}] = {} is beyond the range of {}", values[i], dtype.name());
            return Err(crate::gpu::GpuError::InvalidInput(reason));
        }
    }
    Ok(())
}

/// The arguments of the tensor-core products: `C = A × B` with A m×k and B k×n as the
/// conversions write them (rows padded), C m×n f32.
pub struct MmaArgs<'a, T: TensorInput> {
    /// A, m rows of k elements padded to `MMA_ROW_ALIGN`.
    pub a: &'a DeviceSlice<T>,
    /// B, k rows of n elements padded to `MMA_ROW_ALIGN`.
    pub b: &'a DeviceSlice<T>,
    /// C, m × n row-major f32, written.
    pub c: &'a DeviceSlice<f32>,
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B: the inner dimension.
    pub k: usize,
}

// SAFETY: the kernels read `a[..m·padded(k)]` and `b[..k·padded(n)]` (16-byte pieces, padded
// rows) and write `c[..m·n]` (8-byte pairs); all three are checked that long, A and B 16-byte
// aligned, C 8-byte aligned and overlapping neither. The launch is `mma_launch`'s, the shape
// their indexing and shared memory are written for. The parameters are
// `a: &[T], b: &[T], c: *mut f32, m: usize, n: usize, k: usize`.
unsafe impl<T: TensorInput> KernelArgs for MmaArgs<'_, T> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, T::PRODUCTS, "MmaArgs")?;
        let (m, n, k) = (self.m, self.n, self.k);
        let a_len = product(kernel, m, padded(kernel, k)?)?;
        let b_len = product(kernel, k, padded(kernel, n)?)?;
        let c_len = product(kernel, m, n)?;
        require_len(kernel, "A", self.a, a_len)?;
        require_len(kernel, "B", self.b, b_len)?;
        require_len(kernel, "C", self.c, c_len)?;
        require_disjoint(kernel, ("C", self.c, c_len), ("A", self.a, a_len))?;
        require_disjoint(kernel, ("C", self.c, c_len), ("B", self.b, b_len))?;
        require_aligned(kernel, "A", self.a, 16)?;
        require_aligned(kernel, "B", self.b, 16)?;
        require_aligned(kernel, "C", self.c, 8)?;
        mma_launch(TensorStep::named(kernel)?, m, n)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.a).slice(self.b).pointer(self.c).value(self.m).value(self.n).value(self.k)
    }
}

/// A and B converted on the GPU.
pub enum Converted {
    /// A and B rounded to TF32, and Bᵀ for the Hopper steps when they run.
    Tf32 {
        /// A (m × k), rows padded to `MMA_ROW_ALIGN` elements.
        a: DeviceBuffer<f32>,
        /// B (k × n), rows padded.
        b: DeviceBuffer<f32>,
        /// Bᵀ (n × k), rows padded, when the Hopper steps run.
        bt: Option<DeviceBuffer<f32>>,
    },
    /// A and B as the bits of BF16 or FP16 values, rows padded to `MMA_ROW_ALIGN` elements.
    Half(DeviceBuffer<u16>, DeviceBuffer<u16>),
}

/// `src` (rows × cols f32 on the GPU) converted by `kernel` into a new padded buffer.
///
/// # Safety
/// Queued, not finished, on return: `src` must stay allocated until the stream has run it.
unsafe fn convert_one<T: TensorInput>(
    gpu: &Gpu,
    kernel: &str,
    what: &str,
    src: &DeviceSlice<f32>,
    (rows, cols): (usize, usize),
) -> GpuResult<DeviceBuffer<T>> {
    let dst = gpu.poisoned::<T>(what, product(kernel, rows, padded(kernel, cols)?)?)?;
    // SAFETY: the caller keeps `src` alive until the stream has run the conversion; `dst`, its
    // output, is returned and freed by whoever holds it.
    unsafe { gpu.launch(kernel, &ConvertArgs { src, dst: &dst, rows, cols }) }?;
    Ok(dst)
}

/// A (m×k) and B (k×n), f32 on the GPU, converted to `dtype`, with Bᵀ for TF32 when `hopper`
/// steps will run; `None` for f32.
///
/// # Safety
/// Queued, not finished, on return: `a` and `b` must stay allocated until the stream has run
/// the conversions, and the result until it has run the products launched on it (see
/// [`Gpu::launch`]).
pub unsafe fn convert(
    gpu: &Gpu,
    dtype: Dtype,
    (a, b): (&DeviceSlice<f32>, &DeviceSlice<f32>),
    (m, n, k): (usize, usize, usize),
    hopper: bool,
) -> GpuResult<Option<Converted>> {
    let converted = match dtype {
        Dtype::F32 => return Ok(None),
        Dtype::Tf32 => {
            let bt = if hopper {
                let ld = padded(CONVERT_TRANSPOSED, k)?;
                let len = product(CONVERT_TRANSPOSED, n, ld)?;
                // The conversion writes no padding, and the tensor map reads it as zeros.
                let bt = if ld == k { gpu.poisoned::<f32>("Bᵀ as tf32", len)? } else { gpu.zeroed("Bᵀ as tf32", len)? };
                // SAFETY: the caller keeps `b` alive until the stream has run it.
                unsafe {
                    gpu.launch(CONVERT_TRANSPOSED, &ConvertTransposedArgs { src: b, dst: &bt, rows: k, cols: n })
                }?;
                Some(bt)
            } else {
                None
            };
            // SAFETY: the caller keeps `a` and `b` alive until the stream has run these.
            let (a, b) = unsafe {
                (
                    convert_one(gpu, "convert_tf32", "A as tf32", a, (m, k))?,
                    convert_one(gpu, "convert_tf32", "B as tf32", b, (k, n))?,
                )
            };
            Converted::Tf32 { a, b, bt }
        }
        Dtype::Bf16 | Dtype::F16 => {
            let kernel = if dtype == Dtype::Bf16 { "convert_bf16" } else { "convert_f16" };
            // SAFETY: the caller keeps `a` and `b` alive until the stream has run these.
            unsafe {
                Converted::Half(
                    convert_one(gpu, kernel, "A as 16-bit", a, (m, k))?,
                    convert_one(gpu, kernel, "B as 16-bit", b, (k, n))?,
                )
            }
        }
    };
    gpu.synchronize("the conversion of A and B")?;
    Ok(Some(converted))
}

/// The Hopper steps' operands over converted buffers: each row padded with zeros to
/// `MMA_ROW_ALIGN` elements by its conversion (Bᵀ's zeroed before it), a stride TMA takes and
/// a whole number of box rows; B is Bᵀ for TF32.
fn operands<'a, T: DeviceCopy>(
    precision: Precision,
    (a, b): (&'a DeviceSlice<T>, &'a DeviceSlice<T>),
    (m, n, k): (usize, usize, usize),
) -> hopper::Operands<'a, T> {
    let (_, b_cols) = precision.b_shape(n, k);
    let (lda, ldb) = (interface::matmul::padded(k), interface::matmul::padded(b_cols));
    hopper::Operands { precision, a, lda, b, ldb, m, n, k, zero_padded: true }
}

impl Converted {
    /// A and B as the Hopper kernels read them, for `precision`'s maps and launches.
    fn hopper_inputs(&self, precision: Precision) -> GpuResult<HopperInputs<'_>> {
        match (self, precision) {
            (Converted::Tf32 { a, bt: Some(bt), .. }, Precision::Tf32) => Ok(HopperInputs::Tf32(a, bt)),
            (Converted::Half(a, b), Precision::Bf16 | Precision::F16) => Ok(HopperInputs::Half(a, b)),
            _ => Err(GpuError::InvalidInput(format!("no {} inputs converted for the Hopper steps", precision.name()))),
        }
    }

    /// Encodes the tensor maps of the converted A and B for `precision` into a new buffer.
    pub fn upload_hopper_maps(
        &self,
        precision: Precision,
        dims: (usize, usize, usize),
    ) -> GpuResult<DeviceBuffer<TensorMap>> {
        // SAFETY: `TensorMap` is plain bytes, and `upload` writes both maps before any kernel
        // reads them.
        let mut device = unsafe { DeviceBuffer::<TensorMap>::uninitialized(2) }
            .map_err(|source| GpuError::Cuda { what: "allocating the tensor maps".into(), source })?;
        match self.hopper_inputs(precision)? {
            HopperInputs::Tf32(a, b) => {
                TensorMaps::upload(operands(precision, (a, b), dims), &mut device)?;
            }
            HopperInputs::Half(a, b) => {
                TensorMaps::upload(operands(precision, (a, b), dims), &mut device)?;
            }
        }
        Ok(device)
    }

    /// Launches the Hopper product `kernel` of `precision` on these inputs into `c`, for the
    /// TMA-store step through C's map `out` ([`hopper::output_map`]).
    ///
    /// # Safety
    /// `maps` was written by [`Converted::upload_hopper_maps`] on `self` for `precision` and
    /// `dims`, and neither has changed since.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn launch_hopper(
        &self,
        gpu: &Gpu,
        stream: &Stream,
        kernel: &str,
        (precision, maps, out): (Precision, &DeviceSlice<TensorMap>, Option<&OutputMap>),
        c: &DeviceSlice<f32>,
        dims: (usize, usize, usize),
    ) -> GpuResult<()> {
        let (m, n, k) = dims;
        let blocks = gpu.sms();
        match self.hopper_inputs(precision)? {
            HopperInputs::Tf32(a, b) => {
                // SAFETY: the caller's promise: `maps` holds these operands' maps.
                let maps = unsafe { TensorMaps::assume_uploaded(operands(precision, (a, b), dims), maps) };
                gpu.launch_on(stream, kernel, &WgmmaArgs { maps: &maps, out, c, m, n, k, blocks })
            }
            HopperInputs::Half(a, b) => {
                // SAFETY: as above.
                let maps = unsafe { TensorMaps::assume_uploaded(operands(precision, (a, b), dims), maps) };
                gpu.launch_on(stream, kernel, &WgmmaArgs { maps: &maps, out, c, m, n, k, blocks })
            }
        }
    }

    /// Launches split k (`super::split`) of `precision` on these inputs into `c`: `step`'s
    /// product over `splits` splits of k (none empty) into `partials` (`splits·m·n` floats,
    /// unused for one split), then their sum.
    ///
    /// # Safety
    /// `maps` was written by [`Converted::upload_hopper_maps`] on `self` for `precision` and
    /// `dims`, and neither has changed since. Queued, not finished, on return: these inputs,
    /// `maps`, `partials` and `c` must stay allocated until `stream` has run it (see
    /// [`Gpu::launch`]).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn launch_hopper_split(
        &self,
        gpu: &Gpu,
        stream: &Stream,
        (step, precision, maps): (HopperStep, Precision, &DeviceSlice<TensorMap>),
        (partials, splits): (&DeviceSlice<f32>, usize),
        c: &DeviceSlice<f32>,
        dims: (usize, usize, usize),
    ) -> GpuResult<()> {
        match self.hopper_inputs(precision)? {
            // SAFETY: the caller's promises: `maps` holds these operands' maps, and every
            // buffer lives until the stream has run the launches.
            HopperInputs::Tf32(a, b) => unsafe {
                let maps = TensorMaps::assume_uploaded(operands(precision, (a, b), dims), maps);
                super::split::launch_on(gpu, stream, step, &maps, partials, c, dims, splits)
            },
            // SAFETY: as above.
            HopperInputs::Half(a, b) => unsafe {
                let maps = TensorMaps::assume_uploaded(operands(precision, (a, b), dims), maps);
                super::split::launch_on(gpu, stream, step, &maps, partials, c, dims, splits)
            },
        }
    }

    /// Launches the product `kernel` on these inputs into `c`.
    ///
    /// # Safety
    /// Queued, not finished, on return: `c` and these inputs must stay allocated until `stream`
    /// has run it (see [`Gpu::launch`]).
    pub unsafe fn launch_on(
        &self,
        gpu: &Gpu,
        stream: &Stream,
        kernel: &str,
        c: &DeviceSlice<f32>,
        (m, n, k): (usize, usize, usize),
    ) -> GpuResult<()> {
        match self {
            // SAFETY: the caller keeps `c` and `self` alive until `stream` has run it.
            Converted::Tf32 { a, b, .. } => unsafe { gpu.launch_on(stream, kernel, &MmaArgs { a, b, c, m, n, k }) },
            // SAFETY: as above.
            Converted::Half(a, b) => unsafe { gpu.launch_on(stream, kernel, &MmaArgs { a, b, c, m, n, k }) },
        }
    }
}

/// The converted buffers a Hopper step reads: A and Bᵀ in f32, or A and B in 16 bits.
enum HopperInputs<'a> {
    Tf32(&'a DeviceSlice<f32>, &'a DeviceSlice<f32>),
    Half(&'a DeviceSlice<u16>, &'a DeviceSlice<u16>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_matches_the_conversions_on_known_values() {
        // 1 + 2^-11 is a tie in TF32: away from zero, up in magnitude for either sign.
        assert_eq!(round_tf32(1.0 + 2f32.powi(-11)), 1.0 + 2f32.powi(-10));
        assert_eq!(round_tf32(-(1.0 + 2f32.powi(-11))), -(1.0 + 2f32.powi(-10)));
        assert_eq!(round_tf32(1.0 + 2f32.powi(-12)), 1.0);
        // bf16 ties go to even: 1 + 2^-8 down to 1, 1 + 3·2^-8 up to 1 + 2^-6.
        assert_eq!(round_bf16(1.0 + 2f32.powi(-8)), 1.0);
        assert_eq!(round_bf16(1.0 + 3.0 * 2f32.powi(-8)), 1.0 + 2f32.powi(-6));
        // f16: ties to even, subnormal steps of 2^-24, overflow past 65504.
        assert_eq!(round_f16(1.0 + 2f32.powi(-11)), 1.0);
        assert_eq!(round_f16(1.0 + 3.0 * 2f32.powi(-11)), 1.0 + 2f32.powi(-9));
        assert_eq!(round_f16(3.0 * 2f32.powi(-26)), 2f32.powi(-24));
        assert_eq!(round_f16(2f32.powi(-26)), 0.0);
        assert_eq!(round_f16(65519.0), 65504.0);
        assert_eq!(round_f16(65520.0), f32::INFINITY);
        assert_eq!(round_f16(-0.1), -round_f16(0.1));
    }

    #[test]
    fn inputs_beyond_f16_are_refused_and_others_kept() {
        let (small, large) = ([1.0, -65504.0], [70000.0, 0.5]);
        assert!(require_in_range(Dtype::F16, &small, &small).is_ok());
        let refused = require_in_range(Dtype::F16, &small, &large).unwrap_err().to_string();
        assert!(refused.contains("B[0] = 70000 is beyond the range of f16"), "{refused}");
        assert!(require_in_range(Dtype::Bf16, &large, &large).is_ok());
    }

    #[test]
    fn rounded_values_keep_only_their_types_bits() {
        for i in 0..10_000 {
            let x = (i as f32 - 5000.0) * 0.000_731_9;
            assert_eq!(round_tf32(x).to_bits() & 0x1fff, 0, "{x}");
            assert_eq!(round_bf16(x).to_bits() & 0xffff, 0, "{x}");
            let h = round_f16(x);
            // A half's value is a whole number of 2^-24 below 2^11.
            assert_eq!((h as f64 * 2f64.powi(24)).fract(), 0.0, "{x}");
            assert!((h - x).abs() <= x.abs() * 2f32.powi(-11) + 2f32.powi(-25), "{x} -> {h}");
        }
    }
}

crate::named!(Dtype { F32 => "f32", Tf32 => "tf32", Bf16 => "bf16", F16 => "f16" });
