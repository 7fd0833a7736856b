//! Step H4 on the host, FP8 (`kernels/src/matmul/wgmma_fp8.rs`): `C = A × B` with A and B held
//! in e4m3 (4 exponent bits, 4 significant bits, ±448, no infinities), each with a per-tensor
//! scale, products accumulated in f32 by Hopper's tensor cores, C in f32.
//!
//! An f32 matrix becomes an [`E4m3Matrix`] on the GPU ([`E4m3Matrix::from_f32`]): its largest
//! finite magnitude (`convert_fp8_amax`, read back) fixes `scale = amax / 448`, and every
//! element is multiplied by `1 / scale` and rounded (`convert_e4m3`; for B,
//! `convert_e4m3_transposed`, since FP8's wgmma reads B only as Bᵀ, contiguous along k). Rows
//! are padded with zeros to 16 bytes, the stride TMA requires, so any m, n, k ≥ 1 works. [`gemm_e4m3`]
//! multiplies two of them and applies both scales in the epilogue; [`E4m3Product`] holds two
//! with their tensor maps, for launches timed one after another (`host matmul --dtype fp8`).
//! Where C has few tiles and k is long, both split k ([`super::split::fp8_splits_for`]): the
//! persistent grid is that many layers deep, each scaling its run of k's partial product into
//! a workspace, which `matmul_split_reduce` sums into C in a fixed order.
//!
//! The CPU rounds as the GPU does ([`e4m3_bits`]: to nearest, ties to even, saturated at
//! ±448, NaN kept), written on the values rather than on the bits, so that the two are checked
//! against each other ([`run`] compares every byte).
//!
//! **Tolerance** ([`tolerance`]). A product of two e4m3 values (4 significant bits each) is
//! exact in f32, but Hopper's FP8 wgmma does not accumulate in full f32: the products of one
//! instruction (32 of k) are added to the accumulator keeping about 14 significant bits
//! (DeepSeek-V3's report measured this; it is why FP8 recipes promote partial sums every few
//! instructions). The bound allows `2^-13` of the magnitude `Σ|a·b|` per instruction, `k / 32`
//! of them, on top of the f32 tolerance of the other tensor-core steps; the reference is f64
//! on the values as rounded (dequantized: the e4m3 value times its scale). On an H100 the
//! errors equal cuBLASLt's with `use_fast_accum` (which also accumulates in the tensor cores);
//! its default promotes partial sums to f32 and is about 10 times more accurate (issue 32).

use super::hopper::{self, checked_launch, encode, launch_config, Outcome, Step, TensorMap};
use super::split;
use crate::gpu::{
    product, refuse, require_aligned, require_disjoint, require_kernel, require_len, Cache, Gpu, GpuError, GpuResult,
    KernelArgs, LaunchConfig, Params,
};
use cust::memory::{CopyDestination, DeviceBuffer, DeviceSlice};
use cust::stream::Stream;
use interface::wgmma::{fp8_padded, BK_FP8, BM, BOX_N, E4M3_MAX, FP8_CONVERT_THREADS, FP8_ROW_ALIGN, FP8_TILE};
use rayon::prelude::*;

/// The product.
pub const GEMM: &str = "matmul_wgmma_e4m3";
/// The largest finite magnitude of a tensor.
pub const AMAX: &str = "convert_fp8_amax";
/// The rounding of a matrix as it lies (A).
pub const CONVERT: &str = "convert_e4m3";
/// The rounding of a matrix into its transpose (B into Bᵀ).
pub const CONVERT_TRANSPOSED: &str = "convert_e4m3_transposed";
/// Every FP8 kernel (all in the Hopper module).
pub const KERNELS: [&str; 4] = [GEMM, AMAX, CONVERT, CONVERT_TRANSPOSED];

/// `CU_TENSOR_MAP_DATA_TYPE_UINT8`: TMA moves e4m3 as bytes.
const TENSOR_MAP_BYTES: u32 = 0;
/// Blocks per SM of the grid-stride conversions, at most.
const BLOCKS_PER_SM: u32 = 8;

