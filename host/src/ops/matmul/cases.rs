//! The launch checks' cases of the matmul bindings ([`crate::registry::Kernel::launch_cases`]):
//! the f32 ladder's, split k's and its reduction's, the tensor-core products' and the
//! conversions'.

use super::split::{F32Split, ReduceArgs, SgemmSplitArgs, F32_SPLIT, F32_SPLIT_ASYNC, REDUCE};
use super::{ConvertArgs, ConvertTransposedArgs, MmaArgs, SgemmArgs, TensorInput, CONVERT_TRANSPOSED};
use crate::launch_cases::{shifted, vector_access, Args, Cases, LaunchCases, Memory};
use cust::memory::{DeviceCopy, DevicePointer, DeviceSlice};
use interface::matmul::padded;

/// The cases of `kernel`, one of matmul's.
pub(super) fn launch_cases(kernel: &str, memory: &mut Memory) -> LaunchCases {
    let vector = vector_access(kernel);
    let mut refused: Vec<(String, Args)> = Vec::new();
    let valid: Args = match kernel {
        CONVERT_TRANSPOSED => {
            let (rows, cols) = (37, 13);
            let (src, dst) = (memory.f32s(rows * cols), memory.f32s(cols * padded(rows)));
            let with = |src, dst, rows, cols| -> Args { Box::new(ConvertTransposedArgs { src, dst, rows, cols }) };
            refused.push(("destination unpadded".into(), with(src, memory.f32s(rows * cols), rows, cols)));
            refused.push(("source short".into(), with(memory.f32s(rows * cols - 1), dst, rows, cols)));
            refused.push(("destination over the source".into(), with(src, memory.same_memory(src), rows, cols)));
            refused.push(("dimensions overflow".into(), with(src, dst, usize::MAX, 2)));
            with(src, dst, rows, cols)
        }
        F32_SPLIT => split_cases(F32Split::Vec4, memory, &mut refused),
        F32_SPLIT_ASYNC => split_cases(F32Split::Async, memory, &mut refused),
        REDUCE => reduce_cases(memory, &mut refused),
        _ if kernel.starts_with("convert_tf32") => convert_cases::<f32>(memory, &mut refused),
        _ if kernel.starts_with("convert_") => convert_cases::<u16>(memory, &mut refused),
        _ if kernel.starts_with("matmul_mma_tf32") => mma_cases::<f32>(memory, &mut refused),
        _ if kernel.starts_with("matmul_mma_") => mma_cases::<u16>(memory, &mut refused),
        _ => {
            let (m, n, k) = (64, 48, 32);
            let (a, b, c) = (memory.f32s(m * k), memory.f32s(k * n), memory.f32s(m * n));
            let with = |a, b, c, (m, n, k)| -> Args { Box::new(SgemmArgs { a, b, c, m, n, k }) };
            refused.push(("m and n swapped".into(), with(a, b, c, (n, m, k))));
            refused.push(("k one more".into(), with(a, b, c, (m, n, k + 1))));
            refused.push(("C short".into(), with(a, b, memory.f32s(m * n - 1), (m, n, k))));
            refused.push(("C is A".into(), with(a, b, a, (m, n, k))));
            refused.push(("dimensions overflow".into(), with(a, b, c, (usize::MAX, 2, 2))));
            if vector {
                let a2 = shifted(memory.f32s(m * k + 1));
                refused.push(("A misaligned".into(), with(a2, b, c, (m, n, k))));
            }
            with(a, b, c, (m, n, k))
        }
    };
    LaunchCases::Cases(Cases { valid, refused })
}

/// Split k's cases (`step`, 4d or 5d): `splits` layers of partial products over runs of k's
/// slices.
fn split_cases(step: F32Split, memory: &mut Memory, refused: &mut Vec<(String, Args)>) -> Args {
    // 1000 of k is 63 slices of 16 (step 4d), or 125 of 8 (step 5d).
    let (m, n, k, splits) = (67, 45, 1000, 8);
    let (a, b, partials) = (memory.f32s(m * k), memory.f32s(k * n), memory.f32s(splits * m * n));
    let with = |a, b, partials, splits| -> Args { Box::new(SgemmSplitArgs { a, b, partials, m, n, k, splits }) };
    refused.push(("no split".into(), with(a, b, partials, 0)));
    // Splits of one slice fewer than there are slices are runs of 2, so the last ones would
    // be empty.
    let too_many = step.slices(k) - 1;
    refused.push(("an empty split".into(), with(a, b, memory.f32s(too_many * m * n), too_many)));
    refused.push(("A short".into(), with(memory.f32s(m * k - 1), b, partials, splits)));
    refused.push(("partials short".into(), with(a, b, memory.f32s(splits * m * n - 1), splits)));
    refused.push(("partials over B".into(), with(a, b, memory.same_memory(b), splits)));
    refused.push(("A misaligned".into(), with(shifted(memory.f32s(m * k + 1)), b, partials, splits)));
    refused.push(("partials misaligned".into(), with(a, b, shifted(memory.f32s(splits * m * n + 1)), splits)));
    with(a, b, partials, splits)
}

