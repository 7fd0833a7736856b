//! CUDA kernels written in Rust, behind a small typed API, each checked against a CPU
//! reference that sits beside it.
//!
//! The kernels are Rust too (`kernels/` in the repository, `no_std` on `cuda_std`), compiled
//! to PTX by `rustc_codegen_nvvm`; the PTX ships with this crate, so it builds on stable Rust
//! with the CUDA driver alone.
//!
//! # What is here
//!
//! One module per kernel family, each with one function per job. Every function comes in two
//! forms: over [`DeviceArray`]s that stay on the GPU between calls, and over `ndarray` views
//! (`*_array`: upload, run, read back).
//!
//! | job | functions |
//! |---|---|
//! | C = A × B in f32, tf32, bf16 or f16 (f32 out) | [`matmul::gemm`], [`matmul::gemm_array`] |
//! | sum; count, mean, M2, min, max inside a window | [`reduce::sum`], [`reduce::moments`] |
//! | median, k-th smallest | [`select::median`], [`select::kth`] |
//! | exclusive prefix sum | [`scan::exclusive_scan`] |
//! | the values inside a window, in order | [`compact::compact`] |
//! | histogram (u32, or f32 as `np.histogram` bins) | [`histogram::histogram_u32`], [`histogram::histogram_f32`] |
//! | transpose | [`transpose::transpose`] |
//! | 2-D and 1-D filters (cross-correlation, zero padding) | [`conv2d::conv2d`], [`conv1d::conv1d`] |
//! | connected components, as `scipy.ndimage.label` | [`label::label`], [`label::label_array`] |
//! | per-component pixels, flux, centroid, peak, box | [`measure::measure`], [`measure::measure_array`] |
//! | background and noise maps (σ-clipped, on a grid, interpolated), as BANE makes them | [`background::background`], [`background::background_array`] |
//! | elliptical Gaussians fitted to each island's summits (Levenberg–Marquardt), with errors | [`fit::fit`], [`fit::fit_array`] |
//! | c = a + b, y = a·x + y | [`vector_add::vector_add`], [`saxpy::saxpy`] |
//!
//! A radio source finder built on these families is the `radio` crate of the same repository.
//!
//! # How to call it
//!
//! ```
//! # fn main() -> cuda_kernels::GpuResult<()> {
//! use cuda_kernels::matmul::{gemm, Dtype};
//! use cuda_kernels::{DeviceMatrix, Gpu};
//! use ndarray::Array2;
//!
//! # let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
//! // let gpu = Gpu::new()?;                                  // device 0; Gpu::on(i) for another
//! let a = DeviceMatrix::from_array(&gpu, Array2::<f32>::eye(64).view())?;
//! let b = DeviceMatrix::from_array(&gpu, Array2::from_elem((64, 32), 2.0f32).view())?;
//! let mut c = DeviceMatrix::zeros(&gpu, (64, 32))?;
//! gemm(&gpu, &a, &b, &mut c, Dtype::Bf16)?;                  // queued on the GPU's stream
//! assert_eq!(c.to_array(&gpu)?, Array2::from_elem((64, 32), 2.0f32)); // waits, copies back
//! # let _: Option<Gpu> = None;
//! # Ok(())
//! # }
//! ```
//!
//! Errors are [`GpuError`]s that say what was being done: no GPU, a shape that does not fit,
//! an array of another GPU, a launch the device cannot run. Nothing panics on bad input.
//!
//! # What runs where
//!
//! - A [`Gpu`] is one device's context, the kernels' modules loaded into it, and one stream.
//!   Every function queues its work on that stream, in order, and returns; only functions
//!   that return host values (a sum, a median, a count) and `to_array` wait.
//! - A [`DeviceArray`] belongs to the `Gpu` that made it, and is refused by another. Outputs
//!   are `&mut`, so no output aliases an input. Dropping an array waits for the last work
//!   that uses it before its memory is freed.
//! - Each function picks its kernel itself: the step that is fastest in general for its
//!   family, or for products the one `host matmul --tune` recorded for this GPU and shape
//!   class. Its `*_with` form takes the step as a typed enum.
//! - The Hopper kernels (wgmma, TMA) load on compute capability 9.0 only; elsewhere products
//!   run on mma.sync.
//! - Below the functions are the bindings: one struct per kernel signature that checks its
//!   buffers' lengths, alignment and overlap and the launch shape before [`Gpu::launch`]
//!   launches it. The `host` command line runs every step of every family through them.
//!   Launching at that level, on buffers the library does not track, is `unsafe`: the caller
//!   promises that the buffers outlive the queued work, which the functions above keep for
//!   you. Everything safe is checked and tracked.