/// `x` as e4m3 bits, as `cvt.rn.satfinite.e4m3x2.f32` rounds: to the nearest multiple of the
/// quantum of `x`'s binade (`2^(e − 3)` for `|x|` in `[2^e, 2^(e+1))`, `e ≥ −6`; `2^−9` for the
/// subnormals below `2^−6`), ties to even, magnitudes past 448 (infinities too) saturated to
/// 448, NaN as NaN (`0x7f`, with its sign).
pub fn e4m3_bits(x: f32) -> u8 {
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    if x.is_nan() {
        return sign | 0x7f;
    }
    let magnitude = x.abs();
    if magnitude >= E4M3_MAX as f32 {
        return sign | 0x7e;
    }
    // The binade's exponent from the f32 bits (f32 subnormals fall below -6 like all of theirs).
    let exponent = (((magnitude.to_bits() >> 23) & 0xff) as i32 - 127).max(-6);
    let quantum = 2f64.powi(exponent - 3);
    // A multiple of the quantum, at most 448 (the next multiple up from 448's binade is 480,
    // which ties to 448 below it); exact in f64.
    let rounded = (magnitude as f64 / quantum).round_ties_even() * quantum;
    if rounded < 2f64.powi(-6) {
        return sign | (rounded / 2f64.powi(-9)) as u8;
    }
    let binade = ((rounded.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let mantissa = (rounded / 2f64.powi(binade - 3)) as u8 - 8;
    sign | (((binade + 7) as u8) << 3) | mantissa
}

/// The value of the e4m3 bits `bits`: `(−1)^s · 2^(e − 7) · (1 + m/8)`, or `2^−6 · m/8` where
/// the exponent field is 0; `0x7f` and `0xff` are NaN.
pub fn e4m3_value(bits: u8) -> f32 {
    let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
    let (exponent, mantissa) = (((bits >> 3) & 0xf) as i32, (bits & 7) as f32);
    match exponent {
        15 if bits & 7 == 7 => f32::NAN,
        0 => sign * mantissa * 2f32.powi(-9),
        _ => sign * (8.0 + mantissa) * 2f32.powi(exponent - 10),
    }
}

/// The per-tensor scale of a tensor whose largest finite magnitude is `amax`: `amax / 448`
/// (its largest element then becomes 448), 1 for an all-zero tensor, never below the smallest
/// normal f32 (so that `1 / scale` stays finite). An infinite element is refused: no scale
/// keeps it.
pub fn scale_for(what: &str, amax: f32) -> GpuResult<f32> {
    if !amax.is_finite() {
        return Err(GpuError::InvalidInput(format!("{what} holds an infinite value, which FP8 cannot scale")));
    }
    Ok(if amax == 0.0 { 1.0 } else { (amax / E4M3_MAX as f32).max(f32::MIN_POSITIVE) })
}

/// `values` rounded to e4m3 after division by `scale` (multiplication by `1 / scale` in f32,
/// as the GPU does), one byte each.
pub fn quantize(values: &[f32], scale: f32) -> Vec<u8> {
    let inverse = 1.0 / scale;
    values.iter().map(|&x| e4m3_bits(x * inverse)).collect()
}

/// How an [`E4m3Matrix`] holds its f32 source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// As it lies: the left operand A (m × k), rows of k.
    AsIs,
    /// Transposed: the right operand B (k × n) held as Bᵀ, rows of k, as FP8 wgmma reads it.
    Transposed,
}

/// A matrix in e4m3 on the GPU: `rows` rows of `cols` bytes, each row padded with zeros to
/// [`FP8_ROW_ALIGN`] bytes, and the scale its values are multiplied by.
pub struct E4m3Matrix {
    data: DeviceBuffer<u8>,
    rows: usize,
    cols: usize,
    scale: f32,
}

impl std::fmt::Debug for E4m3Matrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "E4m3Matrix({}×{}, scale {})", self.rows, self.cols, self.scale)
    }
}

impl E4m3Matrix {
    /// The `rows × cols` f32 matrix `src` (row-major) scaled and rounded on the GPU, as it lies
    /// or transposed (`layout`): as `Transposed`, the result has `cols` rows of `rows`.
    /// Finished on return (the scale is read back). Needs the Hopper module (sm_90).
    pub fn from_f32(
        gpu: &Gpu,
        src: &DeviceSlice<f32>,
        (rows, cols): (usize, usize),
        layout: Layout,
    ) -> GpuResult<Self> {
        let kernel = match layout {
            Layout::AsIs => CONVERT,
            Layout::Transposed => CONVERT_TRANSPOSED,
        };
        if rows == 0 || cols == 0 {
            return Err(refuse(kernel, format!("a {rows}×{cols} matrix: both dimensions must be at least 1")));
        }
        let len = product(kernel, rows, cols)?;
        require_len(kernel, "the source", src, len)?;
        let amax = gpu.upload("the largest magnitude", &[0u32])?;
        // SAFETY: both buffers live until the synchronous read-back below, which waits for it.
        unsafe { gpu.launch(AMAX, &AmaxArgs { src, amax: &amax, len })? };
        let [bits] = gpu.download("the largest magnitude", &amax, 1)?[..] else {
            return Err(GpuError::InvalidInput("the largest magnitude was not read back".into()));
        };
        let scale = scale_for("the matrix", f32::from_bits(bits))?;
        let (out_rows, out_cols) = if layout == Layout::AsIs { (rows, cols) } else { (cols, rows) };
        let data = gpu.poisoned::<u8>("the e4m3 matrix", product(kernel, out_rows, fp8_padded(out_cols))?)?;
        let args = E4m3Args { src, dst: &data, rows, cols, inverse: 1.0 / scale };
        // SAFETY: `src` and `data` live until the synchronization that follows.
        unsafe { gpu.launch(kernel, &args)? };
        gpu.synchronize(kernel)?;
        Ok(Self { data, rows: out_rows, cols: out_cols, scale })
    }

