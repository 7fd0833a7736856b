//! The interface between the kernels (`kernels/`, compiled to PTX) and the host that launches
//! them: every number both sides must agree on lives here once, and so does the histogram's
//! binning rule, so that the CPU reference bins exactly as the GPU does.
//!
//! `no_std` with no dependencies: the pinned nightly builds it for the GPU and the stable
//! toolchain builds it for the host, where `std` also gives the host-only parts what `core`
//! lacks (the square root of `reduce::Moments::std`).
#![no_std]
// The histogram's exact edges need explicitly rounded PTX arithmetic (`histogram::F32Bins`).
#![cfg_attr(target_os = "cuda", feature(asm, asm_experimental_arch))]

#[cfg(not(target_os = "cuda"))]
extern crate std;

pub mod background;
pub mod conv;
pub mod fit;
pub mod histogram;
pub mod label;
pub mod matmul;
pub mod measure;
pub mod reduce;
pub mod scan;
pub mod select;
pub mod wgmma;
pub mod window;

/// Calls `$declare!` with every kernel family's module name, in the order the command line
/// lists the families and `host all` runs them. `kernels/`, `library/` and `host/` each declare
/// one module per family through it, so that a new family is one line here (README: "A family").
#[macro_export]
macro_rules! for_each_family {
    ($declare:ident) => {
        $declare! {
            vector_add, saxpy, counter, histogram, transpose, matmul, conv2d, conv1d, reduce, select, scan, compact,
            label, measure, background, fit,
        }
    };
}

/// The sections of `bench/twins/interface.h` (printed by the `c-header` binary): which
/// constants of which module the CUDA C twins see, and as what C literal.
#[cfg(not(target_os = "cuda"))]
pub mod c_header {
    use crate::{
        background, conv, fit, histogram, label, matmul, measure, reduce, scan, select, transpose, vector, wgmma,
        DEFAULT_BLOCK,
    };
    use std::format;
    use std::string::{String, ToString};
    use std::vec;
    use std::vec::Vec;

    /// A constant as a C literal: numbers in decimal (so they take C's usual `int` where they fit,
    /// as the literals they replace did), strings quoted.
    trait Literal {
        fn literal(&self) -> String;
    }

    macro_rules! decimal {
        ($($t:ty),+) => {
            $(impl Literal for $t {
                fn literal(&self) -> String {
                    self.to_string()
                }
            })+
        };
    }
    decimal!(u32, usize);

    /// A finite f64 as Rust's shortest round-trip text (`0.95`, `10.0`, `1e-10`), which C
    /// reads as the same double.
    impl Literal for f64 {
        fn literal(&self) -> String {
            format!("{:?}", self)
        }
    }

    /// An f32 as C's float literal: the same digits Rust prints, which read back to the same
    /// value, with `f`.
    impl Literal for f32 {
        fn literal(&self) -> String {
            format!("{:?}f", self)
        }
    }

    impl Literal for &str {
        fn literal(&self) -> String {
            format!("{:?}", self)
        }
    }

    /// The constants of one module, under the C prefix of its name.
    pub struct Section {
        /// The module's path, as the header's comment names it.
        pub module: &'static str,
        /// Each constant's C name and literal.
        pub defines: Vec<(String, String)>,
    }

    /// `module: NAME, ...` lists constants of `interface::module` as `MODULE_NAME`.
    macro_rules! section {
        ($module:ident: $($name:ident),+ $(,)?) => {
            Section {
                module: concat!("interface::", stringify!($module)),
                defines: vec![$((
                    format!("{}_{}", stringify!($module).to_uppercase(), stringify!($name)),
                    $module::$name.literal(),
                )),+],
            }
        };
    }