/// The reduction's cases: `splits` layers of partial products summed into C.
fn reduce_cases(memory: &mut Memory, refused: &mut Vec<(String, Args)>) -> Args {
    let (len, splits) = (4100, 7);
    let (partials, c) = (memory.f32s(splits * len), memory.f32s(len));
    let with = |partials, c, len, splits| -> Args { Box::new(ReduceArgs { partials, c, len, splits }) };
    refused.push(("partials short".into(), with(memory.f32s(splits * len - 1), c, len, splits)));
    refused.push(("C short".into(), with(partials, memory.f32s(len - 1), len, splits)));
    refused.push(("C inside the partials".into(), with(partials, memory.same_memory(partials), len, splits)));
    refused.push(("partials misaligned".into(), with(shifted(memory.f32s(splits * len + 1)), c, len, splits)));
    refused.push(("C misaligned".into(), with(partials, shifted(memory.f32s(len + 1)), len, splits)));
    refused.push(("no splits".into(), with(partials, c, len, 0)));
    refused.push(("no elements".into(), with(partials, c, 0, splits)));
    with(partials, c, len, splits)
}

/// The tensor-core products' cases on inputs of `T` (A m × padded k, B k × padded n): short
/// buffers (unpadded inputs among them), swapped dimensions, aliasing, misalignment.
fn mma_cases<T: TensorInput>(memory: &mut Memory, refused: &mut Vec<(String, Args)>) -> Args {
    let (m, n, k) = (67, 45, 13);
    let (a, b, c) = (memory.slice::<T>(m * padded(k)), memory.slice::<T>(k * padded(n)), memory.f32s(m * n));
    let with = |a, b, c, (m, n, k)| -> Args { Box::new(MmaArgs::<T> { a, b, c, m, n, k }) };
    refused.push(("A unpadded".into(), with(memory.slice(m * k), b, c, (m, n, k))));
    refused.push(("B unpadded".into(), with(a, memory.slice(k * n), c, (m, n, k))));
    refused.push(("m and n swapped".into(), with(a, b, c, (n, m, k))));
    refused.push(("C short".into(), with(a, b, memory.f32s(m * n - 1), (m, n, k))));
    refused.push(("C is A".into(), with(a, b, memory.same_memory(a), (m, n, k))));
    refused.push(("dimensions overflow".into(), with(a, b, c, (2, 2, usize::MAX))));
    refused.push(("A misaligned".into(), with(shifted(memory.slice(m * padded(k) + 1)), b, c, (m, n, k))));
    refused.push(("C misaligned".into(), with(a, b, shifted(memory.f32s(m * n + 1)), (m, n, k))));
    with(a, b, c, (m, n, k))
}

/// The conversions' cases into `T`: a short destination (unpadded), overlap, misalignment.
fn convert_cases<T: TensorInput>(memory: &mut Memory, refused: &mut Vec<(String, Args)>) -> Args {
    let (rows, cols) = (37, 13);
    let (src, dst) = (memory.f32s(rows * cols), memory.slice::<T>(rows * padded(cols)));
    let with = |src, dst, rows, cols| -> Args { Box::new(ConvertArgs::<T> { src, dst, rows, cols }) };
    refused.push(("destination unpadded".into(), with(src, memory.slice(rows * cols), rows, cols)));
    refused.push(("source short".into(), with(memory.f32s(rows * cols - 1), dst, rows, cols)));
    refused.push(("destination over the source".into(), with(src, memory.same_memory(src), rows, cols)));
    refused.push(("dimensions overflow".into(), with(src, dst, 2, usize::MAX)));
    let misaligned = Box::leak(Box::new(memory.slice::<u8>((rows * padded(cols) + 1) * 4).index(2..)));
    refused.push(("destination misaligned".into(), with(src, output_word(misaligned), rows, cols)));
    with(src, dst, rows, cols)
}

/// `buffer`'s memory seen as `U`s: a buffer of another type over it.
fn output_word<T: DeviceCopy, U: DeviceCopy>(buffer: &DeviceSlice<T>) -> &'static DeviceSlice<U> {
    let len = buffer.len() * std::mem::size_of::<T>() / std::mem::size_of::<U>();
    // SAFETY: the same memory as `buffer` (made up or kept alive by `Memory`), which the checks
    // only measure: every launch with it is refused before a kernel could run.
    let slice = unsafe { DeviceSlice::from_raw_parts(DevicePointer::from_raw(buffer.as_device_ptr().as_raw()), len) };
    Box::leak(Box::new(slice))
}