    /// e4m3 bits already rounded on the host (`rows × cols`, row-major, unpadded) with their
    /// scale, copied to the GPU into padded rows.
    pub fn from_bits(gpu: &Gpu, bits: &[u8], (rows, cols): (usize, usize), scale: f32) -> GpuResult<Self> {
        if rows == 0 || cols == 0 || bits.len() != rows.saturating_mul(cols) {
            let reason = format!("{} e4m3 values for a {rows}×{cols} matrix (at least 1×1)", bits.len());
            return Err(GpuError::InvalidInput(reason));
        }
        if !scale.is_finite() || scale <= 0.0 {
            return Err(GpuError::InvalidInput(format!("the scale {scale} is not a finite positive number")));
        }
        let ld = fp8_padded(cols);
        let mut padded = vec![0u8; rows * ld];
        for (row, values) in padded.chunks_mut(ld).zip(bits.chunks(cols)) {
            row[..cols].copy_from_slice(values);
        }
        Ok(Self { data: gpu.upload("the e4m3 matrix", &padded)?, rows, cols, scale })
    }

    /// Rows of the matrix as held (for a transposed B, its n).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns of the matrix as held (k, for both operands).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The row stride, in bytes: `cols` padded to 16.
    pub fn ld(&self) -> usize {
        fp8_padded(self.cols)
    }

    /// The scale the e4m3 values are multiplied by.
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// The padded rows on the GPU.
    pub fn data(&self) -> &DeviceSlice<u8> {
        &self.data
    }

    /// The e4m3 bits, copied back: `rows × cols` row-major, the padding left out.
    pub fn to_bits(&self, gpu: &Gpu) -> GpuResult<Vec<u8>> {
        let padded = gpu.download("the e4m3 matrix", &self.data, self.rows * self.ld())?;
        Ok(padded.chunks(self.ld()).flat_map(|row| row[..self.cols].iter().copied()).collect())
    }
}

/// `C = A × B` on the GPU in FP8: `a` is A (m × k, [`Layout::AsIs`]), `b` is B held as Bᵀ
/// (n × k, [`Layout::Transposed`]), `c` receives C (m × n f32, row-major), scaled by both
/// matrices' scales. Finished on return. Needs sm_90 (Hopper): on another GPU, an error
/// saying so.
pub fn gemm_e4m3(gpu: &Gpu, a: &E4m3Matrix, b: &E4m3Matrix, c: &DeviceSlice<f32>) -> GpuResult<()> {
    let operands = operands(a, b)?;
    let mut device = maps_buffer()?;
    let maps = Fp8Maps::upload(operands, &mut device)?;
    let split = Split::new(gpu, (operands.m, operands.n, operands.k))?;
    // SAFETY: the matrices, the maps, the workspace and C live until the synchronization that
    // follows.
    unsafe { split.launch_on(gpu, gpu.stream(), &maps, (a.scale, b.scale), c)? };
    gpu.synchronize(GEMM)
}

/// How a product splits k on this GPU ([`super::split::fp8_splits_for`]), and the workspace
/// of its partial products when it does.
struct Split {
    splits: usize,
    partials: Option<DeviceBuffer<f32>>,
}

impl Split {
    fn new(gpu: &Gpu, (m, n, k): (usize, usize, usize)) -> GpuResult<Self> {
        let splits = split::fp8_splits_for((m, n, k), gpu.sms() as usize);
        let partials = if splits > 1 { Some(split::workspace(gpu, (m, n), splits)?) } else { None };
        Ok(Self { splits, partials })
    }

    /// Queues `C = A × B` on `stream` into `c`: straight into it, or over the splits into the
    /// workspace and then their sum.
    ///
    /// # Safety
    /// Queued, not finished, on return: the buffers behind `maps`, the workspace and `c` must
    /// stay allocated until `stream` has run it (see [`Gpu::launch`]).
    unsafe fn launch_on(
        &self,
        gpu: &Gpu,
        stream: &Stream,
        maps: &Fp8Maps,
        (scale_a, scale_b): (f32, f32),
        c: &DeviceSlice<f32>,
    ) -> GpuResult<()> {
        let (m, n, k) = (maps.operands.m, maps.operands.n, maps.operands.k);
        let blocks = split::layer_blocks(gpu.sms(), self.splits);
        let args = |c, splits| Fp8Args { maps, c, m, n, k, scale_a, scale_b, blocks, splits };
        match &self.partials {
            // SAFETY: the caller keeps every buffer until `stream` has run it.
            None => unsafe { gpu.launch_on(stream, GEMM, &args(c, 1)) },
            // SAFETY: as above; the product is queued on `stream`.
            Some(partials) => unsafe {
                split::layers_then_sum(gpu, stream, (partials, c), (m, n), self.splits, || {
                    gpu.launch_on(stream, GEMM, &args(partials, self.splits))
                })
            },
        }
    }
}

/// A and B in e4m3 with their tensor maps encoded on the GPU once, for a product launched many
/// times, as a benchmark times it ([`gemm_e4m3`] encodes and copies the maps on every call, and
/// waits for the product).
pub struct E4m3Product {
    a: E4m3Matrix,
    b: E4m3Matrix,
    maps: DeviceBuffer<TensorMap>,
    split: Split,
}

impl E4m3Product {
    /// The product of `a`, A (m × k, [`Layout::AsIs`]), and `b`, B held as Bᵀ (n × k,
    /// [`Layout::Transposed`]) on `gpu`, with the workspace of its splits of k where it splits:
    /// refused unless both have k columns, and where TMA cannot take them (a dimension of 2^32
    /// or more).
    pub fn new(gpu: &Gpu, a: E4m3Matrix, b: E4m3Matrix) -> GpuResult<Self> {
        let mut maps = maps_buffer()?;
        let operands = operands(&a, &b)?;
        Fp8Maps::upload(operands, &mut maps)?;
        let split = Split::new(gpu, (operands.m, operands.n, operands.k))?;
        Ok(Self { a, b, maps, split })
    }