    /// Every section of the header, in its order: a module's constants are listed here when the
    /// twins use them.
    pub fn sections() -> Vec<Section> {
        vec![
            Section { module: "interface", defines: vec![("DEFAULT_BLOCK".into(), DEFAULT_BLOCK.literal())] },
            section!(vector: QUADS_PER_THREAD),
            section!(transpose: TILE, BLOCK_ROWS, WIDE_TILE, WIDE_BLOCK_ROWS),
            section!(histogram: DEFAULT_BINS, F32_BOUNDS_THREADS, F32_BOUNDS_BLOCKS),
            section!(reduce:
                BLOCK, WARPS, BLOCKS_PER_SM, MOMENTS_BLOCKS_PER_SM, QUADS_PER_PASS, MOMENTS_QUADS_PER_PASS, FINISH_GROUP,
                VALUES_PER_PASS,
                MOMENTS_FIELDS, MOMENTS_COUNT, MOMENTS_NAN, MOMENTS_MEAN, MOMENTS_M2, MOMENTS_MIN, MOMENTS_MAX,
            ),
            section!(label: TILE_WIDTH, TILE_HEIGHT, MERGE_BLOCK, BLOCK, BACKGROUND),
            section!(measure: ITEMS, BLOCK, RECORD_WORDS, PIXELS, PEAK, Y_MIN, Y_MAX, X_MIN, X_MAX),
            section!(fit:
                MAX_COMPONENTS, PARAMETERS, PEAK, X, Y, MAJOR, MINOR, THETA, MAX_PARAMETERS, BLOCK, WARPS, MIN_BLOCKS_PER_SM, TILE_WORDS,
                GRAM_WORDS, LISTED_ISLANDS, ISLAND_WORDS, ISLAND_LABEL, ISLAND_Y_MIN, ISLAND_Y_MAX, ISLAND_X_MIN,
                ISLAND_X_MAX, COMPONENT_WORDS, RECORD_WORDS, CHI2, COMPONENTS, STATUS_WORDS, STATUS_COMPONENTS,
                STATUS_FLAGS, STATUS_ITERATIONS, STATUS_PIXELS, STATUS_SUMMITS, STATUS_ADDED, NOT_CONVERGED, AT_EDGE, NAN,
                TOO_MANY_SUMMITS, SINGULAR, FEW_PIXELS, NO_SUMMIT, BAD_ISLAND, MAX_ITERATIONS, LAMBDA_START,
                LAMBDA_FACTOR, STEP_TOLERANCE, CHI2_TOLERANCE, FWHM, PEAK_LOW, PEAK_HIGH, SIGMA_LOW, SIGMA_START,
                SIGMA_HIGH, MAX_FIT_PIXELS, MIN_SAMPLE_PER_PARAMETER, RANK_TOLERANCE, LOST_ANGLE, RESIDUAL_STEPS, RESIDUAL_GAIN,
                FLOOR_MARGIN, RESIDUAL_BOX_PIXELS, SPLIT_REACH, FIT_MARGIN, LISTED_PIXELS, LIST_INDICES, LIST_VALUES, LIST_NOISE,
                LIST_BYTES, COUNT_WORDS, KEY_WORDS, SHARED_TILE, SHARED_GRAMS, SHARED_CURRENT, SHARED_TRIAL, SHARED_LOW,
                SHARED_HIGH, SHARED_SCALE, SHARED_ERRORS, SHARED_SAVED, SHARED_HELD, SHARED_SHAPES,
                SHARED_PARTIALS, MODEL_WORDS, SHARED_MODELS, SHARED_KEYS, SHARED_COUNTS, SHARED_LIST, SHARED_BYTES, GRAM_BLOCK,
                BLOCKED_COLUMNS,
                SUMMIT_TILE, SUMMIT_PATCH_SIDE, SUMMIT_SMOOTHED_SIDE, SUMMIT_PATCH, SUMMIT_SMOOTHED, SUMMIT_BYTES,
                CHOLESKY_OWNED,
            ),
            section!(background:
                THREADS, WARPS, GRID_BLOCKS_PER_SM, MAX_BOX_PIXELS, BINS, BINS_PER_THREAD, CANDIDATES, SHARED_SUMS, SHARED_SQUARES,
                SHARED_COUNTS, SHARED_LEAST, SHARED_MOST, SHARED_PICK, SHARED_BINS, SHARED_CANDIDATES, SHARED_HEADER,
                PICK_WORDS, PICK_BIN, PICK_BELOW, PICK_COUNT, PICK_PLACED, PICK_VALUE, PICK_NEXT, NARROW_RANGE, NARROW_PRE,
                INTERPOLATE_BLOCK, LEAST_NOISE_BLOCK, FILL_BLOCK, FILL_NONE, FIELDS,
                BACKGROUND, NOISE,
            ),
            section!(scan:
                BLOCK, QUADS_PER_THREAD, MIN_BLOCKS_PER_SM, WARPS, TILE, LOOK_BACK_WAIT_NS, LOOK_BACK_RETRY_NS,
                FLAG_NONE, FLAG_AGGREGATE, FLAG_PREFIX,
            ),
            section!(conv: MAX_RADIUS, MAX_TAPS, FILTER_SYMBOL, NAIVE_BLOCK, TILE, BLOCK_ROWS, CONV1D_BLOCK, CONV1D_VEC4_QUADS, CONV1D_VEC4_SPAN),
            section!(select:
                PASSES, HIGH_BITS, MIDDLE_BITS, LOW_BITS, RADIX, SLOTS, HISTOGRAM_LEN, COUNT_BLOCK, COUNT_BLOCKS_PER_SM,
                COUNT_QUADS,
                FIND_BUCKETS, GATHER_CAP, VALUES_PER_BLOCK_TRIP, NOT_GATHERED, STATE_WORDS, STATE_COUNT, STATE_EMPTY,
                STATE_RANK, STATE_PREFIX, STATE_GATHERED, STATE_TICKET, FIND_RANK, FIND_MEDIAN, FIND_MEDIAN_UNLESS_COUNT,
            ),
            section!(matmul:
                NAIVE_BLOCK, SMALL_TILE, LARGE_TILE, SMALL_TILE_SHARED_BYTES, LARGE_TILE_SHARED_BYTES,
                BM, BN, BK, TM, TN, BLOCKED_THREADS, BLOCKED_SHARED_BYTES,
                MAX_LOADS,
                CP_ASYNC_BM, CP_ASYNC_BN, CP_ASYNC_BK, CP_ASYNC_TM, CP_ASYNC_TN, CP_ASYNC_THREADS, CP_ASYNC_SHARED_BYTES,
                ASYNC_BM, ASYNC_BN, ASYNC_BK, ASYNC_TM, ASYNC_TN, ASYNC_STAGES, ASYNC_THREADS,
                ASYNC_A_STRIDE, ASYNC_STAGE_FLOATS, ASYNC_SHARED_BYTES, ASYNC_SPLIT_MIN_SLICES, ASYNC_SPLIT_MAX_WAVES,
                ASYNC_SPLIT_COST_PERCENT,
                MMA_BM, MMA_BN, MMA_WARPS_M, MMA_WARPS_N, MMA_WARP_M, MMA_WARP_N, MMA_THREADS, MMA_STAGES, MMA_ROW_ALIGN,
                TF32_BK, TF32_A_STRIDE, TF32_B_STRIDE, TF32_STAGE_FLOATS, TF32_SHARED_BYTES,
                HALF_BK, HALF_STAGE_ELEMENTS, HALF_SHARED_BYTES, CONVERT_THREADS,
                SPLIT_BM, SPLIT_BN, SPLIT_BK, SPLIT_TM, SPLIT_TN, SPLIT_BLOCKS_PER_SM, SPLIT_MIN_SLICES, SPLIT_TARGET_BLOCKS_PER_SM,
                SPLIT_THREADS,
                SPLIT_SHARED_BYTES, REDUCE_THREADS, REDUCE_SPLITS_PER_THREAD, REDUCE_MAX_GROUPS,
            ),
            section!(wgmma:
                BM, BN, BK, BK_TF32, BK_FP8, STAGES, CONSUMERS, WARPGROUP, THREADS, BOX_N, A_STAGE_BYTES, B_STAGE_BYTES, STAGE_BYTES,
                SWIZZLE_ALIGN, EPILOGUE_COLS, EPILOGUE_STRIDE, EPILOGUE_WARP_BYTES, EPILOGUE_BYTES, SHARED_BYTES, PRODUCER_REGISTERS, CONSUMER_REGISTERS, NARROW_BN, NARROW_STAGES,
                NARROW_STAGE_BYTES, NARROW_SHARED_BYTES, SMALL_BN, SMALL_STAGES, SMALL_STAGE_BYTES, SMALL_SHARED_BYTES, MEDIUM_BN, MEDIUM_STAGES,
                MEDIUM_STAGE_BYTES, MEDIUM_SHARED_BYTES, STORE_BOX_ROWS, STORE_BOX_COLS, STORE_BOX_BYTES, STORE_BOXES,
                STORE_WARP_BYTES, TMA_STORE_SHARED_BYTES, GROUP_M, SPLIT_MIN_SLICES, SMALL_SPLIT_MIN_SLICES, SPLIT_MIN_SPLITS,
                FP8_ROW_ALIGN, E4M3_MAX, FP8_CONVERT_THREADS, FP8_TILE,
            ),
        ]
    }
}

