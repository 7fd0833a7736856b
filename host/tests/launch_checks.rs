//! The launch checks: every kernel's host binding ([`KernelArgs`]) against the PTX it launches,
//! and against arguments that would let a kernel touch memory it must not.
//!
//! Without a GPU the bindings are driven with device slices at made-up addresses, which the
//! checks measure but never dereference; with one, the same cases are launched for real through
//! [`Gpu::launch`] on real (short, misaligned, overlapping) buffers. Every case must be refused
//! with [`GpuError::InvalidLaunch`], and each family's well-formed arguments must be accepted,
//! so that a check that refuses everything cannot pass.
//!
//! The scan and compaction bindings are the exception: only the library's `Scanner` builds
//! them, on scratch it zeroes before each launch (their look-back hangs on any other), so code
//! here cannot. Their checks on made-up addresses are unit tests beside them
//! (`library/src/scan.rs`, `compact.rs`); on the GPU, `Scanner`'s calls with bad buffers are
//! refused here.

mod common;

use cust::memory::{DeviceBuffer, DeviceCopy, DevicePointer, DeviceSlice};
use host::gpu::{Gpu, GpuError, KernelArgs, HOPPER_PTX, KERNELS_PTX};
use host::ops::conv1d::Conv1dArgs;
use host::ops::conv2d::Conv2dArgs;
use host::ops::counter::CounterArgs;
use host::ops::histogram::{HistogramArgs, Values};
use host::ops::label::{Connectivity, FlattenArgs, MergeArgs, RenumberArgs, TilesArgs};
use host::ops::matmul::hopper::{self, Operands, Precision, Step, TensorMap, TensorMaps, WgmmaArgs};
use host::ops::matmul::{ConvertArgs, ConvertTransposedArgs, MmaArgs, SgemmArgs, TensorInput, CONVERT_TRANSPOSED};
use host::ops::measure::MeasureArgs;
use host::ops::reduce::{MomentsArgs, ReduceArgs, Scratch};
use host::ops::saxpy::SaxpyArgs;
use host::ops::scan::Scanner;
use host::ops::select::{Find, SelectCountArgs};
use host::ops::transpose::TransposeArgs;
use host::ops::vector_add::AddArgs;
use host::ops::FAMILIES;
use interface::reduce::MOMENTS_FIELDS;
use interface::select::{GATHER_CAP, HISTOGRAM_LEN, PASSES, STATE_WORDS};
use interface::window::Window;
use std::collections::BTreeSet;

/// Where the slices of a case come from: made up (no GPU) or allocated on the GPU.
enum Memory<'g> {
    Fake { next: u64 },
    Real { _gpu: &'g Gpu, buffers: Vec<DeviceBuffer<u8>> },
}

impl Memory<'_> {
    /// A new buffer of `len` elements, disjoint from every other, 256-byte aligned: at the next
    /// made-up address 1 MiB on, or allocated (zeroed) on the GPU.
    fn slice<T: DeviceCopy>(&mut self, len: usize) -> &'static DeviceSlice<T> {
        let address = match self {
            Memory::Fake { next } => {
                *next += 1 << 20;
                *next
            }
            Memory::Real { buffers, .. } => {
                let bytes = (len * std::mem::size_of::<T>()).max(1);
                let buffer = DeviceBuffer::<u8>::zeroed(bytes).expect("a small allocation");
                buffers.push(buffer);
                buffers.last().expect("just pushed").as_device_ptr().as_raw()
            }
        };
        // SAFETY: the address is either one no allocation holds, which only the checks look at
        // (address and length), or the start of a buffer of `len` elements that `self` keeps
        // alive; every launch of it in these tests is refused before a kernel could run.
        let slice = unsafe { DeviceSlice::from_raw_parts(DevicePointer::from_raw(address), len) };
        Box::leak(Box::new(slice))
    }

    fn f32s(&mut self, len: usize) -> &'static DeviceSlice<f32> {
        self.slice(len)
    }

    fn u32s(&mut self, len: usize) -> &'static DeviceSlice<u32> {
        self.slice(len)
    }
}

/// A slice of `U` at the address of `slice`, as long: memory two arguments share.
fn same_memory<T: DeviceCopy, U: DeviceCopy>(slice: &DeviceSlice<T>) -> &'static DeviceSlice<U> {
    let (address, len) = (DevicePointer::from_raw(slice.as_device_ptr().as_raw()), slice.len());
    // SAFETY: only the checks look at it (address and length); each launch with it is refused
    // before a kernel could run.
    let view = unsafe { DeviceSlice::from_raw_parts(address, len) };
    Box::leak(Box::new(view))
}

/// The same elements one `T` further on: misaligned for 16-byte accesses.
fn shifted<T: DeviceCopy>(slice: &DeviceSlice<T>) -> &'static DeviceSlice<T> {
    Box::leak(Box::new(slice.index(1..)))
}

type Args = Box<dyn KernelArgs>;