    /// The splits of k it runs in (1: none).
    pub fn splits(&self) -> usize {
        self.split.splits
    }

    /// A.
    pub fn a(&self) -> &E4m3Matrix {
        &self.a
    }

    /// B, held as Bᵀ.
    pub fn b(&self) -> &E4m3Matrix {
        &self.b
    }

    /// Queues `C = A × B` on `stream`: `c` receives C (m × n f32, row-major), scaled by both
    /// matrices' scales. Needs sm_90 (Hopper): on another GPU, an error saying so.
    ///
    /// # Safety
    /// Queued, not finished, on return: `self` and `c` must stay allocated until `stream` has
    /// run it (see [`Gpu::launch`]).
    pub unsafe fn launch_on(&self, gpu: &Gpu, stream: &Stream, c: &DeviceSlice<f32>) -> GpuResult<()> {
        let operands = operands(&self.a, &self.b)?;
        // SAFETY: `new` encoded `maps` for these operands, whose buffers `self` owns and never
        // reallocates or rewrites.
        let maps = unsafe { Fp8Maps::assume_uploaded(operands, &self.maps) };
        // SAFETY: the caller keeps `self` (the matrices, their maps and the workspace) and `c`
        // until `stream` has run it.
        unsafe { self.split.launch_on(gpu, stream, &maps, (self.a.scale, self.b.scale), c) }
    }
}

/// The operands of `a × b`, `b` being B held as Bᵀ; refused unless both have k columns.
fn operands<'a>(a: &'a E4m3Matrix, b: &'a E4m3Matrix) -> GpuResult<Fp8Operands<'a>> {
    let (m, n, k) = (a.rows, b.rows, a.cols);
    if b.cols != k {
        let reason = format!("A is {m}×{k} but Bᵀ is {}×{}: both need k columns", b.rows, b.cols);
        return Err(refuse(GEMM, reason));
    }
    Ok(Fp8Operands { a: &a.data, lda: a.ld(), b: &b.data, ldb: b.ld(), m, n, k })
}

/// Room on the GPU for a product's two tensor maps, which [`Fp8Maps::upload`] fills.
fn maps_buffer() -> GpuResult<DeviceBuffer<TensorMap>> {
    // SAFETY: `TensorMap` is plain bytes, and `upload` writes both maps before a kernel reads them.
    unsafe { DeviceBuffer::<TensorMap>::uninitialized(2) }
        .map_err(|source| GpuError::Cuda { what: "allocating the tensor maps".into(), source })
}

/// The arguments of [`AMAX`]: the largest finite magnitude of `src[..len]` into `amax[0]`, as
/// f32 bits (`amax` must hold 0, or bits to start from).
pub struct AmaxArgs<'a> {
    /// The values.
    pub src: &'a DeviceSlice<f32>,
    /// One u32, raised to the largest magnitude's bits.
    pub amax: &'a DeviceSlice<u32>,
    /// Values to read: at least 1.
    pub len: usize,
}

// SAFETY: the kernel reads `src[..len]` and updates `amax[0]` (an atomic on a u32, aligned as any
// u32 slice is), both checked present; blocks of `FP8_CONVERT_THREADS` (whole warps, as its
// warp reduction needs) on any 1D grid, which its grid-stride loop covers. The parameters are
// `src: &[f32], amax: *mut u32, len: usize`.
unsafe impl KernelArgs for AmaxArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &[AMAX], "AmaxArgs")?;
        if self.len == 0 {
            return Err(refuse(kernel, "no values"));
        }
        require_len(kernel, "the values", self.src, self.len)?;
        require_len(kernel, "the largest magnitude", self.amax, 1)?;
        require_disjoint(kernel, ("the largest magnitude", self.amax, 1), ("the values", self.src, self.len))?;
        grid_stride(self.len)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.src).pointer(self.amax).value(self.len)
    }
}

/// Blocks of `FP8_CONVERT_THREADS` over `items`, at most `BLOCKS_PER_SM` for each of an H100's
/// 132 SMs: a grid-stride loop takes the rest.
fn grid_stride(items: usize) -> GpuResult<LaunchConfig> {
    let most = BLOCKS_PER_SM * 132;
    let blocks = crate::gpu::blocks(items, FP8_CONVERT_THREADS)?.min(most);
    Ok(LaunchConfig { grid: (blocks, 1, 1), block: (FP8_CONVERT_THREADS as u32, 1, 1), shared_bytes: 0 })
}

/// The launch of a conversion of a `rows × cols` matrix into `written` bytes: a grid-stride
/// loop over its 4-byte words, or for the transposed conversion a block per `FP8_TILE` square.
fn convert_config(transposed: bool, (rows, cols): (usize, usize), written: usize) -> GpuResult<LaunchConfig> {
    if transposed {
        LaunchConfig::tiles_2d(cols, rows, (FP8_TILE, FP8_TILE), (FP8_CONVERT_THREADS as u32, 1), 0)
    } else {
        grid_stride(written / 4)
    }
}

