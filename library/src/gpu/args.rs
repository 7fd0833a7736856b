//! Typed kernel arguments: the one place where Rust values become a kernel's raw parameter list.
//!
//! Every kernel is an `unsafe fn` on the GPU side: it trusts its launcher for the lengths of its
//! buffers, their alignment, that what it writes aliases nothing it reads, and its launch shape.
//! Each kernel signature has one host binding, a struct implementing [`KernelArgs`] beside its
//! family (`ops/<family>.rs`): its fields are the parameters with their Rust types, its
//! `checked_config` establishes exactly what the kernels' `# Safety` sections ask for and returns
//! the only launch shape they are given, and its `params` lists the values in each kernel's order.
//! [`Gpu::launch`](super::Gpu::launch) checks, then launches; no safe function takes a raw
//! parameter list.

use super::{GpuError, GpuResult, LaunchConfig};
use cust::memory::{DeviceCopy, DeviceSlice};
use std::ffi::c_void;

/// The most parameters a kernel of this project takes (a test holds every PTX entry to it).
const MAX_PARAMS: usize = 16;

/// A kernel's parameter values as `cuLaunchKernel` reads them: each one's bytes, and its size.
/// A `&[T]` parameter is two values, its pointer and its length.
pub struct Params {
    values: [[u8; 8]; MAX_PARAMS],
    sizes: [usize; MAX_PARAMS],
    count: usize,
}

impl Default for Params {
    fn default() -> Self {
        Self { values: [[0; 8]; MAX_PARAMS], sizes: [0; MAX_PARAMS], count: 0 }
    }
}

impl Params {
    /// An empty parameter list.
    pub fn new() -> Self {
        Self::default()
    }

    /// A scalar parameter (`usize`, `u32`, `f32`, a device address).
    pub fn value<T: bytemuck::NoUninit>(mut self, value: T) -> Self {
        let bytes = bytemuck::bytes_of(&value);
        assert!(bytes.len() <= 8 && self.count < MAX_PARAMS, "a parameter list this project's kernels never have");
        self.values[self.count][..bytes.len()].copy_from_slice(bytes);
        self.sizes[self.count] = bytes.len();
        self.count += 1;
        self
    }

    /// A `&[T]` parameter: the buffer's address, then its length.
    pub fn slice<T: DeviceCopy>(self, buffer: &DeviceSlice<T>) -> Self {
        self.pointer(buffer).value(buffer.len())
    }

    /// A `*mut T` parameter: the buffer's address.
    pub fn pointer<T: DeviceCopy>(self, buffer: &DeviceSlice<T>) -> Self {
        self.value(buffer.as_device_ptr().as_raw())
    }

    /// The size in bytes of each parameter, in order: what the PTX entry must declare.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes[..self.count]
    }

    /// A pointer to each value, as `cuLaunchKernel` wants them (the first `count`); valid
    /// while `self` is.
    pub fn pointers(&mut self) -> ([*mut c_void; MAX_PARAMS], usize) {
        let mut pointers = [std::ptr::null_mut(); MAX_PARAMS];
        for (pointer, value) in pointers.iter_mut().zip(&mut self.values) {
            *pointer = value.as_mut_ptr() as *mut c_void;
        }
        (pointers, self.count)
    }
}

/// The host binding of a kernel signature: the arguments of one launch.
///
/// # Safety
/// An implementation promises, for every kernel that `checked_config` accepts:
/// - `params(kernel)` lists the values in that kernel's parameter order, each of its
///   parameter's size;
/// - when `checked_config` returns `Ok`, launching the kernel with `params` on the returned
///   shape meets every requirement of the kernel's `# Safety` section: no access outside the
///   buffers, the alignment it assumes, no buffer it writes overlapping one it reads, and the
///   block, grid and shared memory it was written for.
///
/// `host/tests/launch_checks.rs` compares `params` with the PTX entries and drives every
/// binding with short buffers and mismatched dimensions.
pub unsafe trait KernelArgs {
    /// Checks these arguments for `kernel` and returns its launch shape; an error for a kernel
    /// that does not take them, or arguments it cannot safely run on.
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig>;

    /// The parameter values of `kernel` (one `checked_config` accepted), in its order.
    fn params(&self, kernel: &str) -> Params;
}

/// The error of a launch refused before it happened.
pub fn refuse(kernel: &str, reason: impl Into<String>) -> GpuError {
    GpuError::InvalidLaunch { kernel: kernel.to_string(), reason: reason.into() }
}

/// An error unless `kernel` is one of `kernels`, the kernels of a binding.
pub fn require_kernel(kernel: &str, kernels: &[&str], binding: &str) -> GpuResult<()> {
    if kernels.contains(&kernel) {
        Ok(())
    } else {
        Err(refuse(kernel, format!("it does not take {} arguments", binding)))
    }
}

/// `a · b`, or an error when it overflows (dimensions no buffer could hold).
pub fn product(kernel: &str, a: usize, b: usize) -> GpuResult<usize> {
    a.checked_mul(b).ok_or_else(|| refuse(kernel, format!("{a} × {b} elements overflow")))
}

/// An error unless `buffer` holds at least `needed` elements.
pub fn require_len<T: DeviceCopy>(kernel: &str, what: &str, buffer: &DeviceSlice<T>, needed: usize) -> GpuResult<()> {
    if buffer.len() >= needed {
        Ok(())
    } else {
        Err(refuse(kernel, format!("{what} holds {} elements, the launch needs {needed}", buffer.len())))
    }
}

/// An error unless `buffer` starts on an `align`-byte boundary (16 for the kernels that move
/// four floats per access).
pub fn require_aligned<T: DeviceCopy>(kernel: &str, what: &str, buffer: &DeviceSlice<T>, align: u64) -> GpuResult<()> {
    let address = buffer.as_device_ptr().as_raw();
    if address.is_multiple_of(align) {
        Ok(())
    } else {
        Err(refuse(kernel, format!("{what} at {address:#x} is not {align}-byte aligned")))
    }
}

/// An error when the first `written` elements of `output` overlap the first `read` elements of
/// `input`: the kernel would write memory it holds as a `&[T]`.
pub fn require_disjoint<T: DeviceCopy, U: DeviceCopy>(
    kernel: &str,
    (output_name, output, written): (&str, &DeviceSlice<T>, usize),
    (input_name, input, read): (&str, &DeviceSlice<U>, usize),
) -> GpuResult<()> {
    let span = |start: u64, elements: usize, size: usize| start..start + (elements * size) as u64;
    let out = span(output.as_device_ptr().as_raw(), written, std::mem::size_of::<T>());
    let inp = span(input.as_device_ptr().as_raw(), read, std::mem::size_of::<U>());
    if out.is_empty() || inp.is_empty() || out.end <= inp.start || inp.end <= out.start {
        Ok(())
    } else {
        Err(refuse(kernel, format!("{output_name} overlaps {input_name}, which the kernel reads while writing it")))
    }
}

#[cfg(test)]
mod tests {
    use super::MAX_PARAMS;
    use crate::gpu::{HOPPER_PTX, KERNELS_PTX};

    #[test]
    fn no_kernel_takes_more_parameters_than_a_list_holds() {
        for ptx in [KERNELS_PTX, HOPPER_PTX] {
            for entry in ptx.split(".entry ").skip(1) {
                let (name, rest) = entry.split_once('(').expect("an entry's parameter list");
                let list = &rest[..rest.find(')').expect("the end of a parameter list")];
                let count = list.matches(".param").count();
                assert!(count <= MAX_PARAMS, "{name} takes {count} parameters, a list at most {MAX_PARAMS}");
            }
        }
    }
}