/// One family's cases for `kernel`: arguments it must accept, and ones it must refuse. The
/// valid ones must also be refused for a kernel of another family.
struct Cases {
    valid: Args,
    refused: Vec<(String, Args)>,
}

/// Whether `kernel` is written with 16-byte accesses of its buffers (its source dereferences
/// four-element groups), so its binding must refuse misaligned ones.
fn vector_access(kernel: &str) -> bool {
    let sgemm_from_step_4a = ["matmul_v", "matmul_cp_async", "matmul_warps", "matmul_async", "matmul_mma"];
    kernel.contains("vec4")
        || kernel == "reduce_moments"
        || sgemm_from_step_4a.iter().any(|prefix| kernel.starts_with(prefix))
}

/// The families whose bindings only the library builds (see the module doc).
const BUILT_BY_SCANNER: [&str; 2] = ["scan", "compact"];

/// The families whose arguments this file builds: every kernel but [`BUILT_BY_SCANNER`]'s.
fn kernels_with_cases() -> Vec<(&'static str, &'static str)> {
    kernels().into_iter().filter(|(family, _)| !BUILT_BY_SCANNER.contains(family)).collect()
}

fn cases(family: &str, kernel: &str, memory: &mut Memory) -> Cases {
    let vector = vector_access(kernel);
    let mut refused: Vec<(String, Args)> = Vec::new();
    let valid: Args = match family {
        "vector-add" => {
            let n = 1000;
            let (a, b, c) = (memory.f32s(n), memory.f32s(n), memory.f32s(n));
            refused.push(("b short".into(), Box::new(AddArgs { a, b: memory.f32s(n - 1), c, block: 256 })));
            refused.push(("c short".into(), Box::new(AddArgs { a, b, c: memory.f32s(n - 1), block: 256 })));
            refused.push(("c is a".into(), Box::new(AddArgs { a, b, c: a, block: 256 })));
            if vector {
                refused.push(("a misaligned".into(), Box::new(AddArgs { a: shifted(a), b, c, block: 256 })));
            }
            Box::new(AddArgs { a, b, c, block: 256 })
        }
        "saxpy" => {
            let n = 1000;
            let (x, y, grid, block) = (memory.f32s(n), memory.f32s(n), 4, 128);
            refused.push(("y short".into(), Box::new(SaxpyArgs { a: 2.0, x, y: memory.f32s(n - 1), grid, block })));
            refused.push(("y is x".into(), Box::new(SaxpyArgs { a: 2.0, x, y: x, grid, block })));
            if vector {
                let y = shifted(memory.f32s(n + 1));
                refused.push(("y misaligned".into(), Box::new(SaxpyArgs { a: 2.0, x: shifted(x), y, grid, block })));
            }
            Box::new(SaxpyArgs { a: 2.0, x, y, grid, block })
        }
        "counter" => {
            let counter = memory.u32s(1);
            refused.push((
                "no counter".into(),
                Box::new(CounterArgs { counter: memory.u32s(0), threads: 1000, block: 256 }),
            ));
            Box::new(CounterArgs { counter, threads: 1000, block: 256 })
        }
        "histogram" => {
            let (n, bins, grid, block) = (1000, 256, 4, 128);
            let counts = memory.u32s(bins as usize);
            let f32_input = kernel.ends_with("f32");
            let values = if f32_input {
                Values::F32 { values: memory.f32s(n), min: -4.0, max: 4.0 }
            } else {
                Values::U32(memory.u32s(n))
            };
            let with = |values: Values<'static>, bins: u32, counts: &'static DeviceSlice<u32>| -> Args {
                Box::new(HistogramArgs { values, bins, counts, grid, block })
            };
            refused.push(("counts short".into(), with(values, bins, memory.u32s(bins as usize - 1))));
            refused.push(("no bins".into(), with(values, 0, counts)));
            let other_type = if f32_input {
                Values::U32(memory.u32s(n))
            } else {
                Values::F32 { values: memory.f32s(n), min: -4.0, max: 4.0 }
            };
            refused.push(("the other value type".into(), with(other_type, bins, counts)));
            if let Values::F32 { values, .. } = values {
                refused.push(("empty range".into(), with(Values::F32 { values, min: 1.0, max: 1.0 }, bins, counts)));
                refused.push(("NaN range".into(), with(Values::F32 { values, min: f64::NAN, max: 4.0 }, bins, counts)));
                let narrow = Values::F32 { values, min: 0.0, max: 1e-300 };
                refused.push(("a range too narrow for its bins".into(), with(narrow, bins, counts)));
            }
            if vector {
                let misaligned = match values {
                    Values::U32(values) => Values::U32(shifted(values)),
                    Values::F32 { values, min, max } => Values::F32 { values: shifted(values), min, max },
                };
                refused.push(("values misaligned".into(), with(misaligned, bins, counts)));
            }
            with(values, bins, counts)
        }
        "transpose" => {
            let (rows, cols) = (37, 50);
            let (input, output) = (memory.f32s(rows * cols), memory.f32s(rows * cols));
            let with = |input, output, rows, cols| -> Args { Box::new(TransposeArgs { input, output, rows, cols }) };
            refused.push(("one row too many".into(), with(input, output, rows + 1, cols)));
            refused.push(("output short".into(), with(input, memory.f32s(rows * cols - 1), rows, cols)));
            refused.push(("output is input".into(), with(input, input, rows, cols)));
            refused.push(("dimensions overflow".into(), with(input, output, usize::MAX, 2)));
            with(input, output, rows, cols)
        }
        "matmul" if kernel == CONVERT_TRANSPOSED => {
            let (rows, cols) = (37, 13);
            let (src, dst) = (memory.f32s(rows * cols), memory.f32s(cols * 40));
            let with = |src, dst, rows, cols| -> Args { Box::new(ConvertTransposedArgs { src, dst, rows, cols }) };
            refused.push(("destination unpadded".into(), with(src, memory.f32s(rows * cols), rows, cols)));
            refused.push(("source short".into(), with(memory.f32s(rows * cols - 1), dst, rows, cols)));
            refused.push(("destination over the source".into(), with(src, same_memory(src), rows, cols)));
            refused.push(("dimensions overflow".into(), with(src, dst, usize::MAX, 2)));
            with(src, dst, rows, cols)
        }
        "matmul" if kernel.starts_with("convert_tf32") => convert_cases::<f32>(memory, &mut refused),
        "matmul" if kernel.starts_with("convert_") => convert_cases::<u16>(memory, &mut refused),
        "matmul" if kernel.starts_with("matmul_mma_tf32") => mma_cases::<f32>(memory, &mut refused),
        "matmul" if kernel.starts_with("matmul_mma_") => mma_cases::<u16>(memory, &mut refused),
        "matmul" => {
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
        "conv2d" => {
            let (width, height) = (67, 45);
            let radius = kernel.strip_prefix("conv2d_tiled_r").map_or(2, |r| r.parse().expect("a radius"));
            let (input, output) = (memory.f32s(width * height), memory.f32s(width * height));
            let with = |input, output, width, height, radius| -> Args {
                Box::new(Conv2dArgs { input, output, width, height, radius })
            };
            refused.push(("one row too many".into(), with(input, output, width, height + 1, radius)));
            refused.push(("output short".into(), with(input, memory.f32s(width * height - 1), width, height, radius)));
            refused.push(("output is input".into(), with(input, input, width, height, radius)));
            refused.push(("radius past the constant filter".into(), with(input, output, width, height, 4)));
            if kernel != "conv2d_naive" {
                let other = radius % 3 + 1;
                refused.push(("another kernel's radius".into(), with(input, output, width, height, other)));
            }
            with(input, output, width, height, radius)
        }
        "conv1d" => {
            let n = 1001;
            let (input, output) = (memory.f32s(n), memory.f32s(n));
            let with = |input, output, radius| -> Args { Box::new(Conv1dArgs { input, output, radius }) };
            refused.push(("output short".into(), with(input, memory.f32s(n - 1), 3)));
            refused.push(("output is input".into(), with(input, input, 3)));
            refused.push(("radius past the shared halo".into(), with(input, output, 4)));
            if vector {
                refused.push(("input misaligned".into(), with(shifted(input), output, 3)));
            }
            with(input, output, 3)
        }
        "select" => {
            let n = 1001;
            let (values, histogram, state) = (memory.f32s(n), memory.u32s(HISTOGRAM_LEN), memory.u32s(STATE_WORDS));
            let gathered = memory.f32s(GATHER_CAP);
            let window = Window::FINITE;
            let with = |values, state, histogram, gathered, pass, grid| -> Args {
                Box::new(SelectCountArgs { values, window, pass, find: Find::Median, state, histogram, gathered, grid })
            };
            refused
                .push(("histogram short".into(), with(values, state, memory.u32s(HISTOGRAM_LEN - 1), gathered, 0, 4)));
            refused.push(("state short".into(), with(values, memory.u32s(STATE_WORDS - 1), histogram, gathered, 0, 4)));
            refused.push(("gathering short".into(), with(values, state, histogram, memory.f32s(GATHER_CAP - 1), 0, 4)));
            refused.push((
                "gathering misaligned".into(),
                with(values, state, histogram, shifted(memory.f32s(GATHER_CAP + 1)), 0, 4),
            ));
            refused.push(("histogram over the state".into(), with(values, histogram, histogram, gathered, 1, 4)));
            refused.push(("gathering is the values".into(), with(gathered, state, histogram, gathered, 1, 4)));
            let overlapping: &'static DeviceSlice<u32> = Box::leak(Box::new(
                // SAFETY: a view of the values' own addresses, only measured by the checks.
                unsafe {
                    DeviceSlice::from_raw_parts(DevicePointer::from_raw(values.as_device_ptr().as_raw()), HISTOGRAM_LEN)
                },
            ));
            refused.push(("histogram over the values".into(), with(values, state, overlapping, gathered, 0, 4)));
            refused.push(("state over the values".into(), with(values, overlapping, histogram, gathered, 0, 4)));
            refused.push(("a pass past the last".into(), with(values, state, histogram, gathered, PASSES as u32, 4)));
            refused.push(("no blocks".into(), with(values, state, histogram, gathered, 0, 0)));
            refused.push(("values misaligned".into(), with(shifted(values), state, histogram, gathered, 0, 4)));
            with(values, state, histogram, gathered, 1, 4)
        }

        "reduce" => {
            let (n, grid) = (1003, 5);
            let values = memory.f32s(n);
            let scratch = Scratch {
                partials: memory.slice(MOMENTS_FIELDS * n),
                // A sum's grid of at most 64 blocks takes two tickets; the moments take one.
                tickets: memory.u32s(2),
                result: memory.slice(MOMENTS_FIELDS),
            };
            let moments = kernel == "reduce_moments";
            let with = |values: &'static DeviceSlice<f32>, scratch: Scratch<'static>, grid: u32| -> Args {
                if moments {
                    Box::new(MomentsArgs { values, window: Window::new(-0.5, 0.5), scratch, grid })
                } else {
                    Box::new(ReduceArgs { values, scratch, grid })
                }
            };
            refused.push(("no values".into(), with(memory.f32s(0), scratch, grid)));
            let tickets = memory.u32s(if moments { 0 } else { 1 });
            refused.push(("tickets short".into(), with(values, Scratch { tickets, ..scratch }, grid)));
            let fields = if moments { MOMENTS_FIELDS } else { 1 };
            let result = memory.slice(fields - 1);
            refused.push(("result short".into(), with(values, Scratch { result, ..scratch }, grid)));
            // A partial per block: steps 1 and 2 launch 4 blocks for 1003 values, steps 3 and 4
            // two, the grid-stride kernels `grid` (the moments' partials have MOMENTS_FIELDS each).
            let needed = match kernel {
                "reduce_interleaved" | "reduce_sequential" => 4,
                "reduce_first_add" | "reduce_shuffle" => 2,
                "reduce_vec4" => grid as usize,
                _ => MOMENTS_FIELDS * grid as usize,
            };
            let partials = memory.slice(needed - 1);
            refused.push(("partials short".into(), with(values, Scratch { partials, ..scratch }, grid)));
            let aliased = Scratch { result: scratch.partials, ..scratch };
            refused.push(("result is the partials".into(), with(values, aliased, grid)));
            if moments || kernel == "reduce_vec4" {
                refused.push(("no blocks".into(), with(values, scratch, 0)));
                refused.push(("values misaligned".into(), with(shifted(memory.f32s(n + 1)), scratch, grid)));
            }
            if moments {
                let nan = Window::new(f64::NAN, 1.0);
                refused.push(("a NaN bound".into(), Box::new(MomentsArgs { values, window: nan, scratch, grid })));
                refused.push(("the sum's arguments".into(), Box::new(ReduceArgs { values, scratch, grid })));
            } else {
                let window = Window::FINITE;
                refused
                    .push(("the moments' arguments".into(), Box::new(MomentsArgs { values, window, scratch, grid })));
            }
            with(values, scratch, grid)
        }

        "label" => {
            let (width, height) = (67, 45);
            let n = width * height;
            let (image, labels) = (memory.f32s(n), memory.u32s(n));
            let four = Connectivity::Four;
            match kernel {
                "label_tiles" => {
                    let with = |image, labels, width, height| -> Args {
                        Box::new(TilesArgs { image, width, height, level: 0.5, connectivity: four, labels })
                    };
                    refused.push(("one row too many".into(), with(image, labels, width, height + 1)));
                    refused.push(("labels short".into(), with(image, memory.u32s(n - 1), width, height)));
                    refused.push(("labels are the image".into(), with(image, same_memory(image), width, height)));
                    refused.push(("no pixels".into(), with(image, labels, 0, height)));
                    refused.push(("dimensions overflow".into(), with(image, labels, usize::MAX, 2)));
                    with(image, labels, width, height)
                }
                "label_merge" => {
                    let with = |labels, width, height| -> Args {
                        Box::new(MergeArgs { width, height, connectivity: four, labels })
                    };
                    refused.push(("labels short".into(), with(memory.u32s(n - 1), width, height)));
                    refused.push(("no pixels".into(), with(labels, 0, 0)));
                    refused.push(("as many pixels as BACKGROUND".into(), with(labels, 1 << 16, 1 << 16)));
                    with(labels, width, height)
                }
                "label_flatten" => {
                    let roots = memory.u32s(n);
                    let with = |labels, roots, n| -> Args { Box::new(FlattenArgs { labels, roots, n }) };
                    refused.push(("roots short".into(), with(labels, memory.u32s(n - 1), n)));
                    refused.push(("roots are the labels".into(), with(labels, labels, n)));
                    refused.push(("no pixels".into(), with(labels, roots, 0)));
                    with(labels, roots, n)
                }
                _ => {
                    let (ranks, count) = (memory.u32s(n), memory.u32s(1));
                    let with = |labels, ranks, count, n| -> Args { Box::new(RenumberArgs { labels, ranks, count, n }) };
                    refused.push(("ranks short".into(), with(labels, memory.u32s(n - 1), count, n)));
                    refused.push(("no count".into(), with(labels, ranks, memory.u32s(0), n)));
                    refused.push(("ranks are the labels".into(), with(labels, labels, count, n)));
                    refused.push(("the count is a label".into(), with(labels, ranks, labels, n)));
                    refused.push(("no pixels".into(), with(labels, ranks, count, 0)));
                    with(labels, ranks, count, n)
                }
            }
        }
        "measure" => {
            let (width, height, count) = (67, 45, 20);
            let n = width * height;
            let (image, labels, records) = (memory.f32s(n), memory.u32s(n), memory.slice::<f64>(6 * count as usize));
            let with = |image, labels, records, width, height, count| -> Args {
                Box::new(MeasureArgs { image, labels, width, height, records, count })
            };
            refused.push(("one row too many".into(), with(image, labels, records, width, height + 1, count)));
            refused.push(("records short".into(), with(image, labels, records, width, height, count + 1)));
            refused
                .push(("records overlap the image".into(), with(image, labels, same_memory(image), width, height, 1)));
            refused.push(("no pixels".into(), with(image, labels, records, 0, height, count)));
            refused.push(("dimensions overflow".into(), with(image, labels, records, usize::MAX, 2, count)));
            with(image, labels, records, width, height, count)
        }
        other => panic!("no launch-check cases for the family `{other}`: add them here"),
    };
    Cases { valid, refused }
}

