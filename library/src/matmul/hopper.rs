//! Host side of the Hopper matrix products (`kernels/src/matmul/wgmma.rs`): `C = A × B` with A
//! (m×k) and B (k×n) row-major in BF16 or FP16, C (m×n) in f32. For TF32 the kernels read B
//! transposed (Bᵀ, n×k, f32 values rounded to TF32): its wgmma takes B contiguous along k only.
//!
//! The kernels read A and B through TMA, so the host describes each matrix in a *tensor map*
//! (`cuTensorMapEncodeTiled`, looked up in the driver: cust's bindings predate it): its
//! address, dimensions, row stride, the box one copy moves and the shared-memory swizzle. The
//! two maps go to the GPU in a small buffer whose address the kernel takes.
//!
//! TMA needs every row stride to be a multiple of 16 bytes: 8 elements of 16 bits, 4 of 32.
//! It also copies a box slowly when the box lies partly past the end of a row, as the last
//! slice of k does when k is not a multiple of a box row's 128 bytes (and, for 16-bit B, the
//! last tile's columns when n is not). So the maps of operands whose rows are padded with zeros
//! ([`Operands::zero_padded`]) reach to the padded end of each row: the zeros add nothing to the
//! product, and a box row of 128 bytes lies wholly inside a padded row or wholly past it.
//! [`with_args`] copies a matrix whose rows are not a whole number of 128 bytes into one padded
//! that way (`cuMemcpy2D` into zeros); the conversions of `tensor.rs` write that layout directly.

use crate::gpu::{
    driver_result, product, refuse, require_aligned, require_kernel, require_len, Gpu, GpuError, GpuResult, KernelArgs,
    LaunchConfig, Params,
};
use cust::memory::{DeviceBuffer, DeviceCopy, DeviceSlice};
use interface::wgmma::{
    BK, BK_TF32, BM, BN, BOX_N, MEDIUM_BN, MEDIUM_SHARED_BYTES, NARROW_BN, NARROW_SHARED_BYTES, SHARED_BYTES, SMALL_BN,
    SMALL_SHARED_BYTES, STORE_BOX_COLS, STORE_BOX_ROWS, THREADS, TMA_STORE_SHARED_BYTES,
};
use rayon::prelude::*;
use std::ffi::c_void;

/// The input type of a Hopper matrix product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// f32 values rounded to TF32, B given transposed.
    Tf32,
    /// bfloat16 values (8 exponent bits, 8 significant), as u16 bits.
    Bf16,
    /// IEEE half-precision values (5 exponent bits, 11 significant), as u16 bits.
    F16,
}

/// The steps on Hopper's instructions, each adding one idea (`kernels/src/matmul/wgmma*.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// wgmma fed by TMA through an mbarrier ring; one block per tile.
    Pipelined,
    /// One block per SM looping over tiles in an L2-friendly order.
    Persistent,
    /// The persistent grid on tiles half as wide (128×128): twice the tiles, for products
    /// whose wide tiles would leave SMs idle.
    Narrow,
    /// The persistent grid on tiles a quarter as wide (128×64), for products too small to keep
    /// the SMs busy even on narrow tiles.
    Small,
    /// The persistent grid on tiles three quarters as wide (128×192), for products whose waves
    /// of wide and of narrow tiles both end part full.
    Medium,
    /// The persistent grid on wide tiles whose epilogue TMA stores, so that writing one tile
    /// overlaps the products of the next; C through its own tensor map ([`OutputMap`]), whose
    /// rows must be 16-byte aligned (`n` a multiple of 4).
    TmaStore,
}

impl Step {
    /// Every step, in ladder order.
    pub const ALL: [Step; 6] =
        [Step::Pipelined, Step::Persistent, Step::Narrow, Step::Small, Step::Medium, Step::TmaStore];

    /// The steps that write C with ordinary stores: the ones whose grid may be layers deep, each
    /// layer a split of k writing its own partial product (`super::split`). The TMA-store step
    /// writes C through its tensor map, one layer.
    pub const LAYERED: [Step; 5] = [Step::Pipelined, Step::Persistent, Step::Narrow, Step::Small, Step::Medium];

    /// The kernel of this step for `precision`, e.g. `matmul_wgmma_persistent_bf16`.
    pub fn kernel(self, precision: Precision) -> &'static str {
        match (self, precision) {
            (Step::Pipelined, Precision::Tf32) => "matmul_wgmma_tf32",
            (Step::Pipelined, Precision::Bf16) => "matmul_wgmma_bf16",
            (Step::Pipelined, Precision::F16) => "matmul_wgmma_f16",
            (Step::Persistent, Precision::Tf32) => "matmul_wgmma_persistent_tf32",
            (Step::Persistent, Precision::Bf16) => "matmul_wgmma_persistent_bf16",
            (Step::Persistent, Precision::F16) => "matmul_wgmma_persistent_f16",
            (Step::Narrow, Precision::Tf32) => "matmul_wgmma_narrow_tf32",
            (Step::Narrow, Precision::Bf16) => "matmul_wgmma_narrow_bf16",
            (Step::Narrow, Precision::F16) => "matmul_wgmma_narrow_f16",
            (Step::Small, Precision::Tf32) => "matmul_wgmma_small_tf32",
            (Step::Small, Precision::Bf16) => "matmul_wgmma_small_bf16",
            (Step::Small, Precision::F16) => "matmul_wgmma_small_f16",
            (Step::Medium, Precision::Tf32) => "matmul_wgmma_medium_tf32",
            (Step::Medium, Precision::Bf16) => "matmul_wgmma_medium_bf16",
            (Step::Medium, Precision::F16) => "matmul_wgmma_medium_f16",
            (Step::TmaStore, Precision::Tf32) => "matmul_wgmma_tma_store_tf32",
            (Step::TmaStore, Precision::Bf16) => "matmul_wgmma_tma_store_bf16",
            (Step::TmaStore, Precision::F16) => "matmul_wgmma_tma_store_f16",
        }
    }

    /// Columns of C in one of this step's tiles (rows: `BM`).
    pub fn tile_n(self) -> usize {
        match self {
            Step::Pipelined | Step::Persistent | Step::TmaStore => BN,
            Step::Narrow => NARROW_BN,
            Step::Small => SMALL_BN,
            Step::Medium => MEDIUM_BN,
        }
    }

    /// Dynamic shared memory of one of this step's blocks: its ring and epilogue staging.
    ///
    /// ```
    /// use cuda_kernels::matmul::hopper::Step;
    ///
    /// // Every ring, with its barriers and staging, fits in an SM's 227 KiB.
    /// assert!(Step::ALL.iter().all(|step| step.shared_bytes() <= 227 * 1024));
    /// // Medium tiles: five stages of 40 KiB.
    /// assert!(Step::Medium.shared_bytes() > 5 * 40 * 1024);
    /// ```
    pub fn shared_bytes(self) -> usize {
        match self {
            Step::Pipelined | Step::Persistent => SHARED_BYTES,
            Step::Narrow => NARROW_SHARED_BYTES,
            Step::Small => SMALL_SHARED_BYTES,
            Step::Medium => MEDIUM_SHARED_BYTES,
            Step::TmaStore => TMA_STORE_SHARED_BYTES,
        }
    }
}