/// Each kernel and its launch for a product of an `m × k` A and a `k × n` B on a GPU of `sms`
/// SMs (what `host info --kernels` reports): A's largest magnitude and conversion, B's
/// transposed conversion, the product.
pub fn launch_configs(m: usize, n: usize, k: usize, sms: u32) -> GpuResult<[(&'static str, LaunchConfig); 4]> {
    Ok([
        (AMAX, grid_stride(product(AMAX, m, k)?)?),
        (CONVERT, convert_config(false, (m, k), product(CONVERT, m, fp8_padded(k))?)?),
        (CONVERT_TRANSPOSED, convert_config(true, (k, n), product(CONVERT_TRANSPOSED, n, fp8_padded(k))?)?),
        (GEMM, launch_config(Step::Persistent, m, n, sms)?),
    ])
}

/// The arguments of [`CONVERT`] and [`CONVERT_TRANSPOSED`]: `src` (`rows × cols` f32) times
/// `inverse`, rounded to e4m3 into `dst`, rows padded to 16 bytes: `rows` of them, or for the
/// transposed conversion `cols` rows of `rows`.
pub struct E4m3Args<'a> {
    /// The f32 matrix, `rows × cols` row-major.
    pub src: &'a DeviceSlice<f32>,
    /// The e4m3 matrix, written a 4-byte word at a time.
    pub dst: &'a DeviceSlice<u8>,
    /// Rows of `src`.
    pub rows: usize,
    /// Columns of `src`.
    pub cols: usize,
    /// `1 / scale`: what every element is multiplied by before rounding.
    pub inverse: f32,
}

// SAFETY: the kernels read `src[..rows·cols]` and write `dst`'s padded rows (`rows ·
// fp8_padded(cols)` bytes, or `cols · fp8_padded(rows)` transposed), both checked that long
// (products checked for overflow) and not to overlap, `dst` 4-byte aligned for its word stores.
// The launch is the one each kernel's indexing assumes: a grid-stride 1D grid, or one block of
// `FP8_CONVERT_THREADS` per `FP8_TILE` square. The parameters are `src: &[f32], dst: *mut u32,
// rows: usize, cols: usize, inverse: f32`.
unsafe impl KernelArgs for E4m3Args<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &[CONVERT, CONVERT_TRANSPOSED], "E4m3Args")?;
        let (rows, cols) = (self.rows, self.cols);
        let transposed = kernel == CONVERT_TRANSPOSED;
        let (out_rows, out_cols) = if transposed { (cols, rows) } else { (rows, cols) };
        let padded = out_cols
            .checked_next_multiple_of(FP8_ROW_ALIGN)
            .ok_or_else(|| refuse(kernel, format!("{out_cols} columns overflow")))?;
        let (read, written) = (product(kernel, rows, cols)?, product(kernel, out_rows, padded)?);
        require_len(kernel, "the source", self.src, read)?;
        require_len(kernel, "the destination", self.dst, written)?;
        require_aligned(kernel, "the destination", self.dst, 4)?;
        require_disjoint(kernel, ("the destination", self.dst, written), ("the source", self.src, read))?;
        convert_config(transposed, (rows, cols), written)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.src).pointer(self.dst).value(self.rows).value(self.cols).value(self.inverse)
    }
}

/// A and Bᵀ as the product reads them: bytes, A `m` rows and Bᵀ `n` rows of `k` e4m3 values,
/// `lda` and `ldb` bytes apart.
#[derive(Clone, Copy)]
pub struct Fp8Operands<'a> {
    /// A, m rows of `lda` bytes, the first k of each used.
    pub a: &'a DeviceSlice<u8>,
    /// A's row stride, in bytes.
    pub lda: usize,
    /// Bᵀ, n rows of `ldb` bytes, the first k of each used.
    pub b: &'a DeviceSlice<u8>,
    /// Bᵀ's row stride, in bytes.
    pub ldb: usize,
    /// Rows of A and C.
    pub m: usize,
    /// Rows of Bᵀ, columns of C.
    pub n: usize,
    /// The inner dimension.
    pub k: usize,
}

impl Fp8Operands<'_> {
    /// Bytes of A and of Bᵀ the product may read: to the end of the last row.
    fn spans(&self) -> GpuResult<(usize, usize)> {
        let a = product(GEMM, self.m - 1, self.lda)?.checked_add(self.k);
        let b = product(GEMM, self.n - 1, self.ldb)?.checked_add(self.k);
        a.zip(b).ok_or_else(|| refuse(GEMM, "the matrices' extents overflow"))
    }

    /// What TMA needs: dimensions of at least 1 below 2^32, strides that cover k and are
    /// multiples of 16 bytes, buffers that long, 16-byte aligned.
    fn check(&self, kernel: &str) -> GpuResult<(usize, usize)> {
        let (m, n, k) = (self.m, self.n, self.k);
        if m == 0 || n == 0 || k == 0 {
            return Err(refuse(kernel, format!("{m}×{n}×{k}: every dimension must be at least 1")));
        }
        if [m, n, k].iter().any(|&d| d >= 1 << 32) {
            return Err(refuse(kernel, "a dimension of 2^32 or more does not fit a tensor map"));
        }
        for (what, ld) in [("A", self.lda), ("Bᵀ", self.ldb)] {
            if ld < k || !ld.is_multiple_of(FP8_ROW_ALIGN) {
                let reason =
                    format!("{what}'s row stride {ld} must cover its {k} columns and be a multiple of 16 bytes");
                return Err(refuse(kernel, reason));
            }
        }
        let (a_len, b_len) = self.spans()?;
        require_len(kernel, "A", self.a, a_len)?;
        require_len(kernel, "Bᵀ", self.b, b_len)?;
        require_aligned(kernel, "A", self.a, 16)?;
        require_aligned(kernel, "Bᵀ", self.b, 16)?;
        Ok((a_len, b_len))
    }
}