/// The tensor-core products' cases on inputs of `T` (A m × padded k, B k × padded n): short
/// buffers (unpadded inputs among them), swapped dimensions, aliasing, misalignment.
fn mma_cases<T: TensorInput>(memory: &mut Memory, refused: &mut Vec<(String, Args)>) -> Args {
    let (m, n, k) = (67, 45, 13);
    let (a, b, c) = (memory.slice::<T>(m * 16), memory.slice::<T>(k * 48), memory.f32s(m * n));
    let with = |a, b, c, (m, n, k)| -> Args { Box::new(MmaArgs::<T> { a, b, c, m, n, k }) };
    refused.push(("A unpadded".into(), with(memory.slice(m * k), b, c, (m, n, k))));
    refused.push(("B unpadded".into(), with(a, memory.slice(k * n), c, (m, n, k))));
    refused.push(("m and n swapped".into(), with(a, b, c, (n, m, k))));
    refused.push(("C short".into(), with(a, b, memory.f32s(m * n - 1), (m, n, k))));
    refused.push(("C is A".into(), with(a, b, same_memory(a), (m, n, k))));
    refused.push(("dimensions overflow".into(), with(a, b, c, (2, 2, usize::MAX))));
    refused.push(("A misaligned".into(), with(shifted(memory.slice(m * 16 + 1)), b, c, (m, n, k))));
    refused.push(("C misaligned".into(), with(a, b, shifted(memory.f32s(m * n + 1)), (m, n, k))));
    with(a, b, c, (m, n, k))
}

