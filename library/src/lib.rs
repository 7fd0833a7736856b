//! CUDA kernels written in Rust.

pub use gpu::{DeviceArray, DeviceMatrix, DeviceVector, Gpu, GpuError, GpuResult};

pub mod check;
pub mod data;
pub mod gpu;
pub mod stats;
pub mod tuning;

pub mod compact;
pub mod conv1d;
pub mod conv2d;
pub mod counter;
pub mod histogram;
pub mod label;
pub mod matmul;
pub mod measure;
pub mod reduce;
pub mod saxpy;
pub mod scan;
pub mod select;
pub mod transpose;
pub mod vector_add;

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
