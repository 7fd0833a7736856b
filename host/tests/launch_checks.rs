//! The launch checks: every kernel's host binding ([`KernelArgs`]) against the PTX it launches,
//! and against arguments that would let a kernel touch memory it must not.
//!
//! Each family's registry entry gives its cases ([`host::registry::Kernel::launch_cases`]):
//! well-formed arguments and arguments to refuse. Without a GPU the bindings are driven with
//! device slices at made-up addresses, which the checks measure but never dereference; with
//! one, the same cases are launched for real through [`Gpu::launch`] on real (short,
//! misaligned, overlapping) buffers. Every case must be refused with
//! [`GpuError::InvalidLaunch`], and each family's well-formed arguments must be accepted, so
//! that a check that refuses everything cannot pass.
//!
//! The scan and compaction bindings are the exception ([`LaunchCases::BuiltByLibrary`]): only
//! the library's `Scanner` builds them, on scratch it zeroes before each launch (their look-back
//! hangs on any other), so code here cannot. Their checks on made-up addresses are unit tests
//! beside them (`library/src/scan.rs`, `compact.rs`); on the GPU, `Scanner`'s calls with bad
//! buffers are refused here.
//!
//! [`KernelArgs`]: host::gpu::KernelArgs

mod common;

use cust::memory::{DeviceCopy, DeviceSlice};
use host::gpu::{Gpu, GpuError, GpuResult, KernelArgs, HOPPER_PTX, KERNELS_PTX};
use host::launch_cases::{shifted, vector_access, Args, Cases, LaunchCases, Memory};
use host::ops::matmul::fp8::{self, AmaxArgs, E4m3Args, Fp8Args, Fp8Maps, Fp8Operands};
use host::ops::matmul::hopper::{self, Operands, OutputMap, Precision, Step, TensorMap, TensorMaps, WgmmaArgs};
use host::ops::scan::Scanner;
use host::ops::FAMILIES;
use interface::window::Window;
use std::collections::BTreeSet;

/// The families whose bindings only the library builds ([`LaunchCases::BuiltByLibrary`]):
/// `bad_launches_are_refused_on_the_gpu` gives their API, `Scanner`, bad buffers instead.
const CHECKED_THROUGH_SCANNER: [&str; 2] = ["scan", "compact"];

/// Every registered kernel with its family's name and its family's cases for it on `memory`.
fn launch_cases(memory: &mut Memory) -> Vec<(&'static str, &'static str, LaunchCases)> {
    let mut all = Vec::new();
    for family in FAMILIES {
        for kernel in family.kernels() {
            all.push((family.name(), kernel, family.launch_cases(kernel, memory)));
        }
    }
    all
}

/// The cases of every kernel whose arguments the checks build: all but the library's.
fn kernels_with_cases(memory: &mut Memory) -> Vec<(&'static str, &'static str, Cases)> {
    let cases = launch_cases(memory).into_iter().filter_map(|(family, kernel, cases)| match cases {
        LaunchCases::Cases(cases) => Some((family, kernel, cases)),
        LaunchCases::BuiltByLibrary => None,
    });
    cases.collect()
}

/// Memory for the cases at made-up addresses.
fn made_up() -> Memory<'static> {
    // SAFETY: the checks measure its slices, and launch nothing on them that must not be refused.
    unsafe { Memory::made_up() }
}

/// Memory for the cases on `gpu`.
fn on(gpu: &Gpu) -> Memory<'_> {
    // SAFETY: the checks launch on its slices, while it lives, only what must be refused before a
    // kernel runs: a check that fails panics at the first launch that was not.
    unsafe { Memory::on(gpu) }
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

/// [`Gpu::launch`] of a case's arguments, which must be refused.
fn launch(gpu: &Gpu, kernel: &str, args: &dyn KernelArgs) -> GpuResult<()> {
    // SAFETY: the buffers are a `Memory`'s, which each test keeps until it synchronized the GPU.
    unsafe { gpu.launch(kernel, args) }
}