/// The conversions' cases into `T`: a short destination (unpadded), overlap, misalignment.
fn convert_cases<T: TensorInput>(memory: &mut Memory, refused: &mut Vec<(String, Args)>) -> Args {
    let (rows, cols) = (37, 13);
    let (src, dst) = (memory.f32s(rows * cols), memory.slice::<T>(rows * 16));
    let with = |src, dst, rows, cols| -> Args { Box::new(ConvertArgs::<T> { src, dst, rows, cols }) };
    refused.push(("destination unpadded".into(), with(src, memory.slice(rows * cols), rows, cols)));
    refused.push(("source short".into(), with(memory.f32s(rows * cols - 1), dst, rows, cols)));
    refused.push(("destination over the source".into(), with(src, same_memory(src), rows, cols)));
    refused.push(("dimensions overflow".into(), with(src, dst, 2, usize::MAX)));
    let misaligned = Box::leak(Box::new(memory.slice::<u8>(rows * 64).index(2..)));
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

/// Every registered kernel with its family's name.
fn kernels() -> Vec<(&'static str, &'static str)> {
    FAMILIES.iter().flat_map(|f| f.kernels().into_iter().map(move |k| (f.name(), k))).collect()
}

/// The PTX of the entry `kernel`, from its name to the next entry, in whichever module has it.
fn ptx_entry(kernel: &str) -> &'static str {
    let entry = format!(".entry {kernel}(");
    let ptx = if HOPPER_PTX.contains(&entry) { HOPPER_PTX } else { KERNELS_PTX };
    let start = ptx.find(&entry).unwrap_or_else(|| panic!("{kernel} is not in the PTX"));
    let rest = &ptx[start..];
    &rest[..rest[1..].find(".entry ").map_or(rest.len(), |end| end + 1)]
}