/// The persistent step [`super::gemm`] runs an `m × n × k` product of `precision` with on a GPU
/// of `sms` SMs: the tile width whose speed, weighted by the share of the SMs its waves keep
/// busy, is highest.
///
/// Where they fill their waves, a tile does the same work at a speed relative to a wide one's
/// that its width sets ([`relative_speed`]), whether C's rows are 16-byte aligned or stored
/// through the staged epilogue. So a narrower tile must keep that many more SMs busy: small
/// tiles, at about 0.55, win only where C is one wave or less (1024² has 128 against 64 narrow
/// ones); medium tiles, at about 0.96, win where both wide and narrow waves end part full (at
/// 3072², 384 of them keep 97% of three waves busy, where 288 wide ones keep 73% and 576
/// narrow ones 87% of five), and at 4095×4097, whose eight full waves of narrow tiles take
/// longer than six of medium ones, the last a third full; narrow ones, at 0.85 (0.77 in
/// TF32), where C has too few tiles for the others (128×14336). Wide
/// tiles store through TMA ([`Step::TmaStore`]) where C's rows are 16-byte aligned and k is
/// shorter than [`TMA_STORE_MAX_K`].
///
/// ```
/// use cuda_kernels::matmul::hopper::{persistent_step, Precision, Step};
///
/// // 32 wide tiles leave 100 of 132 SMs idle, 64 narrow ones 68, 128 small ones 4.
/// assert_eq!(persistent_step((1024, 1024, 1024), Precision::Bf16, 132), Step::Small);
/// assert_eq!(persistent_step((3072, 3072, 3072), Precision::Bf16, 132), Step::Medium);
/// assert_eq!(persistent_step((4095, 4097, 4099), Precision::Bf16, 132), Step::Medium);
/// // All fill their waves: wide, stored through TMA where rows of C are 16-byte aligned and k
/// // is short enough for the epilogue to matter.
/// assert_eq!(persistent_step((4096, 4096, 4096), Precision::Bf16, 132), Step::TmaStore);
/// assert_eq!(persistent_step((4096, 4095, 4096), Precision::Bf16, 132), Step::Persistent);
/// assert_eq!(persistent_step((16384, 16384, 16384), Precision::Bf16, 132), Step::Persistent);
/// ```
pub fn persistent_step((m, n, k): (usize, usize, usize), precision: Precision, sms: usize) -> Step {
    let sms = sms.max(1);
    // The share of the SMs' time over the waves that `tiles` tiles keep busy, in thousandths.
    let busy = |tiles: usize| 1000 * tiles / (tiles.div_ceil(sms).max(1) * sms);
    let rate = |step: Step| relative_speed(step, precision) * busy(m.div_ceil(BM) * n.div_ceil(step.tile_n()));
    let mut best = Step::Persistent;
    for step in [Step::Narrow, Step::Small, Step::Medium] {
        if rate(step) > rate(best) {
            best = step;
        }
    }
    if best == Step::Persistent && n.is_multiple_of(4) && k < TMA_STORE_MAX_K {
        Step::TmaStore
    } else {
        best
    }
}

/// The k from which [`persistent_step`] stores wide tiles without TMA. The TMA-store step's gain
/// is the epilogue it overlaps, a share of a tile's time that falls as k grows: from this k on
/// the two steps measured alike, or the persistent one faster (the sweep's rows in
/// `docs/performance.md`; the runs behind the limit are in issue 32's closing notes).
pub const TMA_STORE_MAX_K: usize = 8192;

/// A tile's speed relative to a wide one's where both fill their waves, in thousandths: the
/// 8192³ rows of the twins in `docs/performance.md` (corrected for the share of SMs busy), where
/// narrow TF32 tiles fall furthest behind. Medium tiles' is above the 0.93 of those rows: at
/// 4095×4097×4099, in each type, they ran ahead of narrow ones, whose extra tiles cost more
/// there than the SMs they keep busy (the runs are in issue 32's closing notes).
///
/// ```
/// use cuda_kernels::matmul::hopper::{relative_speed, Precision, Step};
///
/// assert_eq!(relative_speed(Step::Persistent, Precision::F16), 1000);
/// assert!(relative_speed(Step::Narrow, Precision::Tf32) < relative_speed(Step::Narrow, Precision::Bf16));
/// ```
pub fn relative_speed(step: Step, precision: Precision) -> usize {
    match (step, precision) {
        (Step::Pipelined | Step::Persistent | Step::TmaStore, _) => 1000,
        (Step::Narrow, Precision::Tf32) => 770,
        (Step::Narrow, _) => 850,
        (Step::Small, _) => 550,
        (Step::Medium, _) => 960,
    }
}

/// Every Hopper kernel: its name, step and precision.
pub fn kernels() -> impl Iterator<Item = (&'static str, Step, Precision)> {
    Step::ALL.into_iter().flat_map(|s| Precision::ALL.into_iter().map(move |p| (s.kernel(p), s, p)))
}

/// The step and precision of the Hopper kernel `kernel`.
pub fn kernel_of(kernel: &str) -> Option<(Step, Precision)> {
    kernels().find(|(name, _, _)| *name == kernel).map(|(_, s, p)| (s, p))
}

impl Precision {
    /// Every precision.
    pub const ALL: [Precision; 3] = [Precision::Tf32, Precision::Bf16, Precision::F16];

    /// `tf32`, `bf16` or `f16`, as the kernels' names end.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Tf32 => "tf32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }

    /// Bytes of one element as the kernels read it: TF32 values are f32 bits.
    pub fn bytes(self) -> usize {
        match self {
            Precision::Tf32 => 4,
            Precision::Bf16 | Precision::F16 => 2,
        }
    }