/// Threads per block of the one-thread-per-element kernels when the user does not choose.
pub const DEFAULT_BLOCK: u32 = 256;

/// `__launch_bounds__(threads, min_blocks)` of a kernel, which cuda_std 0.2 cannot express:
/// the PTX builder writes them as `.maxntid` / `.minnctapersm`, so ptxas caps the registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchBounds {
    pub kernel: &'static str,
    pub max_threads: u32,
    pub min_blocks_per_sm: u32,
}

/// The launch bounds of each family that has some.
const FAMILY_BOUNDS: [&[LaunchBounds]; 5] =
    [matmul::SGEMM_BOUNDS, &scan::BOUNDS, &histogram::F32_BOUNDS, &fit::BOUNDS, &background::BOUNDS];

/// Every kernel that has launch bounds.
pub const LAUNCH_BOUNDS: &[LaunchBounds] = &flatten::<{ total(&FAMILY_BOUNDS) }>(&FAMILY_BOUNDS);

/// How many bounds `lists` hold together.
const fn total(lists: &[&[LaunchBounds]]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < lists.len() {
        n += lists[i].len();
        i += 1;
    }
    n
}

/// `lists` one after another, as one array of their `N` ([`total`]) bounds.
const fn flatten<const N: usize>(lists: &[&[LaunchBounds]]) -> [LaunchBounds; N] {
    let mut out = [lists[0][0]; N];
    let (mut list, mut at, mut i) = (0, 0, 0);
    while i < N {
        while at == lists[list].len() {
            list += 1;
            at = 0;
        }
        out[i] = lists[list][at];
        at += 1;
        i += 1;
    }
    out
}

/// Launch shapes of the element-wise kernels with 16-byte accesses.
pub mod vector {
    /// Groups of four elements each thread of `vector_add_vec4` adds.
    pub const QUADS_PER_THREAD: usize = 4;
    /// Elements one block of `vector_add_vec4` covers.
    pub const fn elements_per_block(block: usize) -> usize {
        4 * QUADS_PER_THREAD * block
    }
}

/// Launch shapes of the transpose kernels (`kernels/src/transpose.rs`): a block of
/// `TILE × BLOCK_ROWS` threads transposes a `TILE × TILE` tile.
pub mod transpose {
    /// Side of the square tile of the naive, shared and padded kernels.
    pub const TILE: usize = 32;
    /// Rows of threads per block: each thread takes TILE / BLOCK_ROWS rows of the tile.
    pub const BLOCK_ROWS: usize = 8;
    /// `transpose_padded_64`: a 64 × 64 tile, 16 of its rows per thread.
    pub const WIDE_TILE: usize = 64;
    pub const WIDE_BLOCK_ROWS: usize = 4;
}