/// The size in bytes of each parameter of the PTX entry `kernel`.
fn ptx_parameters(kernel: &str) -> Vec<usize> {
    let entry = ptx_entry(kernel);
    let list = &entry[..entry.find(')').expect("a parameter list")];
    list.split(',')
        .filter(|p| p.contains(".param"))
        .map(|p| {
            let width = [("64", 8), ("32", 4), ("16", 2), ("8", 1)]
                .iter()
                .find(|(bits, _)| [".u", ".s", ".b", ".f"].iter().any(|t| p.contains(&format!("{t}{bits} "))));
            width.unwrap_or_else(|| panic!("{kernel}: a parameter of unknown size: {p}")).1
        })
        .collect()
}

/// A kernel of another family: each binding must refuse it.
fn foreign_kernel(family: &str) -> &'static str {
    if family == "transpose" {
        "vector_add"
    } else {
        "transpose_naive"
    }
}

fn assert_refused<T: std::fmt::Debug>(result: Result<T, GpuError>, family: &str, kernel: &str, what: &str) {
    match result {
        Err(GpuError::InvalidLaunch { .. }) => {}
        other => panic!("{family} {kernel} with {what}: expected a refused launch, got {other:?}"),
    }
}

#[test]
fn every_kernel_has_a_binding_whose_parameters_match_its_ptx_entry() {
    let mut memory = Memory::Fake { next: 0 };
    for (family, kernel) in kernels_with_cases() {
        let Cases { valid, .. } = cases(family, kernel, &mut memory);
        valid.checked_config(kernel).unwrap_or_else(|e| panic!("{family} {kernel}: valid arguments refused: {e}"));
        assert_eq!(valid.params(kernel).sizes(), ptx_parameters(kernel), "{kernel}: binding vs PTX parameters");
        // The compiled kernel moves 16 bytes at a time through global memory only where the
        // cases below test misaligned buffers.
        let entry = ptx_entry(kernel);
        let wide = entry.lines().any(|l| {
            let l = l.trim_start();
            (l.starts_with("ld.global") || l.starts_with("st.global")) && l.contains(".v4")
                || l.starts_with("cp.async.cg.shared.global") && l.contains(", 16;")
        });
        assert!(!wide || vector_access(kernel), "{kernel} has 16-byte global accesses but no alignment case");
    }
    let bound: BTreeSet<&str> = kernels().into_iter().map(|(_, k)| k).collect();
    assert_eq!(bound.len(), KERNELS_PTX.matches(".visible .entry ").count(), "a PTX entry with no binding");
}