#![deny(missing_docs)]

pub use gpu::{DeviceArray, DeviceMatrix, DeviceVector, Gpu, GpuError, GpuResult};
pub use interface::window::Window;

pub mod check;
pub mod data;
pub mod gpu;
pub mod stats;
pub mod tuning;

/// A module per kernel family (`interface::for_each_family!` lists them).
macro_rules! family_modules {
    ($($family:ident),+ $(,)?) => {
        $(pub mod $family;)+
    };
}
interface::for_each_family!(family_modules);

/// A choice among a fixed set of values, each with the name the command line and the reports
/// give it (a kernel step, an element type, a timing mode).
pub trait Named: Copy + 'static {
    /// Every value, in the order they are listed.
    const ALL: &'static [Self];
    /// The value's name.
    fn name(self) -> &'static str;
    /// The value called `name`, if any.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == name)
    }
}

/// A kernel step of a family: one value of an enum that [`variants!`] declares.
pub trait KernelStep: Named {
    /// The kernel this step launches.
    fn kernel(self) -> &'static str;
}

/// Implements [`Named`] and `Display` (the name) for an enum, from each value's name.
#[macro_export]
macro_rules! named {
    ($name:ident { $($variant:ident => $label:literal),+ $(,)? }) => {
        impl $crate::Named for $name {
            const ALL: &'static [$name] = &[$($name::$variant),+];

            fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $label),+
                }
            }
        }

        impl $name {
            /// The name the command line and the reports give this value.
            pub fn name(self) -> &'static str {
                <Self as $crate::Named>::name(self)
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str($crate::Named::name(*self))
            }
        }
    };
}

/// Declares the steps of a family whose variants each launch one kernel: an enum whose values
/// each have the name reports use and the kernel they launch, and the lookups every such
/// family needs.
#[macro_export]
macro_rules! variants {
    ($(#[$meta:meta])* $vis:vis enum $name:ident {
        $($(#[$doc:meta])* $variant:ident => ($label:literal, $kernel:literal)),+ $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $($(#[$doc])* $variant),+
        }

        $crate::named!($name { $($variant => $label),+ });

        impl $crate::KernelStep for $name {
            fn kernel(self) -> &'static str {
                $name::kernel(self)
            }
        }

        impl $name {
            /// Every step, in ladder order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The kernel this step launches.
            pub fn kernel(self) -> &'static str {
                match self {
                    $($name::$variant => $kernel),+
                }
            }

            /// The step that launches `kernel`, or an error naming it when no step does (a
            /// binding refuses kernels that do not take its arguments).
            pub fn named(kernel: &str) -> $crate::gpu::GpuResult<Self> {
                Self::ALL.iter().copied().find(|s| s.kernel() == kernel).ok_or_else(|| {
                    $crate::gpu::refuse(kernel, concat!("it is not one of the ", stringify!($name), " kernels"))
                })
            }

            /// The steps chosen, or all of them when none was.
            pub fn chosen(chosen: &[Self]) -> &[Self] {
                if chosen.is_empty() {
                    Self::ALL
                } else {
                    chosen
                }
            }
        }
    };
}