    /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT32`, `_BFLOAT16` or `_FLOAT16`.
    fn tensor_map_type(self) -> u32 {
        match self {
            Precision::Tf32 => 7,
            Precision::Bf16 => 9,
            Precision::F16 => 6,
        }
    }

    /// k per stage, one 128-byte row of the swizzle: the kernels' slice of k.
    pub fn bk(self) -> usize {
        match self {
            Precision::Tf32 => BK_TF32,
            Precision::Bf16 | Precision::F16 => BK,
        }
    }

    /// Rows and columns of the B operand the kernels read for a `k × n` B: Bᵀ for TF32.
    pub fn b_shape(self, n: usize, k: usize) -> (usize, usize) {
        match self {
            Precision::Tf32 => (n, k),
            Precision::Bf16 | Precision::F16 => (k, n),
        }
    }

    /// The 16-bit type, if this is one.
    pub fn half(self) -> Option<Half> {
        match self {
            Precision::Tf32 => None,
            Precision::Bf16 => Some(Half::Bf16),
            Precision::F16 => Some(Half::F16),
        }
    }
}

/// A 16-bit input type, as bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    /// bfloat16: f32's exponent, 8 significant bits.
    Bf16,
    /// IEEE half precision: 5 exponent bits, 11 significant bits.
    F16,
}

impl Half {
    /// Both types.
    pub const ALL: [Half; 2] = [Half::Bf16, Half::F16];

    /// `x` rounded to this type (to nearest, ties to even), as its bits.
    pub fn round(self, x: f32) -> u16 {
        match self {
            Half::Bf16 => bf16_bits(x),
            Half::F16 => f16_bits(x),
        }
    }

    /// The value of the bits `h` of this type.
    pub fn value(self, h: u16) -> f32 {
        match self {
            Half::Bf16 => f32::from_bits((h as u32) << 16),
            Half::F16 => f16_value(h),
        }
    }
}

/// `x` as bfloat16 bits, rounded to nearest even (NaN stays NaN).
fn bf16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// `x` as IEEE half bits, rounded to nearest even; overflow gives infinity.
fn f16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let abs = x.abs();
    if x.is_nan() {
        return sign | 0x7e00;
    }
    if abs >= 65520.0 {
        return sign | 0x7c00;
    }
    if abs < 6.103_515_6e-5 {
        // Subnormal halves are multiples of 2^-24: round |x| · 2^24 to an integer, ties to even.
        return sign | (abs * 16_777_216.0).round_ties_even() as u16;
    }
    let exponent = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mantissa = bits & 0x7f_ffff;
    let half = ((exponent as u32) << 10) | (mantissa >> 13);
    let rest = mantissa & 0x1fff;
    let round_up = rest > 0x1000 || (rest == 0x1000 && half & 1 == 1);
    sign | (half + round_up as u32) as u16
}

/// The value of IEEE half bits.
fn f16_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = ((h >> 10) & 0x1f) as i32;
    let mantissa = (h & 0x3ff) as f32;
    match exponent {
        0 => sign * mantissa * 2f32.powi(-24),
        31 if mantissa == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        _ => sign * (1.0 + mantissa / 1024.0) * 2f32.powi(exponent - 15),
    }
}

/// A tensor map as the driver writes it: 128 opaque bytes, 64-byte aligned.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct TensorMap([u64; 16]);

// SAFETY: plain bytes with no pointers the host owns (the address inside is a device address).
unsafe impl DeviceCopy for TensorMap {}

/// The row stride of a matrix with `cols` elements of `bytes` each per row that TMA accepts:
/// rounded up to 16 bytes.
pub fn tma_stride(cols: usize, bytes: usize) -> usize {
    let unit = 16 / bytes;
    cols.div_ceil(unit) * unit
}

/// Bytes of one row of a TMA box: a stage's k (`BK` 16-bit or `BK_TF32` f32 values), the
/// swizzle's 128 bytes.
const BOX_ROW_BYTES: usize = BK * 2;

/// The row stride [`with_args`] pads rows of `cols` elements of `bytes` each to: a whole number
/// of 128-byte box rows, so that with zeros in the padding no box lies partly past a row.
///
/// ```
/// use cuda_kernels::matmul::hopper::box_row_stride;
///
/// // 64 two-byte values fill a box row; 32 four-byte ones do.
/// assert_eq!(box_row_stride(4099, 2), 4160);
/// assert_eq!(box_row_stride(4096, 2), 4096);
/// assert_eq!(box_row_stride(1, 4), 32);
/// ```
pub fn box_row_stride(cols: usize, bytes: usize) -> usize {
    let unit = BOX_ROW_BYTES / bytes;
    cols.div_ceil(unit) * unit
}

/// A and B as the kernels read them: row-major matrices of `T` (u16 bits for BF16 and FP16,
/// f32 for TF32) with row strides `lda` and `ldb` (elements), A m×k and B k×n, or for TF32
/// Bᵀ n×k ([`Precision::b_shape`]).
pub struct Operands<'a, T: DeviceCopy> {
    /// The input type, which `T` holds.
    pub precision: Precision,
    /// A, m rows of `lda` elements, the first k of each used.
    pub a: &'a DeviceSlice<T>,
    /// A's row stride, in elements.
    pub lda: usize,
    /// B (k × n), or for TF32 Bᵀ (n × k), rows of `ldb` elements.
    pub b: &'a DeviceSlice<T>,
    /// B's row stride, in elements.
    pub ldb: usize,
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B: the inner dimension.
    pub k: usize,
    /// Whether every element between a row's end and its stride is zero, in A and in B. The maps
    /// then reach to the stride, so that TMA copies no box partly past a row; the zeros past k
    /// add nothing to the product, but other values there would: leave it false unless they
    /// are zeros.
    pub zero_padded: bool,
}

impl<T: DeviceCopy> Clone for Operands<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for Operands<'_, T> {}

impl<T: DeviceCopy> Operands<'_, T> {
    /// The columns of A and of B (Bᵀ for TF32) the tensor maps hold: the padded rows when the
    /// padding is zeros, else the matrices' own.
    fn map_cols(&self) -> (usize, usize) {
        let (_, b_cols) = self.precision.b_shape(self.n, self.k);
        if self.zero_padded {
            (self.lda, self.ldb)
        } else {
            (self.k, b_cols)
        }
    }

    /// Elements of A and of B the kernels may read: to the end of the last row the maps hold.
    fn spans(&self, kernel: &str) -> GpuResult<(usize, usize)> {
        let (b_rows, _) = self.precision.b_shape(self.n, self.k);
        let (a_cols, b_cols) = self.map_cols();
        let a = product(kernel, self.m - 1, self.lda)?.checked_add(a_cols);
        let b = product(kernel, b_rows - 1, self.ldb)?.checked_add(b_cols);
        a.zip(b).ok_or_else(|| refuse(kernel, "the matrices' extents overflow"))
    }

    /// What TMA and the kernels need of A and B: elements of the precision's size, dimensions
    /// of at least 1 that a tensor map holds (below 2^32), strides that are multiples of 16
    /// bytes and cover a row, buffers that long, 16-byte aligned.
    fn check(&self, kernel: &str) -> GpuResult<()> {
        let (m, n, k) = (self.m, self.n, self.k);
        let bytes = self.precision.bytes();
        if size_of::<T>() != bytes {
            let reason = format!("{} takes {bytes}-byte elements, not {}", self.precision.name(), size_of::<T>());
            return Err(refuse(kernel, reason));
        }
        if m == 0 || n == 0 || k == 0 {
            return Err(refuse(kernel, format!("{m}×{n}×{k}: every dimension must be at least 1")));
        }
        if [m, n, k].iter().any(|&d| d >= 1 << 32) {
            return Err(refuse(kernel, "a dimension of 2^32 or more does not fit a tensor map"));
        }
        let (_, b_cols) = self.precision.b_shape(n, k);
        for (what, ld, cols) in [("A", self.lda, k), ("B", self.ldb, b_cols)] {
            if ld < cols || ld != tma_stride(ld, bytes) {
                return Err(refuse(
                    kernel,
                    format!("{what}'s row stride {ld} must cover its {cols} columns and be a multiple of 16 bytes"),
                ));
            }
        }
        let (a_len, b_len) = self.spans(kernel)?;
        require_len(kernel, "A", self.a, a_len)?;
        require_len(kernel, "B", self.b, b_len)?;
        require_aligned(kernel, "A", self.a, 16)?;
        require_aligned(kernel, "B", self.b, 16)
    }
}