/// The two tensor maps of some [`Fp8Operands`], in device memory where the product reads them.
pub struct Fp8Maps<'a> {
    operands: Fp8Operands<'a>,
    device: &'a DeviceSlice<TensorMap>,
}

impl<'a> Fp8Maps<'a> {
    /// Encodes the maps of `operands` (A in boxes of `BM` rows by `BK_FP8` bytes, Bᵀ in boxes
    /// of `BOX_N` rows by `BK_FP8`) and copies them into `device`.
    pub fn upload(operands: Fp8Operands<'a>, device: &'a mut DeviceBuffer<TensorMap>) -> GpuResult<Self> {
        operands.check(GEMM)?;
        require_len(GEMM, "the tensor maps' buffer", device, 2)?;
        let Fp8Operands { a, lda, b, ldb, m, n, k } = operands;
        let element = (TENSOR_MAP_BYTES, 1);
        let maps = [
            encode(element, a.as_device_ptr().as_raw(), m, k, lda, [BK_FP8 as u32, BM as u32])?,
            encode(element, b.as_device_ptr().as_raw(), n, k, ldb, [BK_FP8 as u32, BOX_N as u32])?,
        ];
        device
            .index(..2)
            .copy_from(&maps[..])
            .map_err(|source| GpuError::Cuda { what: "copying the tensor maps to the GPU".into(), source })?;
        Ok(Self { operands, device })
    }

    /// Maps said to be in `device` without encoding them: for the launch checks, which refuse
    /// their launches before any kernel runs.
    ///
    /// # Safety
    /// `device` holds the tensor maps [`Fp8Maps::upload`] would write for `operands`.
    pub unsafe fn assume_uploaded(operands: Fp8Operands<'a>, device: &'a DeviceSlice<TensorMap>) -> Self {
        Self { operands, device }
    }
}

/// The arguments of [`GEMM`]: the maps of A and Bᵀ, C, the dimensions and the two scales.
pub struct Fp8Args<'a> {
    /// The tensor maps of A and Bᵀ, in device memory, and the operands they describe.
    pub maps: &'a Fp8Maps<'a>,
    /// C, m × n row-major f32, written.
    pub c: &'a DeviceSlice<f32>,
    /// Rows of A and C; must equal the maps'.
    pub m: usize,
    /// Columns of C (rows of Bᵀ); must equal the maps'.
    pub n: usize,
    /// The inner dimension; must equal the maps'.
    pub k: usize,
    /// A's scale: finite.
    pub scale_a: f32,
    /// B's scale: finite.
    pub scale_b: f32,
    /// Blocks of each layer of the persistent grid, at most: one per SM over all layers (fewer
    /// run where C has fewer tiles).
    pub blocks: u32,
    /// Layers of the grid, each scaling its run of k's slices (`⌈k / BK_FP8⌉`, none left empty)
    /// into its own `m × n` of `c`: split k, whose partial products `matmul_split_reduce`
    /// sums. With 1, `c` is C.
    pub splits: usize,
}

// SAFETY: the maps describe A and Bᵀ (`Fp8Maps` is built by encoding them, or by an unsafe
// promise that it was), which `Fp8Operands::check` verified long enough for the dimensions
// (checked equal to these), 16-byte aligned, with strides TMA takes. C holds `splits·m·n`
// floats, overlaps neither matrix, and starts 16-byte aligned wherever the epilogue stores
// four floats at once (`n` a multiple of 4). `splits` is checked to leave no split of k's
// slices empty. The maps' buffer holds two, 64-byte aligned. The launch is the persistent
// steps' grid of at least one block across, `splits` deep, as the kernel's `# Safety` asks.
// The parameters are `maps, c: *mut f32, m, n, k: usize, scale_a, scale_b: f32`.
unsafe impl KernelArgs for Fp8Args<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &[GEMM], "Fp8Args")?;
        let (m, n, k) = (self.m, self.n, self.k);
        let operands = &self.maps.operands;
        if (m, n, k) != (operands.m, operands.n, operands.k) {
            let reason =
                format!("{m}×{n}×{k} does not match the tensor maps' {}×{}×{}", operands.m, operands.n, operands.k);
            return Err(refuse(kernel, reason));
        }
        if !self.scale_a.is_finite() || !self.scale_b.is_finite() {
            return Err(refuse(kernel, format!("the scales {} and {} must be finite", self.scale_a, self.scale_b)));
        }
        let (a_len, b_len) = operands.check(kernel)?;
        split::require_even_splits(kernel, k.div_ceil(BK_FP8), self.splits)?;
        let c_len = product(kernel, self.splits, product(kernel, m, n)?)?;
        require_len(kernel, "C", self.c, c_len)?;
        if n.is_multiple_of(4) {
            require_aligned(kernel, "C", self.c, 16)?;
        }
        require_disjoint(kernel, ("C", self.c, c_len), ("A", operands.a, a_len))?;
        require_disjoint(kernel, ("C", self.c, c_len), ("Bᵀ", operands.b, b_len))?;
        require_len(kernel, "the tensor maps' buffer", self.maps.device, 2)?;
        require_aligned(kernel, "the tensor maps", self.maps.device, 64)?;
        split::layered(kernel, checked_launch(kernel, Step::Persistent, (m, n), self.blocks)?, self.splits)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new()
            .pointer(self.maps.device)
            .pointer(self.c)
            .value(self.m)
            .value(self.n)
            .value(self.k)
            .value(self.scale_a)
            .value(self.scale_b)
    }
}

