//! What the launch checks (`host/tests/launch_checks.rs`) drive each kernel's binding with:
//! arguments it must accept and arguments it must refuse, which each family's registry entry
//! builds ([`crate::registry::Kernel::launch_cases`]) so that a new family brings its own.
//!
//! Without a GPU the slices are at made-up addresses, which the checks measure but never
//! dereference; with one, they are real (short, misaligned, overlapping) buffers, and every
//! launch of a refused case must be refused before a kernel runs.
#![doc(hidden)]

use crate::gpu::{Gpu, KernelArgs};
use cust::memory::{DeviceBuffer, DeviceCopy, DevicePointer, DeviceSlice};

/// The arguments of one launch.
pub type Args = Box<dyn KernelArgs>;

/// One kernel's cases: arguments it must accept, and ones it must refuse, each with what is
/// wrong with them. The valid ones must also be refused for a kernel of another family.
pub struct Cases {
    pub valid: Args,
    pub refused: Vec<(String, Args)>,
}

/// What a family gives the launch checks for one of its kernels.
pub enum LaunchCases {
    /// Arguments the checks build, check and launch.
    Cases(Cases),
    /// Only the library builds the kernel's arguments: the scan and compaction bindings, which
    /// `Scanner` builds on scratch it zeroes before each launch (their look-back hangs on any
    /// other). Their checks on made-up addresses are unit tests beside them in the library; on
    /// the GPU, the launch checks give `Scanner` bad buffers instead.
    BuiltByLibrary,
}

/// Where the slices of the cases come from: made up (no GPU) or allocated on the GPU.
pub struct Memory<'g>(Source<'g>);

enum Source<'g> {
    MadeUp { next: u64 },
    Real { _gpu: &'g Gpu, buffers: Vec<DeviceBuffer<u8>> },
}

impl<'g> Memory<'g> {
    /// Slices at made-up addresses, which no allocation holds.
    ///
    /// # Safety
    /// Its slices, and the views [`Memory::same_memory`] makes, must only be measured: never
    /// launched but where the launch is refused before a kernel runs.
    pub unsafe fn made_up() -> Memory<'static> {
        Memory(Source::MadeUp { next: 0 })
    }

    /// Slices of buffers allocated (zeroed) on `gpu`, which live as long as the `Memory`.
    ///
    /// # Safety
    /// As for [`Memory::made_up`], and none of its slices may be used after it is dropped.
    pub unsafe fn on(gpu: &'g Gpu) -> Self {
        Memory(Source::Real { _gpu: gpu, buffers: Vec::new() })
    }

    /// A new buffer of `len` elements, disjoint from every other, 256-byte aligned: at the next
    /// made-up address 1 MiB on, or allocated (zeroed) on the GPU.
    pub fn slice<T: DeviceCopy>(&mut self, len: usize) -> &'static DeviceSlice<T> {
        let address = match &mut self.0 {
            Source::MadeUp { next } => {
                *next += 1 << 20;
                *next
            }
            Source::Real { buffers, .. } => {
                let bytes = (len * std::mem::size_of::<T>()).max(1);
                let buffer = DeviceBuffer::<u8>::zeroed(bytes).expect("a small allocation");
                buffers.push(buffer);
                buffers.last().expect("just pushed").as_device_ptr().as_raw()
            }
        };
        // SAFETY: the address is either one no allocation holds, which only the checks look at
        // (address and length), or the start of a buffer of `len` elements that `self` keeps
        // alive; the constructors' contract keeps every launch of it refused.
        let slice = unsafe { DeviceSlice::from_raw_parts(DevicePointer::from_raw(address), len) };
        Box::leak(Box::new(slice))
    }

    pub fn f32s(&mut self, len: usize) -> &'static DeviceSlice<f32> {
        self.slice(len)
    }

    pub fn u32s(&mut self, len: usize) -> &'static DeviceSlice<u32> {
        self.slice(len)
    }

    /// A slice of `U` at the address of `slice`, as long: memory two arguments share.
    pub fn same_memory<T: DeviceCopy, U: DeviceCopy>(&self, slice: &DeviceSlice<T>) -> &'static DeviceSlice<U> {
        let (address, len) = (DevicePointer::from_raw(slice.as_device_ptr().as_raw()), slice.len());
        // SAFETY: only the checks look at it (address and length): the constructors' contract
        // keeps each launch with it refused before a kernel could run.
        let view = unsafe { DeviceSlice::from_raw_parts(address, len) };
        Box::leak(Box::new(view))
    }
}

/// Refused cases made from valid arguments: each call takes a fresh set from `make` and applies
/// one change to it.
pub fn changes<A: KernelArgs + 'static>(make: impl Fn() -> A) -> impl Fn(&dyn Fn(&mut A)) -> Args {
    move |change| {
        let mut args = make();
        change(&mut args);
        Box::new(args)
    }
}

/// The same elements one `T` further on: misaligned for 16-byte accesses.
pub fn shifted<T: DeviceCopy>(slice: &DeviceSlice<T>) -> &'static DeviceSlice<T> {
    Box::leak(Box::new(slice.index(1..)))
}

/// Whether `kernel` is written with 16-byte accesses of its buffers (its source dereferences
/// four-element groups), so its binding must refuse misaligned ones.
pub fn vector_access(kernel: &str) -> bool {
    let sgemm_from_step_4a = ["matmul_v", "matmul_cp_async", "matmul_warps", "matmul_async", "matmul_mma"];
    kernel.contains("vec4")
        || kernel == "reduce_moments"
        || kernel == "matmul_split_reduce"
        || sgemm_from_step_4a.iter().any(|prefix| kernel.starts_with(prefix))
}