/// The two tensor maps of some [`Operands`] in device memory, where the kernels read them.
pub struct TensorMaps<'a, T: DeviceCopy> {
    operands: Operands<'a, T>,
    device: &'a DeviceSlice<TensorMap>,
}

/// `cuTensorMapEncodeTiled`'s signature (CUDA 12 `cuda.h`); the enums are C `int`s.
type EncodeTiled = unsafe extern "C" fn(
    map: *mut TensorMap,
    data_type: u32,
    rank: u32,
    global_address: *mut c_void,
    global_dims: *const u64,
    global_strides: *const u64,
    box_dims: *const u32,
    element_strides: *const u32,
    interleave: u32,
    swizzle: u32,
    l2_promotion: u32,
    oob_fill: u32,
) -> u32;

/// The driver's `cuTensorMapEncodeTiled`, looked up at run time: a driver older than CUDA 12
/// lacks it, which is then an error rather than a host that fails to start.
fn encode_tiled() -> GpuResult<EncodeTiled> {
    let mut function: *mut c_void = std::ptr::null_mut();
    // SAFETY: the symbol name is NUL-terminated and `function` a valid place for the pointer;
    // 12000 asks for the CUDA 12.0 version of the entry point.
    let result = unsafe { cust::sys::cuGetProcAddress(c"cuTensorMapEncodeTiled".as_ptr(), &mut function, 12000, 0) };
    driver_result(result, "looking up cuTensorMapEncodeTiled (the driver must support CUDA 12)")?;
    if function.is_null() {
        return Err(GpuError::InvalidInput("the driver has no cuTensorMapEncodeTiled (CUDA 12 or newer)".into()));
    }
    // SAFETY: the driver returned the CUDA 12.0 entry point of this name, whose C signature
    // `EncodeTiled` spells out.
    Ok(unsafe { std::mem::transmute::<*mut c_void, EncodeTiled>(function) })
}

/// The tensor map of a row-major `rows × cols` matrix at `address` with row stride `ld`
/// (elements), its elements of the driver's data type `element.0`, `element.1` bytes each,
/// copied in boxes of `box_dims` (contiguous dimension first) with the 128-byte swizzle; the
/// parts of a box outside the matrix are filled with zeros.
pub(super) fn encode(
    element: (u32, usize),
    address: u64,
    rows: usize,
    cols: usize,
    ld: usize,
    box_dims: [u32; 2],
) -> GpuResult<TensorMap> {
    let encode = encode_tiled()?;
    let mut map = TensorMap([0; 16]);
    let dims = [cols as u64, rows as u64];
    let strides = [(ld * element.1) as u64];
    let element_strides = [1u32, 1];
    let (no_interleave, swizzle_128b, l2_promote_256b, zero_fill) = (0, 3, 3, 0);
    // SAFETY: every pointer is to a live local of the length the rank (2) implies; `map` is
    // 64-byte aligned; the driver only records `address`, which `Operands::check` verified
    // covers the matrix.
    let result = unsafe {
        encode(
            &mut map,
            element.0,
            2,
            address as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            box_dims.as_ptr(),
            element_strides.as_ptr(),
            no_interleave,
            swizzle_128b,
            l2_promote_256b,
            zero_fill,
        )
    };
    if result != 0 {
        return Err(GpuError::Driver {
            what: format!("encoding a tensor map of {rows}×{cols} (stride {ld})"),
            code: result,
        });
    }
    Ok(map)
}

impl<'a, T: DeviceCopy> TensorMaps<'a, T> {
    /// Encodes the maps of `operands` (A in boxes of `BM` rows by one stage of k; B in boxes of
    /// one stage of k by `BOX_N` columns, for TF32 `BOX_N` rows of Bᵀ) and copies them into
    /// `device`.
    pub fn upload(operands: Operands<'a, T>, device: &'a mut DeviceBuffer<TensorMap>) -> GpuResult<Self> {
        let kernel = Step::Pipelined.kernel(operands.precision);
        operands.check(kernel)?;
        require_len(kernel, "the tensor maps' buffer", device, 2)?;
        let Operands { precision, a, lda, b, ldb, m, n, k, .. } = operands;
        let (bk, box_n) = (precision.bk() as u32, BOX_N as u32);
        let (b_rows, _) = precision.b_shape(n, k);
        let (a_cols, b_cols) = operands.map_cols();
        let b_box = if precision == Precision::Tf32 { [bk, box_n] } else { [box_n, bk] };
        let element = (precision.tensor_map_type(), precision.bytes());
        let maps = [
            encode(element, a.as_device_ptr().as_raw(), m, a_cols, lda, [bk, BM as u32])?,
            encode(element, b.as_device_ptr().as_raw(), b_rows, b_cols, ldb, b_box)?,
        ];
        cust::memory::CopyDestination::copy_from(&mut device.index(..2), &maps[..])
            .map_err(|source| GpuError::Cuda { what: "copying the tensor maps to the GPU".into(), source })?;
        Ok(Self { operands, device })
    }

    /// Maps said to be in `device` without encoding them: for the launch checks, which refuse
    /// their launches before any kernel runs.
    ///
    /// # Safety
    /// `device` holds the tensor maps [`TensorMaps::upload`] would write for `operands`.
    pub unsafe fn assume_uploaded(operands: Operands<'a, T>, device: &'a DeviceSlice<TensorMap>) -> Self {
        Self { operands, device }
    }

    /// The input type the maps describe.
    pub fn precision(&self) -> Precision {
        self.operands.precision
    }

    /// What a product `kernel` (one of `kernels`, those of the maps' precision) on these maps
    /// needs, writing `out_len` floats of `out` (`what`, for errors): the dimensions the maps
    /// were encoded for, operands TMA takes, `out` long enough, 16-byte aligned where the
    /// epilogue stores four floats at once (`n` a multiple of 4), overlapping neither matrix;
    /// the maps' buffer of two, 64-byte aligned.
    pub(super) fn check_product(
        &self,
        kernel: &str,
        kernels: &[&str],
        (m, n, k): (usize, usize, usize),
        (what, out, out_len): (&str, &DeviceSlice<f32>, usize),
    ) -> GpuResult<()> {
        let operands = &self.operands;
        require_kernel(kernel, kernels, "the tensor maps' precision")?;
        if (m, n, k) != (operands.m, operands.n, operands.k) {
            return Err(refuse(
                kernel,
                format!("{m}×{n}×{k} does not match the tensor maps' {}×{}×{}", operands.m, operands.n, operands.k),
            ));
        }
        operands.check(kernel)?;
        let (a_len, b_len) = operands.spans(kernel)?;
        require_len(kernel, what, out, out_len)?;
        // The epilogue's 16-byte stores (`store_quad`): every row then starts on a multiple of 4
        // floats, so only the output's own start can break their alignment.
        if n.is_multiple_of(4) {
            require_aligned(kernel, what, out, 16)?;
        }
        crate::gpu::require_disjoint(kernel, (what, out, out_len), ("A", operands.a, a_len))?;
        crate::gpu::require_disjoint(kernel, (what, out, out_len), ("B", operands.b, b_len))?;
        require_len(kernel, "the tensor maps' buffer", self.device, 2)?;
        require_aligned(kernel, "the tensor maps", self.device, 64)
    }