/// The tolerance of an element whose terms sum to `magnitude` in absolute value (the values
/// dequantized): `2^-13` of it per instruction of 32 of k (the tensor cores' FP8 accumulation,
/// the module's doc says why), plus the f32 tolerance of the other tensor-core steps.
pub fn tolerance(k: usize, magnitude: f64) -> f64 {
    let instructions = k.div_ceil(32) as f64;
    instructions * 2f64.powi(-13) * magnitude + hopper::tolerance(k, magnitude)
}

/// What [`run`] measured: the product's outcome (errors against the f64 reference and its
/// timing), the scales, and how many converted bytes differ from the CPU's rounding.
pub struct Fp8Outcome {
    /// The product's errors and time.
    pub product: Outcome,
    /// A's and B's scales, as the GPU chose them.
    pub scales: (f32, f32),
    /// Bytes of A and Bᵀ the GPU rounded otherwise than [`quantize`] (NaN bits of either sign
    /// count as equal): 0 passes.
    pub conversion_mismatches: usize,
}

/// The FP8 tests' and benchmark's run: random A (m × k) and B (k × n) in [-1, 1), scaled and
/// rounded on the GPU, the bytes compared with the CPU's rounding, `C = A × B` checked against
/// the f64 product of the dequantized values on [`hopper::checked_rows`], then timed over
/// `launches` launches (the product alone, its inputs already in e4m3).
pub fn run(
    gpu: &Gpu,
    (m, n, k): (usize, usize, usize),
    seed: u64,
    launches: usize,
    cache: Cache,
) -> GpuResult<Fp8Outcome> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut random = |len: usize| -> Vec<f32> { (0..len).map(|_| rng.random_range(-1.0..1.0)).collect() };
    let (a, b) = (random(product(GEMM, m, k)?), random(product(GEMM, k, n)?));
    let qa = E4m3Matrix::from_f32(gpu, &*gpu.upload("A", &a)?, (m, k), Layout::AsIs)?;
    let qb = E4m3Matrix::from_f32(gpu, &*gpu.upload("B", &b)?, (k, n), Layout::Transposed)?;
    let (a_bits, bt_bits) = (qa.to_bits(gpu)?, qb.to_bits(gpu)?);
    let bt: Vec<f32> = (0..n * k).map(|e| b[e % k * n + e / k]).collect();
    let same = |x: u8, y: u8| x == y || (x & 0x7f == 0x7f && y & 0x7f == 0x7f);
    let mismatches = |gpu: &[u8], values: &[f32], scale: f32| {
        gpu.iter().zip(quantize(values, scale)).filter(|&(&x, y)| !same(x, y)).count()
    };
    let conversion_mismatches = mismatches(&a_bits, &a, qa.scale) + mismatches(&bt_bits, &bt, qb.scale);
    let c = gpu.poisoned::<f32>("C", product(GEMM, m, n)?)?;
    gemm_e4m3(gpu, &qa, &qb, &c)?;
    let result = gpu.download("C", &c, m * n)?;
    // The e4m3 values (exact in f32) of A and of B (k × n); the scales apply to the f64 sums.
    let a_values: Vec<f32> = a_bits.iter().map(|&q| e4m3_value(q)).collect();
    let b_values: Vec<f32> = (0..k * n).map(|e| e4m3_value(bt_bits[e % n * k + e / n])).collect();
    let scale = qa.scale as f64 * qb.scale as f64;
    let rows = hopper::checked_rows(m, n, k);
    let (worst, sum, max_error) = rows
        .par_iter()
        .map(|&i| {
            let (expected, magnitude) = hopper::reference_row(&a_values, &b_values, n, k, i);
            (0..n).fold((0.0f64, 0.0f64, 0.0f64), |(worst, sum, max), j| {
                let error = (result[i * n + j] as f64 - scale * expected[j]).abs();
                // A NaN (an element never written) fails the check as an infinite error.
                let error = if error.is_nan() { f64::INFINITY } else { error };
                (worst.max(error / tolerance(k, scale * magnitude[j])), sum + error, max.max(error))
            })
        })
        .reduce(|| (0.0, 0.0, 0.0), |x, y| (x.0.max(y.0), x.1 + y.1, x.2.max(y.2)));
    let scales = (qa.scale, qb.scale);
    let timed = E4m3Product::new(gpu, qa, qb)?;
    // SAFETY: every buffer lives until `time` has synchronized its last launch.
    let timing = gpu.time(launches, cache, || Ok(()), || unsafe { timed.launch_on(gpu, gpu.stream(), &c) })?;
    let mean_error = sum / (rows.len() * n) as f64;
    Ok(Fp8Outcome { product: Outcome { worst, mean_error, max_error, timing }, scales, conversion_mismatches })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_e4m3_value_rounds_to_itself() {
        for bits in 0..=u8::MAX {
            let x = e4m3_value(bits);
            if x.is_nan() {
                assert_eq!(bits & 0x7f, 0x7f, "{bits:#04x}");
                assert_eq!(e4m3_bits(x) & 0x7f, 0x7f);
            } else if bits != 0x80 {
                assert_eq!(e4m3_bits(x), bits, "{bits:#04x} = {x}");
            }
        }
        // -0 keeps its sign.
        assert_eq!(e4m3_bits(-0.0), 0x80);
    }

    #[test]
    fn rounding_is_to_nearest_even_and_saturates() {
        // Between 1 (0x38) and 1.125 (0x39): below, at and above the midpoint.
        assert_eq!(e4m3_bits(1.06), 0x38);
        assert_eq!(e4m3_bits(1.0625), 0x38);
        assert_eq!(e4m3_bits(1.07), 0x39);
        // 1.1875 is midway between 1.125 (odd mantissa) and 1.25 (even): up.
        assert_eq!(e4m3_bits(1.1875), 0x3a);
        // Subnormals are multiples of 2^-9; half of the smallest ties to 0, more rounds up.
        assert_eq!(e4m3_bits(2f32.powi(-10)), 0);
        assert_eq!(e4m3_bits(1.5 * 2f32.powi(-10)), 1);
        assert_eq!(e4m3_bits(3.0 * 2f32.powi(-10)), 2);
        // The largest subnormal, 7·2^-9, rounds up into the smallest normal, 2^-6 (0x08).
        assert_eq!(e4m3_bits(7.5 * 2f32.powi(-9)), 0x08);
        // 448 is the largest; 464 (midway to the 480 that does not exist) ties to it, and
        // everything larger, infinity too, saturates.
        assert_eq!(e4m3_bits(448.0), 0x7e);
        assert_eq!(e4m3_bits(464.0), 0x7e);
        assert_eq!(e4m3_bits(-1e30), 0xfe);
        assert_eq!(e4m3_bits(f32::INFINITY), 0x7e);
        assert_eq!(e4m3_bits(f32::NEG_INFINITY), 0xfe);
        // 432 and 448 are neighbours (0x7d, 0x7e): 440 ties to the even 448.
        assert_eq!(e4m3_bits(440.0), 0x7e);
        assert_eq!(e4m3_bits(-0.3), 0x80 | e4m3_bits(0.3));
    }

    /// Every f32 in a dense sweep of e4m3's range lands on the nearest e4m3 value, the even one
    /// on a tie: the rounding checked against the values it chooses between.
    #[test]
    fn rounding_picks_the_nearest_value() {
        let finite: Vec<f32> = (0..=0x7eu8).map(e4m3_value).collect();
        let mut x = 2f32.powi(-12);
        while x < 470.0 {
            let got = e4m3_value(e4m3_bits(x));
            let nearest = finite.iter().map(|&v| (v - x).abs()).fold(f32::INFINITY, f32::min);
            let error = (got - x).abs();
            assert!(x > 448.0 && got == 448.0 || error == nearest, "{x}: {got}, nearest at {nearest}");
            x *= 1.0 + 1.0 / 1024.0;
        }
    }

    #[test]
    fn scales_map_the_largest_magnitude_to_448() {
        let scale = scale_for("A", 3.5).unwrap();
        assert_eq!(quantize(&[3.5, -3.5, 0.0], scale), vec![0x7e, 0xfe, 0]);
        assert_eq!(scale_for("A", 0.0).unwrap(), 1.0);
        assert!(scale_for("A", f32::INFINITY).unwrap_err().to_string().contains("infinite"));
        assert_eq!(scale_for("A", 1e-40).unwrap(), f32::MIN_POSITIVE);
    }

    #[test]
    fn the_bindings_refuse_other_kernels_and_empty_inputs() {
        // Made-up addresses: the checks measure them and refuse before any launch.
        // SAFETY: never dereferenced; every launch below is only checked.
        let slice = |len: usize| unsafe {
            DeviceSlice::<f32>::from_raw_parts(cust::memory::DevicePointer::from_raw(1 << 20), len)
        };
        // SAFETY: as above.
        let amax = unsafe { DeviceSlice::<u32>::from_raw_parts(cust::memory::DevicePointer::from_raw(1 << 30), 1) };
        let args = AmaxArgs { src: &slice(100), amax: &amax, len: 100 };
        args.checked_config(AMAX).expect("valid arguments");
        assert!(args.checked_config(CONVERT).is_err());
        assert!(AmaxArgs { len: 0, ..args }.checked_config(AMAX).is_err());
        assert!(AmaxArgs { len: 101, ..args }.checked_config(AMAX).is_err());
    }
}
