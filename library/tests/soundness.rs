//! Regression tests for the ways safe code could once reach undefined behaviour: memory freed
//! under a copy or a kernel still using it, and arrays of one GPU used on another. (Private
//! `Gpu` fields and the scan's scratch are compile-time properties, tested by `compile_fail`
//! doctests on `Gpu` and on the scan bindings.) Without a GPU each test says it skipped.

mod common;

use common::gpu;
use cuda_kernels::gpu::{Gpu, Readback};
use cuda_kernels::matmul::{gemm, Dtype};
use cuda_kernels::DeviceMatrix;

/// A copy back whose `Pending` is forgotten may still be writing its page-locked memory, so
/// dropping the `Readback` must leak that memory, not free it.
#[test]
fn a_forgotten_read_back_leaks_its_memory() {
    let Some(gpu) = gpu("a_forgotten_read_back_leaks_its_memory") else { return };
    let values = DeviceMatrix::<f32>::zeros(&gpu, (1, 1 << 20)).unwrap();
    let source = gpu.upload("values", &vec![1.5f32; 1 << 20]).unwrap();
    let readback = Readback::<f32>::new(4).unwrap();
    let address = readback.host_address().unwrap();
    let pending = readback.start::<4>("values", gpu.stream(), &source).unwrap();
    std::mem::forget(pending);
    drop(readback);
    gpu.synchronize("the forgotten copy").unwrap();
    // Page-locked memory that was freed is no longer known to the driver.
    let mut flags = 0u32;
    // SAFETY: reads the flags of a host address into a local; an unknown address is an error.
    let known = unsafe { cust::sys::cuMemHostGetFlags(&mut flags, address as *mut std::ffi::c_void) };
    assert_eq!(known, cust::sys::CUresult::CUDA_SUCCESS, "the page-locked memory was freed under the copy");
    drop(values);
}

/// Dropping an array waits for the last work queued that uses it: after the drop, the product
/// that read it has finished, and nothing else is queued.
#[test]
fn dropping_an_array_waits_for_its_last_use() {
    let Some(gpu) = gpu("dropping_an_array_waits_for_its_last_use") else { return };
    let side = 4096;
    let a = DeviceMatrix::<f32>::zeros(&gpu, (side, side)).unwrap();
    let b = DeviceMatrix::<f32>::zeros(&gpu, (side, side)).unwrap();
    let mut c = DeviceMatrix::<f32>::zeros(&gpu, (side, side)).unwrap();
    gemm(&gpu, &a, &b, &mut c, Dtype::F32).unwrap();
    drop(a);
    // SAFETY: asks about the GPU's own, live stream.
    let status = unsafe { cust::sys::cuStreamQuery(gpu.stream().as_inner()) };
    assert_eq!(status, cust::sys::CUresult::CUDA_SUCCESS, "the product reading A was still running when A was freed");
    drop((b, c));
}

/// Two `Gpu`s queue work on two streams, not ordered with each other: an array of one is
/// refused by the other.
#[test]
fn arrays_of_another_gpu_are_refused() {
    let Some(first) = gpu("arrays_of_another_gpu_are_refused") else { return };
    let second = Gpu::new().unwrap();
    let a = DeviceMatrix::<f32>::zeros(&first, (8, 8)).unwrap();
    let b = DeviceMatrix::<f32>::zeros(&second, (8, 8)).unwrap();
    let mut c = DeviceMatrix::<f32>::zeros(&second, (8, 8)).unwrap();
    let refused = gemm(&second, &a, &b, &mut c, Dtype::F32).unwrap_err().to_string();
    assert!(refused.contains("was passed to GPU"), "{refused}");
    // The same arrays on their own GPU are fine, even after the other was used last.
    let mut own = DeviceMatrix::<f32>::zeros(&first, (8, 8)).unwrap();
    gemm(&first, &a, &a, &mut own, Dtype::F32).unwrap();
    assert_eq!(own.to_array(&first).unwrap().sum(), 0.0);
}