fn assert_refused<T: std::fmt::Debug>(result: Result<T, GpuError>, family: &str, kernel: &str, what: &str) {
    match result {
        Err(GpuError::InvalidLaunch { .. }) => {}
        other => panic!("{family} {kernel} with {what}: expected a refused launch, got {other:?}"),
    }
}

#[test]
fn every_kernel_has_a_binding_whose_parameters_match_its_ptx_entry() {
    for (family, kernel, Cases { valid, .. }) in kernels_with_cases(&mut made_up()) {
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
    let (mut checked, mut built_by_library) = (BTreeSet::new(), BTreeSet::new());
    for (family, kernel, cases) in launch_cases(&mut made_up()) {
        let Cases { valid, refused } = match cases {
            LaunchCases::Cases(cases) => cases,
            LaunchCases::BuiltByLibrary => {
                built_by_library.insert(family);
                continue;
            }
        };
        checked.insert(family);
        assert!(!refused.is_empty(), "{kernel}: no refused cases");
        let foreign = foreign_kernel(family);
        assert_refused(valid.checked_config(foreign), family, foreign, &format!("{kernel}'s arguments"));
        for (what, args) in refused {
            assert_refused(args.checked_config(kernel), family, kernel, &what);
        }
    }
    // A family may leave its arguments to the library only where its API is given bad buffers here.
    assert_eq!(built_by_library, BTreeSet::from(CHECKED_THROUGH_SCANNER), "families checked through Scanner alone");
    checked.extend(built_by_library);
    assert_eq!(checked.len(), FAMILIES.len(), "a family without launch checks");
}

#[test]
fn bad_launches_are_refused_on_the_gpu() {
    let Some(gpu) = common::gpu("bad_launches_are_refused_on_the_gpu") else { return };
    let mut memory = on(&gpu);
    for (family, kernel, Cases { valid, refused }) in kernels_with_cases(&mut memory) {
        let foreign = foreign_kernel(family);
        assert_refused(launch(&gpu, foreign, &*valid), family, foreign, &format!("{kernel}'s arguments"));
        for (what, args) in refused {
            assert_refused(launch(&gpu, kernel, &*args), family, kernel, &what);
        }
    }
    let n = 5000;
    let scanner = Scanner::new(&gpu, n).expect("a scanner");
    for (what, input, output) in bad_scan_buffers::<u32>(&mut memory, n) {
        // SAFETY: the buffers are `memory`'s, kept past the GPU's synchronize below.
        let result = unsafe { scanner.exclusive_sum_u32(&gpu, input, output) };
        assert_refused(result, "scan", "scan_exclusive_u32", what);
    }
    let window = Window::new(-0.25, 0.25);
    for (what, input, output) in bad_scan_buffers::<f32>(&mut memory, n) {
        // SAFETY: as for the u32 scan.
        let result = unsafe { scanner.exclusive_sum_f32(&gpu, input, output) };
        assert_refused(result, "scan", "scan_exclusive_f32", what);
        if what != "output misaligned" {
            // SAFETY: as for the u32 scan.
            let result = unsafe { scanner.compact_async(&gpu, input, window, output) };
            assert_refused(result, "compact", "compact_window_f32", what);
        }
    }
    // Its scratch is reset and used on its own Gpu's stream alone.
    let (input, output) = (memory.u32s(n), memory.u32s(n));
    let other = Gpu::new().expect("a second Gpu on the device");
    // SAFETY: as for the scans above.
    match unsafe { scanner.exclusive_sum_u32(&other, input, output) } {
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
/// dimensions they were encoded for, with C beside them (and for the TMA-store step, C's map).
/// Maps of one precision must be refused by another's kernel.
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
    let operands = Operands { precision, a, lda: k, b, ldb, m, n, k, zero_padded: false };
    let valid = maps(operands, device);
    let out_device = memory.slice::<TensorMap>(1);
    let out_of = |c: &'static DeviceSlice<f32>, dims| -> Option<&'static OutputMap<'static>> {
        let map = || {
            // SAFETY: no launch with this map runs: each case is checked only, or refused.
            let map = unsafe { OutputMap::assume_uploaded(c, dims, out_device) };
            &*Box::leak(Box::new(map))
        };
        (step == Step::TmaStore).then(map)
    };
    let with =
        |maps, c, (m, n, k)| -> Args { Box::new(WgmmaArgs { maps, out: out_of(c, (m, n)), c, m, n, k, blocks: 132 }) };
    let other = if precision == Precision::Bf16 { Precision::F16 } else { Precision::Bf16 };
    let mut refused = vec![
        ("m and n swapped".to_string(), with(valid, c, (n, m, k))),
        ("k one more than the maps".into(), with(valid, c, (m, n, k + 1))),
        ("C short".into(), with(valid, memory.f32s(m * n - 1), (m, n, k))),
        ("C is A".into(), with(valid, memory.same_memory(a), (m, n, k))),
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
    if step != Step::Pipelined {
        let out = out_of(c, (m, n));
        refused.push(("no blocks".into(), Box::new(WgmmaArgs { maps: valid, out, c, m, n, k, blocks: 0 })));
    }
    if step == Step::TmaStore {
        let args = |out| -> Args { Box::new(WgmmaArgs { maps: valid, out, c, m, n, k, blocks: 132 }) };
        refused.push(("no C map".into(), args(None)));
        refused.push(("C's map of another C".into(), args(out_of(memory.f32s(m * n), (m, n)))));
        refused.push(("C's map of other dimensions".into(), args(out_of(c, (m - 1, n)))));
    }
    Cases { valid: with(valid, c, (m, n, k)), refused }
}

#[test]
fn the_hopper_binding_matches_its_ptx_entries_and_refuses_bad_arguments() {
    let mut memory = made_up();
    for (kernel, step, precision) in hopper::kernels() {
        let Cases { valid, refused } = hopper_cases(step, precision, &mut memory);
        valid.checked_config(kernel).unwrap_or_else(|e| panic!("{kernel}: valid arguments refused: {e}"));
        assert_eq!(valid.params(kernel).sizes(), ptx_parameters(kernel), "{kernel}: binding vs PTX parameters");
        assert_refused(valid.checked_config("matmul_naive"), "wgmma", "matmul_naive", "Hopper arguments");
        for (what, args) in refused {
            assert_refused(args.checked_config(kernel), "wgmma", kernel, &what);
        }
    }
    for kernel in fp8::KERNELS {
        let Cases { valid, refused } = fp8_cases(kernel, &mut memory);
        valid.checked_config(kernel).unwrap_or_else(|e| panic!("{kernel}: valid arguments refused: {e}"));
        assert_eq!(valid.params(kernel).sizes(), ptx_parameters(kernel), "{kernel}: binding vs PTX parameters");
        assert_refused(valid.checked_config("matmul_wgmma_bf16"), "fp8", "matmul_wgmma_bf16", "FP8 arguments");
        for (what, args) in refused {
            assert_refused(args.checked_config(kernel), "fp8", kernel, &what);
        }
    }
    // The pipelined kernels' split launches are bound by `SplitArgs`, checked in the library
    // (`matmul::split`'s unit tests), on the same entries as above; their reduction is in the
    // main module, with matmul's cases.
    let bound = hopper::kernels().count() + fp8::KERNELS.len();
    assert_eq!(bound, HOPPER_PTX.matches(".visible .entry ").count(), "a Hopper PTX entry with no binding");
}

#[test]
fn bad_hopper_launches_are_refused_on_the_gpu() {
    let Some(gpu) = common::gpu("bad_hopper_launches_are_refused_on_the_gpu") else { return };
    let mut memory = on(&gpu);
    for (kernel, step, precision) in hopper::kernels() {
        for (what, args) in hopper_cases(step, precision, &mut memory).refused {
            assert_refused(launch(&gpu, kernel, &*args), "wgmma", kernel, &what);
        }
    }
    for kernel in fp8::KERNELS {
        for (what, args) in fp8_cases(kernel, &mut memory).refused {
            assert_refused(launch(&gpu, kernel, &*args), "fp8", kernel, &what);
        }
    }
    gpu.synchronize("nothing: every launch was refused").expect("no kernel ran and failed");
}

/// The FP8 kernels' cases (step H4): the largest magnitude, the two roundings, and the product
/// on maps of A (m × padded k bytes) and Bᵀ (n × padded k), with C beside them.
fn fp8_cases(kernel: &str, memory: &mut Memory) -> Cases {
    if kernel == fp8::AMAX {
        let (len, src, amax) = (1000, memory.f32s(1000), memory.u32s(1));
        let with = |src, amax, len| -> Args { Box::new(AmaxArgs { src, amax, len }) };
        let refused = vec![
            ("values short".to_string(), with(memory.f32s(len - 1), amax, len)),
            ("no values".into(), with(src, amax, 0)),
            ("no place for the result".into(), with(src, memory.u32s(0), len)),
            ("the result inside the values".into(), with(src, memory.same_memory(src), len)),
        ];
        return Cases { valid: with(src, amax, len), refused };
    }
    if kernel != fp8::GEMM {
        // 37 × 13 f32 into rows of 16 bytes: 37 of them, or transposed 13 of 48.
        let (rows, cols) = (37, 13);
        let written = if kernel == fp8::CONVERT { rows * 16 } else { cols * 48 };
        let (src, dst) = (memory.f32s(rows * cols), memory.slice::<u8>(written));
        let with = |src, dst, rows, cols| -> Args { Box::new(E4m3Args { src, dst, rows, cols, inverse: 2.0 }) };
        let refused = vec![
            ("destination unpadded".to_string(), with(src, memory.slice(rows * cols), rows, cols)),
            ("source short".into(), with(memory.f32s(rows * cols - 1), dst, rows, cols)),
            ("destination over the source".into(), with(src, memory.same_memory(src), rows, cols)),
            ("dimensions overflow".into(), with(src, dst, usize::MAX, 2)),
            ("destination misaligned".into(), with(src, shifted(memory.slice(written + 1)), rows, cols)),
        ];
        return Cases { valid: with(src, dst, rows, cols), refused };
    }
    let (m, n, k) = (200, 72, 40);
    let ld = 48;
    let (a, b, c) = (memory.slice::<u8>(m * ld), memory.slice::<u8>(n * ld), memory.f32s(m * n));
    let device = memory.slice::<TensorMap>(2);
    let maps = |operands: Fp8Operands<'static>, device: &'static DeviceSlice<TensorMap>| -> &'static Fp8Maps<'static> {
        // SAFETY: no launch with these maps runs: each case is checked only, or refused.
        Box::leak(Box::new(unsafe { Fp8Maps::assume_uploaded(operands, device) }))
    };
    let operands = Fp8Operands { a, lda: ld, b, ldb: ld, m, n, k };
    let valid = maps(operands, device);
    let with = |maps, c, (m, n, k)| -> Args {
        Box::new(Fp8Args { maps, c, m, n, k, scale_a: 0.5, scale_b: 2.0, blocks: 132, splits: 1 })
    };
    let split = |c, splits| -> Args {
        Box::new(Fp8Args { maps: valid, c, m, n, k, scale_a: 0.5, scale_b: 2.0, blocks: 132, splits })
    };
    let refused = vec![
        ("m and n swapped".to_string(), with(valid, c, (n, m, k))),
        ("k one more than the maps".into(), with(valid, c, (m, n, k + 1))),
        ("C short".into(), with(valid, memory.f32s(m * n - 1), (m, n, k))),
        ("C is A".into(), with(valid, memory.same_memory(a), (m, n, k))),
        ("A short".into(), with(maps(Fp8Operands { a: memory.slice(m * ld - 9), ..operands }, device), c, (m, n, k))),
        ("B short".into(), with(maps(Fp8Operands { b: memory.slice(n * ld - 9), ..operands }, device), c, (m, n, k))),
        (
            "B misaligned".into(),
            with(maps(Fp8Operands { b: shifted(memory.slice(n * ld + 1)), ..operands }, device), c, (m, n, k)),
        ),
        // n is a multiple of 4: the epilogue stores four floats at once.
        ("C misaligned".into(), with(valid, shifted(memory.f32s(m * n + 1)), (m, n, k))),
        ("a row stride TMA cannot take".into(), with(maps(Fp8Operands { lda: k, ..operands }, device), c, (m, n, k))),
        ("no k".into(), with(maps(Fp8Operands { k: 0, ..operands }, device), c, (m, n, 0))),
        ("one tensor map".into(), with(maps(operands, memory.slice(1)), c, (m, n, k))),
        (
            "an infinite scale".into(),
            Box::new(Fp8Args { maps: valid, c, m, n, k, scale_a: f32::INFINITY, scale_b: 1.0, blocks: 132, splits: 1 }),
        ),
        (
            "no blocks".into(),
            Box::new(Fp8Args { maps: valid, c, m, n, k, scale_a: 0.5, scale_b: 2.0, blocks: 0, splits: 1 }),
        ),
        // k = 40 is one slice of 128: a second split would be empty.
        ("an empty split".into(), split(memory.f32s(2 * m * n), 2)),
        ("no split".into(), split(c, 0)),
    ];
    Cases { valid: with(valid, c, (m, n, k)), refused }
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
    let operands = Operands { precision, a, lda: k, b, ldb, m, n, k, zero_padded: false };
    // SAFETY: no launch with these maps runs: the case is only checked.
    let maps = Box::leak(Box::new(unsafe { TensorMaps::assume_uploaded(operands, memory.slice(2)) }));
    Box::new(WgmmaArgs { maps, out: None, c: shifted(memory.f32s(m * n + 1)), m, n, k, blocks: 132 })
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
    let mut memory = made_up();
    for (kernel, step, precision) in hopper::kernels() {
        let reason = refusal(misaligned_c(hopper_cases(step, precision, &mut memory)).checked_config(kernel), kernel);
        assert!(reason.contains("C at") && reason.contains("16-byte aligned"), "{kernel}: {reason}");
        let storing_floats = match precision {
            Precision::Tf32 => wgmma_args_storing_floats::<f32>(precision, &mut memory),
            Precision::Bf16 | Precision::F16 => wgmma_args_storing_floats::<u16>(precision, &mut memory),
        };
        let result = storing_floats.checked_config(kernel);
        if step == Step::TmaStore {
            // TMA stores rows of a multiple of 16 bytes only: no map of this C exists to give.
            assert!(result.is_err(), "{kernel}, n = 70: accepted with no map of C");
        } else {
            result.unwrap_or_else(|e| panic!("{kernel}, n = 70: C refused: {e}"));
        }
    }
    let Some(gpu) = common::gpu("the_wgmma_binding_refuses_a_c_misaligned_for_its_16_byte_stores") else { return };
    let mut memory = on(&gpu);
    for (kernel, step, precision) in hopper::kernels() {
        let args = misaligned_c(hopper_cases(step, precision, &mut memory));
        let reason = refusal(launch(&gpu, kernel, &*args), kernel);
        assert!(reason.contains("16-byte aligned"), "{kernel} on the GPU: {reason}");
    }
    gpu.synchronize("nothing: every launch was refused").expect("no kernel ran and failed");
}