    /// The maps' buffer on the GPU, the kernels' first parameter.
    pub(super) fn device(&self) -> &DeviceSlice<TensorMap> {
        self.device
    }
}

/// C's tensor map in device memory, through which the TMA-store step ([`Step::TmaStore`]) writes
/// C: f32, in boxes of `STORE_BOX_ROWS` rows by `STORE_BOX_COLS` columns with the 128-byte
/// swizzle, and the output it describes.
pub struct OutputMap<'a> {
    c: &'a DeviceSlice<f32>,
    dims: (usize, usize),
    device: &'a DeviceSlice<TensorMap>,
}

impl<'a> OutputMap<'a> {
    /// Encodes the map of C, `m × n` row-major f32 at `c`, into `device`: `n` must be a
    /// multiple of 4 (TMA's row stride is a multiple of 16 bytes), C at most 2^32 rows and
    /// columns, `c` that long and 16-byte aligned.
    pub fn upload(
        c: &'a DeviceSlice<f32>,
        (m, n): (usize, usize),
        device: &'a mut DeviceBuffer<TensorMap>,
    ) -> GpuResult<Self> {
        let what = "C's tensor map";
        if m == 0 || n == 0 || m >= 1 << 32 || n >= 1 << 32 {
            return Err(refuse(what, format!("a C of {m}×{n}: TMA takes 1 to 2^32 - 1 rows and columns")));
        }
        if !n.is_multiple_of(4) {
            return Err(refuse(what, format!("C's rows of {n} floats are not a multiple of 16 bytes, as TMA needs")));
        }
        require_len(what, "C", c, product(what, m, n)?)?;
        require_aligned(what, "C", c, 16)?;
        require_len(what, "the tensor map's buffer", device, 1)?;
        let float32 = (7, size_of::<f32>());
        let map = encode(float32, c.as_device_ptr().as_raw(), m, n, n, [STORE_BOX_COLS as u32, STORE_BOX_ROWS as u32])?;
        cust::memory::CopyDestination::copy_from(&mut device.index(..1), &[map][..])
            .map_err(|source| GpuError::Cuda { what: "copying C's tensor map to the GPU".into(), source })?;
        Ok(Self { c, dims: (m, n), device })
    }

    /// A map said to be in `device` without encoding it, for a caller that keeps the buffer
    /// [`output_map`] filled.
    ///
    /// # Safety
    /// `device` holds the map [`OutputMap::upload`] wrote for `c` and `dims`.
    pub unsafe fn assume_uploaded(
        c: &'a DeviceSlice<f32>,
        dims: (usize, usize),
        device: &'a DeviceSlice<TensorMap>,
    ) -> Self {
        Self { c, dims, device }
    }

    /// Whether this map describes C at `c`, `dims.0 × dims.1`, and lies in a buffer the kernels
    /// can read it from.
    fn check(&self, kernel: &str, c: &DeviceSlice<f32>, dims: (usize, usize)) -> GpuResult<()> {
        let same = self.c.as_device_ptr() == c.as_device_ptr() && self.c.len() == c.len() && self.dims == dims;
        if !same {
            return Err(refuse(kernel, "C's tensor map describes another output"));
        }
        require_len(kernel, "C's tensor map's buffer", self.device, 1)?;
        require_aligned(kernel, "C's tensor map", self.device, 64)
    }
}

/// C's map for `step` on a new buffer in `buffer`: for the TMA-store step, which writes C
/// through it; `None` for the others, which take C's address.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::matmul::hopper::{output_map, Step};
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let c = gpu.zeroed::<f32>("C", 64 * 100)?;
/// assert!(output_map(Step::TmaStore, &c, (64, 100), &mut None)?.is_some());
/// assert!(output_map(Step::Persistent, &c, (64, 100), &mut None)?.is_none());
/// // Rows of 99 floats are not a multiple of 16 bytes, as TMA's row stride must be.
/// assert!(output_map(Step::TmaStore, &c, (64, 99), &mut None).is_err());
/// # Ok(())
/// # }
/// ```
pub fn output_map<'a>(
    step: Step,
    c: &'a DeviceSlice<f32>,
    dims: (usize, usize),
    buffer: &'a mut Option<DeviceBuffer<TensorMap>>,
) -> GpuResult<Option<OutputMap<'a>>> {
    if step != Step::TmaStore {
        return Ok(None);
    }
    // SAFETY: `TensorMap` is plain bytes, and `upload` writes the map before a kernel reads it.
    let device = unsafe { DeviceBuffer::<TensorMap>::uninitialized(1) }
        .map_err(|source| GpuError::Cuda { what: "allocating C's tensor map".into(), source })?;
    OutputMap::upload(c, dims, buffer.insert(device)).map(Some)
}

/// The arguments of the Hopper kernels: the tensor maps of A and B, C (16-byte aligned when `n`
/// is a multiple of 4, as any allocation is) and, for the TMA-store step, C's map; the
/// dimensions; `blocks`, the persistent kernels' grid (one per SM; fewer when there are fewer
/// tiles).
pub struct WgmmaArgs<'a, T: DeviceCopy> {
    /// The tensor maps of A and B, in device memory, and the operands they describe.
    pub maps: &'a TensorMaps<'a, T>,
    /// C's tensor map, which the TMA-store step writes through and the others ignore.
    pub out: Option<&'a OutputMap<'a>>,
    /// C, m × n row-major f32, written.
    pub c: &'a DeviceSlice<f32>,
    /// Rows of A and C; must equal the maps'.
    pub m: usize,
    /// Columns of B and C; must equal the maps'.
    pub n: usize,
    /// The inner dimension; must equal the maps'.
    pub k: usize,
    /// Blocks of the persistent kernels' grid (at least 1); the pipelined ones take one per
    /// tile and ignore it.
    pub blocks: u32,
}