#[test]
fn every_binding_refuses_short_buffers_mismatched_dimensions_and_aliasing() {
    let mut memory = Memory::Fake { next: 0 };
    let mut families: BTreeSet<&str> = BUILT_BY_SCANNER.into_iter().collect();
    for (family, kernel) in kernels_with_cases() {
        families.insert(family);
        let Cases { valid, refused } = cases(family, kernel, &mut memory);
        assert!(!refused.is_empty(), "{kernel}: no refused cases");
        let foreign = foreign_kernel(family);
        assert_refused(valid.checked_config(foreign), family, foreign, &format!("{kernel}'s arguments"));
        for (what, args) in refused {
            assert_refused(args.checked_config(kernel), family, kernel, &what);
        }
    }
    assert_eq!(families.len(), FAMILIES.len(), "a family without launch checks");
}

#[test]
fn bad_launches_are_refused_on_the_gpu() {
    let Some(gpu) = common::gpu("bad_launches_are_refused_on_the_gpu") else { return };
    let mut memory = Memory::Real { _gpu: &gpu, buffers: Vec::new() };
    for (family, kernel) in kernels_with_cases() {
        let Cases { valid, refused } = cases(family, kernel, &mut memory);
        let foreign = foreign_kernel(family);
        assert_refused(gpu.launch(foreign, &*valid), family, foreign, &format!("{kernel}'s arguments"));
        for (what, args) in refused {
            assert_refused(gpu.launch(kernel, &*args), family, kernel, &what);
        }
    }
    let n = 5000;
    let scanner = Scanner::new(&gpu, n).expect("a scanner");
    for (what, input, output) in bad_scan_buffers::<u32>(&mut memory, n) {
        assert_refused(scanner.exclusive_sum_u32(&gpu, input, output), "scan", "scan_exclusive_u32", what);
    }
    let window = Window::new(-0.25, 0.25);
    for (what, input, output) in bad_scan_buffers::<f32>(&mut memory, n) {
        assert_refused(scanner.exclusive_sum_f32(&gpu, input, output), "scan", "scan_exclusive_f32", what);
        if what != "output misaligned" {
            assert_refused(scanner.compact_async(&gpu, input, window, output), "compact", "compact_window_f32", what);
        }
    }
    // Its scratch is reset and used on its own Gpu's stream alone.
    let (input, output) = (memory.u32s(n), memory.u32s(n));
    let other = Gpu::new().expect("a second Gpu on the device");
    match scanner.exclusive_sum_u32(&other, input, output) {
        Err(GpuError::InvalidInput(reason)) if reason.contains("another Gpu") => {}
        result => panic!("a scan with another Gpu: expected a refusal, got {result:?}"),
    }
    drop(other);
    gpu.bind().expect("the first Gpu's context back");
    gpu.synchronize("nothing: every launch was refused").expect("no kernel ran and failed");
}

