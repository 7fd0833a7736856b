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

/// The first elements of a buffer as the overlap checks see them: its name in their errors and
/// the bytes those elements take.
#[derive(Debug, Clone)]
pub struct Span<'a> {
    name: &'a str,
    bytes: std::ops::Range<u64>,
}

impl<'a> Span<'a> {
    /// The first `len` elements of `buffer`, called `name` in errors.
    pub fn of<T: DeviceCopy>(name: &'a str, buffer: &DeviceSlice<T>, len: usize) -> Self {
        let start = buffer.as_device_ptr().as_raw();
        Span { name, bytes: start..start + (len * std::mem::size_of::<T>()) as u64 }
    }

    /// Whether both take bytes and share one.
    fn overlaps(&self, other: &Span) -> bool {
        let (a, b) = (&self.bytes, &other.bytes);
        !a.is_empty() && !b.is_empty() && a.start < b.end && b.start < a.end
    }
}

/// An error when a buffer the kernel writes overlaps another that it writes or one that it
/// reads: each of `written` is checked against those after it in `written`, then against every
/// one of `read` (buffers that are only read may share memory).
///
/// ```
/// use cuda_kernels::gpu::{require_apart, Span};
/// use cust::memory::{DevicePointer, DeviceSlice};
///
/// // SAFETY: made-up addresses, only measured by the checks, never dereferenced.
/// let at = |address: u64, len: usize| unsafe { DeviceSlice::<f32>::from_raw_parts(DevicePointer::from_raw(address), len) };
/// let (input, output, scratch) = (at(0x1000, 64), at(0x1100, 64), at(0x1180, 16));
/// let read = [Span::of("the input", &input, 64)];
/// assert!(require_apart("k", &[Span::of("the output", &output, 64)], &read).is_ok());
/// // The output's 256 bytes reach the scratch's.
/// let written = [Span::of("the output", &output, 64), Span::of("the scratch", &scratch, 16)];
/// assert!(require_apart("k", &written, &read).is_err());
/// ```
pub fn require_apart(kernel: &str, written: &[Span], read: &[Span]) -> GpuResult<()> {
    for (i, output) in written.iter().enumerate() {
        if let Some(input) = written[i + 1..].iter().chain(read).find(|input| output.overlaps(input)) {
            let (output, input) = (output.name, input.name);
            return Err(refuse(kernel, format!("{output} overlaps {input}, which the kernel reads while writing it")));
        }
    }
    Ok(())
}

/// An error when the first `written` elements of `output` overlap the first `read` elements of
/// `input`: the kernel would write memory it holds as a `&[T]`. [`require_apart`] for one of each.
pub fn require_disjoint<T: DeviceCopy, U: DeviceCopy>(
    kernel: &str,
    (output_name, output, written): (&str, &DeviceSlice<T>, usize),
    (input_name, input, read): (&str, &DeviceSlice<U>, usize),
) -> GpuResult<()> {
    require_apart(kernel, &[Span::of(output_name, output, written)], &[Span::of(input_name, input, read)])
}

#[cfg(test)]
mod tests {
    use super::{require_apart, Span, MAX_PARAMS};
    use crate::gpu::{HOPPER_PTX, KERNELS_PTX};
    use cust::memory::{DevicePointer, DeviceSlice};

    #[test]
    fn written_buffers_are_apart_from_each_other_and_from_the_read_ones() {
        // SAFETY: made-up addresses, only measured: nothing dereferences them.
        let at = |address: u64, len: usize| unsafe {
            DeviceSlice::<f32>::from_raw_parts(DevicePointer::from_raw(address), len)
        };
        let (a, b, c, d, e) = (at(0x1000, 16), at(0x1040, 16), at(0x1030, 4), at(0x1080, 0), at(0x1070, 8));
        let span = |name, slice: &DeviceSlice<f32>| Span::of(name, slice, slice.len());
        // Apart: a's 64 bytes end where b's start; an empty span overlaps nothing.
        assert!(require_apart("k", &[span("a", &a), span("b", &b)], &[span("d", &d)]).is_ok());
        // Two read spans may overlap (c is inside a).
        assert!(require_apart("k", &[span("b", &b)], &[span("a", &a), span("c", &c)]).is_ok());
        let error = |written: &[Span], read: &[Span]| require_apart("k", written, read).unwrap_err().to_string();
        assert!(error(&[span("a", &a), span("c", &c)], &[]).contains("a overlaps c"), "two written");
        assert!(error(&[span("b", &b)], &[span("d", &d), span("e", &e)]).contains("b overlaps e"), "written and read");
    }

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