// SAFETY: the maps describe A and B (`TensorMaps` is built by encoding them, or by an unsafe
// promise that it was), which `Operands::check` verified long enough, 16-byte aligned, with
// strides TMA takes, for the dimensions `m`, `n`, `k` checked equal to these; the kernel's
// precision is the maps' (and their element type its). C holds `m·n` floats, overlaps neither
// matrix, and starts 16-byte aligned wherever the epilogue stores four floats at once (`n` a
// multiple of 4). The maps' buffer holds two, 64-byte aligned (`TensorMaps::check_product`
// checks all of this). For the TMA-store step, C's map describes this C (its dimensions,
// whose rows `OutputMap::upload` checked 16-byte aligned) in a buffer of one, 64-byte aligned.
// The shape is the one the kernels are written for, one layer deep (one split of k: C itself
// is the output). The parameters are `maps: *const TensorMap, c: *mut f32, m: usize, n: usize,
// k: usize`, or for the TMA-store step `maps, out: *const TensorMap, m, n, k`.
unsafe impl<T: DeviceCopy> KernelArgs for WgmmaArgs<'_, T> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let kernels = Step::ALL.map(|s| s.kernel(self.maps.precision()));
        let c_len = product(kernel, self.m, self.n)?;
        self.maps.check_product(kernel, &kernels, (self.m, self.n, self.k), ("C", self.c, c_len))?;
        let (step, _) = kernel_of(kernel).ok_or_else(|| refuse(kernel, "it is not a Hopper matrix product"))?;
        if step == Step::TmaStore {
            let out = self.out.ok_or_else(|| refuse(kernel, "it writes C through C's tensor map, and none was given"))?;
            out.check(kernel, self.c, (self.m, self.n))?;
        }
        checked_launch(kernel, step, (self.m, self.n), self.blocks)
    }

    fn params(&self, kernel: &str) -> Params {
        let params = Params::new().pointer(self.maps.device);
        let params = match (kernel_of(kernel), self.out) {
            (Some((Step::TmaStore, _)), Some(out)) => params.pointer(out.device),
            _ => params.pointer(self.c),
        };
        params.value(self.m).value(self.n).value(self.k)
    }
}

/// [`launch_config`] for a binding's launch of `kernel`, a kernel of `step`: a persistent grid
/// of 0 blocks is refused, not rounded up.
pub(super) fn checked_launch(kernel: &str, step: Step, (m, n): (usize, usize), blocks: u32) -> GpuResult<LaunchConfig> {
    if step != Step::Pipelined && blocks == 0 {
        return Err(refuse(kernel, "a persistent grid of 0 blocks"));
    }
    launch_config(step, m, n, blocks)
}

/// The launch of `step` for an `m × n` C: a block per tile, or for the persistent steps at most
/// `blocks` (one per SM), fewer when there are fewer tiles.
pub fn launch_config(step: Step, m: usize, n: usize, blocks: u32) -> GpuResult<LaunchConfig> {
    let per_tile = LaunchConfig::tiles_2d(n, m, (step.tile_n(), BM), (THREADS as u32, 1), step.shared_bytes())?;
    if step == Step::Pipelined {
        return Ok(per_tile);
    }
    let tiles = per_tile.grid.0 as u64 * per_tile.grid.1 as u64;
    let grid = tiles.min(blocks.max(1) as u64) as u32;
    Ok(LaunchConfig { grid: (grid, 1, 1), ..per_tile })
}

/// `matrix` (`rows × cols`, dense) with its rows padded with zeros to `ld` elements, in a new
/// buffer.
fn padded<T: DeviceCopy + bytemuck::Pod>(
    gpu: &Gpu,
    what: &str,
    matrix: &DeviceSlice<T>,
    rows: usize,
    cols: usize,
    ld: usize,
) -> GpuResult<DeviceBuffer<T>> {
    let len = rows.checked_mul(ld).ok_or_else(|| GpuError::InvalidInput(format!("padding {what}: its size overflows")))?;
    let out = gpu.zeroed::<T>(&format!("the padded copy of {what}"), len)?;
    let bytes = size_of::<T>();
    let copy = cust::sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: cust::sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: matrix.as_device_ptr().as_raw(),
        srcArray: std::ptr::null_mut(),
        srcPitch: cols * bytes,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: cust::sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: out.as_device_ptr().as_raw(),
        dstArray: std::ptr::null_mut(),
        dstPitch: ld * bytes,
        WidthInBytes: cols * bytes,
        Height: rows,
    };
    // SAFETY: both buffers hold `rows` rows of their pitch (the caller checked `matrix` has
    // `rows · cols` elements; `out` was just allocated with `rows · ld`), and the copy reads and
    // writes `cols` elements of each row.
    let result = unsafe { cust::sys::cuMemcpy2D_v2(&copy) };
    driver_result(result, format!("padding the rows of {what}"))?;
    Ok(out)
}

/// Runs `body` with the arguments of `C = A × B` on the Hopper kernel `kernel`, A (`m×k`) and B
/// (`k×n`; for TF32 Bᵀ, `n×k`) dense row-major matrices of the kernel's precision, C `m×n`
/// f32 (16-byte aligned when `n` is a multiple of 4): rows that are not a whole number of
/// 128-byte box rows are copied first into rows padded with zeros to one ([`box_row_stride`]),
/// and the tensor maps (C's too, for the TMA-store step) encoded and uploaded, once for all of
/// `body`'s launches.
#[allow(clippy::too_many_arguments)]
pub fn with_args<T: DeviceCopy + bytemuck::Pod, R>(
    gpu: &Gpu,
    kernel: &str,
    a: &DeviceSlice<T>,
    b: &DeviceSlice<T>,
    c: &DeviceSlice<f32>,
    (m, n, k): (usize, usize, usize),
    body: impl FnOnce(&WgmmaArgs<T>) -> GpuResult<R>,
) -> GpuResult<R> {
    let (step, precision) = kernel_of(kernel).ok_or_else(|| refuse(kernel, "it is not a Hopper matrix product"))?;
    let (b_rows, b_cols) = precision.b_shape(n, k);
    // Dense rows have no padding, so none but zeros.
    let dense = Operands { precision, a, lda: k, b, ldb: b_cols, m, n, k, zero_padded: true };
    if m == 0 || n == 0 || k == 0 || size_of::<T>() != precision.bytes() {
        return Err(dense.check(kernel).err().unwrap_or_else(|| refuse(kernel, "an empty product")));
    }
    require_len(kernel, "A", a, product(kernel, m, k)?)?;
    require_len(kernel, "B", b, product(kernel, b_rows, b_cols)?)?;
    let (lda, ldb) = (box_row_stride(k, size_of::<T>()), box_row_stride(b_cols, size_of::<T>()));
    let a_padded = if lda == k { None } else { Some(padded(gpu, "A", a, m, k, lda)?) };
    let b_padded = if ldb == b_cols { None } else { Some(padded(gpu, "B", b, b_rows, b_cols, ldb)?) };
    let operands =
        Operands { a: a_padded.as_deref().unwrap_or(a), lda, b: b_padded.as_deref().unwrap_or(b), ldb, ..dense };
    // SAFETY: `TensorMap` is plain bytes, and `upload` writes both maps before a kernel reads them.
    let mut device = unsafe { DeviceBuffer::<TensorMap>::uninitialized(2) }
        .map_err(|source| GpuError::Cuda { what: "allocating the tensor maps".into(), source })?;
    let maps = TensorMaps::upload(operands, &mut device)?;
    let mut out_device = None;
    let out = output_map(step, c, (m, n), &mut out_device)?;
    let blocks = gpu.sms();
    let result = body(&WgmmaArgs { maps: &maps, out: out.as_ref(), c, m, n, k, blocks });
    // The copies and the maps are freed on return (a synchronous cuMemFree) after the work.
    gpu.synchronize(kernel)?;
    result
}