/// Inputs and outputs of `n` values that [`Scanner`]'s scans must refuse, and its compaction
/// too but for the misaligned output (which it writes one value at a time).
fn bad_scan_buffers<T: DeviceCopy>(
    memory: &mut Memory,
    n: usize,
) -> [(&'static str, &'static DeviceSlice<T>, &'static DeviceSlice<T>); 4] {
    let (input, output) = (memory.slice(n), memory.slice(n));
    [
        ("output short", input, memory.slice(n - 1)),
        ("output is input", input, input),
        ("input misaligned", shifted(memory.slice(n + 1)), output),
        ("output misaligned", input, shifted(memory.slice(n + 1))),
    ]
}

/// The Hopper kernels' cases: maps over A and B (TF32: Bᵀ) in the kernel's precision and the
/// dimensions they were encoded for, with C beside them. Maps of one precision must be refused
/// by another's kernel.
fn hopper_cases(step: Step, precision: Precision, memory: &mut Memory) -> Cases {
    match precision {
        Precision::Tf32 => hopper_cases_of::<f32>(step, precision, memory),
        Precision::Bf16 | Precision::F16 => hopper_cases_of::<u16>(step, precision, memory),
    }
}

fn hopper_cases_of<T: DeviceCopy + 'static>(step: Step, precision: Precision, memory: &mut Memory) -> Cases {
    let (m, n, k) = (200, 72, 40);
    let (a, b, c) = (memory.slice::<T>(m * k), memory.slice::<T>(k * n), memory.f32s(m * n));
    let device = memory.slice::<TensorMap>(2);
    let maps =
        |operands: Operands<'static, T>, device: &'static DeviceSlice<TensorMap>| -> &'static TensorMaps<'static, T> {
            // SAFETY: no launch with these maps runs: each case is checked only, or refused.
            Box::leak(Box::new(unsafe { TensorMaps::assume_uploaded(operands, device) }))
        };
    let ldb = precision.b_shape(n, k).1;
    let operands = Operands { precision, a, lda: k, b, ldb, m, n, k };
    let valid = maps(operands, device);
    let with = |maps, c, (m, n, k)| -> Args { Box::new(WgmmaArgs { maps, c, m, n, k, blocks: 132 }) };
    let other = if precision == Precision::Bf16 { Precision::F16 } else { Precision::Bf16 };
    let mut refused = vec![
        ("m and n swapped".to_string(), with(valid, c, (n, m, k))),
        ("k one more than the maps".into(), with(valid, c, (m, n, k + 1))),
        ("C short".into(), with(valid, memory.f32s(m * n - 1), (m, n, k))),
        ("C is A".into(), with(valid, same_memory(a), (m, n, k))),
        ("A short".into(), with(maps(Operands { a: memory.slice(m * k - 1), ..operands }, device), c, (m, n, k))),
        ("B short".into(), with(maps(Operands { b: memory.slice(k * n - 1), ..operands }, device), c, (m, n, k))),
        (
            "B misaligned".into(),
            with(maps(Operands { b: shifted(memory.slice(k * n + 1)), ..operands }, device), c, (m, n, k)),
        ),
        // n is a multiple of 4: the epilogue stores four floats at once.
        ("C misaligned".into(), with(valid, shifted(memory.f32s(m * n + 1)), (m, n, k))),
        (
            "a row stride TMA cannot take".into(),
            with(maps(Operands { lda: k + 1, a: memory.slice(m * (k + 1)), ..operands }, device), c, (m, n, k)),
        ),
        ("no k".into(), with(maps(Operands { k: 0, ..operands }, device), c, (m, n, 0))),
        ("one tensor map".into(), with(maps(operands, memory.slice(1)), c, (m, n, k))),
        (
            "maps of the other precision".into(),
            with(maps(Operands { precision: other, ..operands }, device), c, (m, n, k)),
        ),
    ];
    if step == Step::Persistent {
        refused.push(("no blocks".into(), Box::new(WgmmaArgs { maps: valid, c, m, n, k, blocks: 0 })));
    }
    Cases { valid: with(valid, c, (m, n, k)), refused }
}