/// `C = A × B` on the Hopper kernel `kernel` (see [`with_args`]), finished on return.
#[allow(clippy::too_many_arguments)]
pub fn launch<T: DeviceCopy + bytemuck::Pod>(
    gpu: &Gpu,
    kernel: &str,
    a: &DeviceSlice<T>,
    b: &DeviceSlice<T>,
    c: &DeviceSlice<f32>,
    m: usize,
    n: usize,
    k: usize,
) -> GpuResult<()> {
    // SAFETY: `with_args` waits for the stream before it returns, and with it the buffers.
    with_args(gpu, kernel, a, b, c, (m, n, k), |args| unsafe { gpu.launch(kernel, args) })
}

/// The CPU reference of row `i` of `C = A × B` for inputs given as their values: f64 sums, and
/// beside each element the sum of `|a·b|` its tolerance scales with.
pub fn reference_row(a: &[f32], b: &[f32], n: usize, k: usize, i: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut c, mut magnitude) = (vec![0.0f64; n], vec![0.0f64; n]);
    for p in 0..k {
        let x = a[i * k + p] as f64;
        for (j, (cj, mj)) in c.iter_mut().zip(magnitude.iter_mut()).enumerate() {
            let term = x * b[p * n + j] as f64;
            *cj += term;
            *mj += term.abs();
        }
    }
    (c, magnitude)
}

/// The tolerance of an element whose terms sum to `magnitude` in absolute value. A product of
/// two 16-bit floats, or of two TF32 values (11 significant bits each), is exact in f32, so the
/// GPU's only error is its f32 accumulation: at most
/// `k·u·Σ|a·b|` (u = 2^-24) when each addition rounds, twice that if the tensor cores truncate.
/// Four times `k·u` leaves room for the order of additions; the f64 reference is exact to far
/// below that.
pub fn tolerance(k: usize, magnitude: f64) -> f64 {
    4.0 * k as f64 * f64::from(f32::EPSILON) / 2.0 * magnitude + f64::from(f32::MIN_POSITIVE)
}

/// Rows of C the check compares: all of them for small products, else 64 spread over C with
/// the first and the last, every column each.
pub fn checked_rows(m: usize, n: usize, k: usize) -> Vec<usize> {
    if m * n * k <= 1 << 30 {
        (0..m).collect()
    } else {
        let mut rows: Vec<usize> = (0..64).map(|r| r * (m - 1) / 63).collect();
        rows.dedup();
        rows
    }
}

/// What [`run`] measured: the errors found, the worst relative to its tolerance, and the time.
pub struct Outcome {
    /// The largest error of the checked elements over its tolerance ([`tolerance`]): at most
    /// 1 passes; infinite for a NaN.
    pub worst: f64,
    /// The mean absolute error of the checked elements, against the f64 reference.
    pub mean_error: f64,
    /// Their largest absolute error.
    pub max_error: f64,
    /// The product's timing.
    pub timing: crate::gpu::Timing,
}

/// One product of [`run`], launched once, then timed.
struct Timed<'a> {
    gpu: &'a Gpu,
    kernel: &'a str,
    c: &'a DeviceSlice<f32>,
    dims: (usize, usize, usize),
    /// The workspace and count of split k (`super::split`), when k is split.
    split: Option<(&'a DeviceSlice<f32>, usize)>,
    launches: usize,
    cache: crate::gpu::Cache,
}

impl Timed<'_> {
    fn run<T: DeviceCopy + bytemuck::Pod>(
        &self,
        a: &DeviceSlice<T>,
        b: &DeviceSlice<T>,
    ) -> GpuResult<crate::gpu::Timing> {
        let Timed { gpu, kernel, c, dims, split, launches, cache } = *self;
        let (step, _) = kernel_of(kernel).ok_or_else(|| refuse(kernel, "it is not a Hopper matrix product"))?;
        // SAFETY: `with_args` waits for the stream before it returns, and with it
        // the buffers; the workspace outlives `self`.
        let launch = |args: &WgmmaArgs<T>| match split {
            // SAFETY: as above.
            None => unsafe { gpu.launch(kernel, args) },
            // SAFETY: as above.
            Some((partials, splits)) => unsafe {
                super::split::launch_on(gpu, gpu.stream(), step, args.maps, partials, c, dims, splits)
            },
        };
        with_args(gpu, kernel, a, b, c, dims, |args| {
            launch(args)?;
            gpu.synchronize(kernel)?;
            gpu.time(launches, cache, || Ok(()), || launch(args))
        })
    }
}

/// The Hopper tests' run: random A and B in [-1, 1) rounded to the kernel's precision on the
/// host (each value as this precision holds it; for TF32, B uploaded transposed), `C = A × B` on
/// the GPU with `kernel`, checked against [`reference_row`] on [`checked_rows`], then timed over
/// `launches` launches.
pub fn run(
    gpu: &Gpu,
    kernel: &str,
    dims: (usize, usize, usize),
    seed: u64,
    launches: usize,
    cache: crate::gpu::Cache,
) -> GpuResult<Outcome> {
    run_split(gpu, kernel, dims, 1, seed, launches, cache)
}

/// [`run`] over `splits` splits of k (`super::split`; the timing that of the product and the
/// reduction together); one split is [`run`]'s product.
#[allow(clippy::too_many_arguments)]
pub fn run_split(
    gpu: &Gpu,
    kernel: &str,
    (m, n, k): (usize, usize, usize),
    splits: usize,
    seed: u64,
    launches: usize,
    cache: crate::gpu::Cache,
) -> GpuResult<Outcome> {
    use rand::{Rng, SeedableRng};
    let (_, precision) = kernel_of(kernel).ok_or_else(|| refuse(kernel, "it is not a Hopper matrix product"))?;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut random = |len: usize| -> Vec<f32> { (0..len).map(|_| rng.random_range(-1.0..1.0)).collect() };
    let (a, b) = (random(product("wgmma", m, k)?), random(product("wgmma", k, n)?));
    let c = gpu.poisoned::<f32>("C", product("wgmma", m, n)?)?;
    let partials = if splits == 1 { None } else { Some(super::split::workspace(gpu, (m, n), splits)?) };
    let split = partials.as_deref().map(|p| (p, splits));
    let time = Timed { gpu, kernel, c: &c, dims: (m, n, k), split, launches, cache };
    // The values each precision holds, and the timing of the product on them.
    let (a, b, timing) = match precision.half() {
        Some(half) => {
            let bits = |x: &[f32]| -> Vec<u16> { x.iter().map(|&v| half.round(v)).collect() };
            let (a16, b16) = (bits(&a), bits(&b));
            let timing = time.run(&*gpu.upload("A", &a16)?, &*gpu.upload("B", &b16)?)?;
            let values = |h: &[u16]| -> Vec<f32> { h.iter().map(|&x| half.value(x)).collect() };
            (values(&a16), values(&b16), timing)
        }
        None => {
            let round = |x: &[f32]| -> Vec<f32> { x.iter().map(|&v| super::rounding::round_tf32(v)).collect() };
            let (a, b) = (round(&a), round(&b));
            let bt: Vec<f32> = (0..n * k).map(|e| b[e % k * n + e / k]).collect();
            let timing = time.run(&*gpu.upload("A", &a)?, &*gpu.upload("Bᵀ", &bt)?)?;
            (a, b, timing)
        }
    };
    let result = gpu.download("C", &c, m * n)?;
    let rows = checked_rows(m, n, k);
    // Per row: the worst error over its tolerance, the sum and the largest of the errors.
    let (worst, sum, max_error) = rows
        .par_iter()
        .map(|&i| {
            let (expected, magnitude) = reference_row(&a, &b, n, k, i);
            (0..n)
                .map(|j| {
                    let error = (result[i * n + j] as f64 - expected[j]).abs();
                    // A NaN (an element never written) fails the check as an infinite error.
                    let error = if error.is_nan() { f64::INFINITY } else { error };
                    (error / tolerance(k, magnitude[j]), error, error)
                })
                .fold((0.0, 0.0, 0.0), merge)
        })
        .reduce(|| (0.0, 0.0, 0.0), merge);
    let mean_error = sum / (rows.len() * n) as f64;
    Ok(Outcome { worst, mean_error, max_error, timing })
}

/// Two rows' (worst over tolerance, sum of errors, largest error) as one.
fn merge(x: (f64, f64, f64), y: (f64, f64, f64)) -> (f64, f64, f64) {
    (x.0.max(y.0), x.1 + y.1, x.2.max(y.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_finite_16_bit_value_converts_back_to_itself() {
        for h in 0..=u16::MAX {
            for half in Half::ALL {
                let x = half.value(h);
                if x.is_finite() {
                    assert_eq!(half.round(x), h, "{:?} {:#06x} = {}", half, h, x);
                }
            }
        }
    }

    #[test]
    fn rounding_is_to_nearest_even() {
        // Halfway between 1 and the next value: ties go to the even mantissa, 1.
        assert_eq!(Half::Bf16.round(1.0 + 2f32.powi(-8)), 0x3f80);
        assert_eq!(Half::Bf16.round(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82);
        assert_eq!(Half::F16.round(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(Half::F16.round(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(Half::F16.round(0.1), 0x2e66);
        assert_eq!(Half::F16.round(65520.0), 0x7c00);
        assert_eq!(Half::F16.round(2f32.powi(-25)), 0);
        assert_eq!(Half::F16.round(3.0 * 2f32.powi(-25)), 2);
    }

    #[test]
    fn the_persistent_grid_is_one_block_per_sm_or_per_tile_when_fewer() {
        let tiles = |m: usize, n: usize| (m.div_ceil(BM) * n.div_ceil(BN)) as u32;
        let grid = |step, m, n| launch_config(step, m, n, 132).expect("a launch").grid;
        let (x, y, _) = grid(Step::Pipelined, 4096, 4096);
        assert_eq!(x * y, tiles(4096, 4096));
        assert_eq!(grid(Step::Persistent, 4096, 4096), (132, 1, 1));
        assert_eq!(grid(Step::Persistent, 300, 700), (tiles(300, 700), 1, 1));
        // Narrow tiles: twice as many across n.
        assert_eq!(grid(Step::Narrow, 1024, 1024), (64, 1, 1));
        assert_eq!(grid(Step::Narrow, 4096, 4096), (132, 1, 1));
        // Small tiles: four times as many across n as wide ones.
        assert_eq!(grid(Step::Small, 1024, 1024), (128, 1, 1));
        assert_eq!(grid(Step::Small, 256, 256), (8, 1, 1));
        // Medium tiles: 192 columns, so 16 across 3072 where wide ones are 12.
        assert_eq!(grid(Step::Medium, 256, 3072), (32, 1, 1));
        assert_eq!(grid(Step::Medium, 3072, 3072), (132, 1, 1));
    }

    #[test]
    fn narrower_tiles_are_picked_where_wider_ones_leave_most_sms_idle() {
        let pick = |m, n| persistent_step((m, n, 4096), Precision::Bf16, 132);
        // 56 wide tiles against 112 narrow, 224 small (both at 85% of two waves) and 75
        // medium (57% of one).
        assert_eq!(pick(128, 14336), Step::Narrow);
        // 288 wide tiles in three waves (73% busy), 576 narrow in five (87%), 384 medium in
        // three (97%); 544 wide in five waves against 1056 narrow in eight and 704 medium in
        // six (89%), which measured faster.
        for (m, n) in [(3072, 3072), (4095, 4097)] {
            assert_eq!(pick(m, n), Step::Medium, "{m}×{n}");
        }
        // One wave or less of small tiles: 8, 16, 32, 128 and 128 of them (rows of C unaligned
        // in the last).
        for (m, n) in [(256, 256), (512, 256), (512, 512), (1000, 1000), (1000, 1001)] {
            assert_eq!(pick(m, n), Step::Small, "{m}×{n}");
        }
        // Wide tiles fill their waves (2048² in one, 6144² in nine), or there is one tile: the
        // TMA-store epilogue's where rows of C are 16-byte aligned.
        for (m, n) in [(2048, 2048), (6144, 6144), (8192, 8192), (4096, 14336), (1, 4)] {
            assert_eq!(pick(m, n), Step::TmaStore, "{m}×{n}");
        }
        for (m, n) in [(2048, 2047), (1, 1), (8192, 8190)] {
            assert_eq!(pick(m, n), Step::Persistent, "{m}×{n}");
        }
        assert_eq!(persistent_step((1024, 1024, 1024), Precision::Bf16, 0), Step::TmaStore);
        // Short k: the epilogue is much of a tile's time; long k: little of it.
        assert_eq!(persistent_step((8192, 8192, 256), Precision::Bf16, 132), Step::TmaStore);
        assert_eq!(persistent_step((8192, 8192, TMA_STORE_MAX_K - 1), Precision::Tf32, 132), Step::TmaStore);
        assert_eq!(persistent_step((8192, 8192, TMA_STORE_MAX_K), Precision::Tf32, 132), Step::Persistent);
        // TF32's narrow tiles are slower: at 4095×4097 medium ones keep nearly as many SMs busy.
        assert_eq!(persistent_step((4095, 4097, 4096), Precision::Tf32, 132), Step::Medium);
        assert_eq!(persistent_step((128, 14336, 4096), Precision::Tf32, 132), Step::Narrow);
    }

    #[test]
    fn tma_strides_are_whole_16_byte_units() {
        assert_eq!([1, 8, 9, 300].map(|cols| tma_stride(cols, 2)), [8, 8, 16, 304]);
        assert_eq!([1, 4, 5, 300].map(|cols| tma_stride(cols, 4)), [4, 4, 8, 300]);
    }

    #[test]
    fn padded_rows_are_whole_128_byte_box_rows() {
        assert_eq!([1, 64, 65, 4099].map(|cols| box_row_stride(cols, 2)), [64, 64, 128, 4160]);
        assert_eq!([1, 32, 33, 4097].map(|cols| box_row_stride(cols, 4)), [32, 32, 64, 4128]);
    }
}