#[test]
fn the_hopper_binding_matches_its_ptx_entries_and_refuses_bad_arguments() {
    let mut memory = Memory::Fake { next: 0 };
    for (kernel, step, precision) in hopper::kernels() {
        let Cases { valid, refused } = hopper_cases(step, precision, &mut memory);
        valid.checked_config(kernel).unwrap_or_else(|e| panic!("{kernel}: valid arguments refused: {e}"));
        assert_eq!(valid.params(kernel).sizes(), ptx_parameters(kernel), "{kernel}: binding vs PTX parameters");
        assert_refused(valid.checked_config("matmul_naive"), "wgmma", "matmul_naive", "Hopper arguments");
        for (what, args) in refused {
            assert_refused(args.checked_config(kernel), "wgmma", kernel, &what);
        }
    }
    let bound = hopper::kernels().count();
    assert_eq!(bound, HOPPER_PTX.matches(".visible .entry ").count(), "a Hopper PTX entry with no binding");
}

#[test]
fn bad_hopper_launches_are_refused_on_the_gpu() {
    let Some(gpu) = common::gpu("bad_hopper_launches_are_refused_on_the_gpu") else { return };
    let mut memory = Memory::Real { _gpu: &gpu, buffers: Vec::new() };
    for (kernel, step, precision) in hopper::kernels() {
        for (what, args) in hopper_cases(step, precision, &mut memory).refused {
            assert_refused(gpu.launch(kernel, &*args), "wgmma", kernel, &what);
        }
    }
    gpu.synchronize("nothing: every launch was refused").expect("no kernel ran and failed");
}

/// The reason of a refused launch, or a panic naming `kernel` and what came instead.
fn refusal<T: std::fmt::Debug>(result: Result<T, GpuError>, kernel: &str) -> String {
    match result {
        Err(GpuError::InvalidLaunch { reason, .. }) => reason,
        other => panic!("{kernel} with C misaligned: expected a refused launch, got {other:?}"),
    }
}

/// Arguments of `precision` with `n = 70`, for which the wgmma epilogue stores one float at a
/// time, and C one float past a 16-byte boundary.
fn wgmma_args_storing_floats<T: DeviceCopy + 'static>(precision: Precision, memory: &mut Memory) -> Args {
    let (m, n, k) = (200, 70, 40);
    let (b_rows, b_cols) = precision.b_shape(n, k);
    let ldb = hopper::tma_stride(b_cols, precision.bytes());
    let (a, b) = (memory.slice::<T>(m * k), memory.slice::<T>(b_rows * ldb));
    let operands = Operands { precision, a, lda: k, b, ldb, m, n, k };
    // SAFETY: no launch with these maps runs: the case is only checked.
    let maps = Box::leak(Box::new(unsafe { TensorMaps::assume_uploaded(operands, memory.slice(2)) }));
    Box::new(WgmmaArgs { maps, c: shifted(memory.f32s(m * n + 1)), m, n, k, blocks: 132 })
}

/// The wgmma epilogue (`store_quad`) stores four floats at once wherever `n` is a multiple of 4.
/// There a C that starts one float past a 16-byte boundary, as a sub-slice of a buffer does,
/// must be refused, on made-up addresses and through `Gpu::launch`, by an error that names the
/// alignment; with another `n` every store is of one float, and the same C is accepted.
#[test]
fn the_wgmma_binding_refuses_a_c_misaligned_for_its_16_byte_stores() {
    let misaligned_c = |cases: Cases| {
        let (_, args) = cases.refused.into_iter().find(|(what, _)| what == "C misaligned").expect("a misaligned C");
        args
    };
    let mut memory = Memory::Fake { next: 0 };
    for (kernel, step, precision) in hopper::kernels() {
        let reason = refusal(misaligned_c(hopper_cases(step, precision, &mut memory)).checked_config(kernel), kernel);
        assert!(reason.contains("C at") && reason.contains("16-byte aligned"), "{kernel}: {reason}");
        let storing_floats = match precision {
            Precision::Tf32 => wgmma_args_storing_floats::<f32>(precision, &mut memory),
            Precision::Bf16 | Precision::F16 => wgmma_args_storing_floats::<u16>(precision, &mut memory),
        };
        storing_floats.checked_config(kernel).unwrap_or_else(|e| panic!("{kernel}, n = 70: C refused: {e}"));
    }
    let Some(gpu) = common::gpu("the_wgmma_binding_refuses_a_c_misaligned_for_its_16_byte_stores") else { return };
    let mut memory = Memory::Real { _gpu: &gpu, buffers: Vec::new() };
    for (kernel, step, precision) in hopper::kernels() {
        let args = misaligned_c(hopper_cases(step, precision, &mut memory));
        let reason = refusal(gpu.launch(kernel, &*args), kernel);
        assert!(reason.contains("16-byte aligned"), "{kernel} on the GPU: {reason}");
    }
    gpu.synchronize("nothing: every launch was refused").expect("no kernel ran and failed");
}
