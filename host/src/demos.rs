//! The CUDA runtime shown on its own, beside the kernel families: streams and events
//! (`host streams`), host-device bandwidth (`host bandwidth`) and copy/compute overlap
//! (`host overlap`). Each returns what it measured, to print or to write as JSON.

use crate::check::{self, Check};
use crate::data::random_f32;
use crate::gpu::{require, Cache, CudaContext, Gpu, GpuResult, LaunchConfig, Timing};
use crate::ops::matmul::{self, Matmul, Step};
use crate::ops::vector_add::AddArgs;
use cust::event::{Event, EventFlags};
use cust::memory::{AsyncCopyDestination, CopyDestination, DeviceBuffer, LockedBuffer};
use cust::stream::{Stream, StreamFlags, StreamWaitEventFlags};
use serde::Serialize;
use std::time::Instant;

fn event() -> GpuResult<Event> {
    Event::new(EventFlags::DEFAULT).during("creating an event")
}

fn stream() -> GpuResult<Stream> {
    Stream::new(StreamFlags::NON_BLOCKING, None).during("creating a stream")
}

/// Makes `waiter` wait (on the GPU, the host does not block) for the work queued so far on `on`.
fn wait_for(waiter: &Stream, on: &Stream) -> GpuResult<()> {
    let marker = event()?;
    marker.record(on).during("recording an event")?;
    waiter.wait_event(marker, StreamWaitEventFlags::DEFAULT).during("making a stream wait on an event")
}

#[derive(Debug, Serialize)]
pub struct StreamsReport {
    pub shape: (usize, usize, usize),
    pub blocks_per_kernel: u32,
    pub multiprocessors: usize,
    pub alone_ms: (f64, f64),
    pub together_ms: f64,
    /// together / (alone₁ + alone₂): 0.5 is perfect overlap, 1.0 none.
    pub overlap_ratio: f64,
    pub matmul_check: Check,
    pub dependent_check: Check,
}

/// Two independent SGEMMs, each too small to fill the GPU (one 128×128 tile per block, far
/// fewer blocks than SMs), first alone, then on two streams at once. Then the dependency:
/// stream 2 doubles stream 1's result only after an event recorded on stream 1 says it is done.
pub fn streams(gpu: &Gpu, iters: usize, seed: u64) -> GpuResult<StreamsReport> {
    let sms = gpu.sms() as usize;
    // Tiles of 128: a square of side 128·⌊√(SMs/2)⌋ puts at most half the SMs to work.
    let side = 128 * ((sms as f64 / 2.0).sqrt().floor() as usize).max(1);
    let shape = (side, side, 8192);
    let step = Step::Blocked;
    let config = step.launch_config(side, side)?;
    let (s1, s2) = (stream()?, stream()?);
    let first = Matmul::new(gpu, shape, &[step], seed)?;
    let second = Matmul::new(gpu, shape, &[step], seed ^ 2)?;
    let median_ms = |stream: &Stream, launch: &dyn Fn() -> GpuResult<()>| -> GpuResult<f64> {
        Ok(gpu.time_on(stream, iters, Cache::Warm, || Ok(()), launch)?.median_ms)
    };

    // SAFETY: `first`, `second` and `doubled` outlive them, and each
    // stream is synchronized (by the timing, or explicitly) before the function returns.
    let alone = (
        // SAFETY: as above.
        median_ms(&s1, &|| unsafe { first.launch_on(gpu, &s1, step.kernel()) })?,
        // SAFETY: as above.
        median_ms(&s2, &|| unsafe { second.launch_on(gpu, &s2, step.kernel()) })?,
    );
    // Timed on stream 1: stream 2 waits to start from the same point, and stream 1 waits for
    // stream 2 so that the stop event comes after both.
    let together_ms = median_ms(&s1, &|| {
        wait_for(&s2, &s1)?;
        // SAFETY: as above.
        unsafe { first.launch_on(gpu, &s1, step.kernel()) }?;
        // SAFETY: as above.
        unsafe { second.launch_on(gpu, &s2, step.kernel()) }?;
        wait_for(&s1, &s2)
    })?;

    // The dependency. C1 is poisoned first: if stream 2 ran early it would double NaNs.
    gpu.poison("C1", first.c())?;
    let len = side * side;
    let doubled = gpu.poisoned::<f32>("2·C1", len)?;
    // SAFETY: as above.
    unsafe { first.launch_on(gpu, &s1, step.kernel()) }?;
    wait_for(&s2, &s1)?;
    let add = AddArgs { a: first.c(), b: first.c(), c: &doubled, block: 256 };
    unsafe { gpu.launch_on(&s2, "vector_add", &add) }?;
    s2.synchronize().during("running the dependent kernel")?;
    let c1 = first.result(gpu)?;
    let doubled_host = gpu.download("2·C1", &doubled, len)?;
    let matmul_check = check::close(&c1, &first.cpu_reference(), matmul::tolerance(shape.2));
    let expected: Vec<f32> = c1.iter().map(|x| x + x).collect();
    let dependent_check = check::close(&doubled_host, &expected, 0.0);

    Ok(StreamsReport {
        shape,
        blocks_per_kernel: config.grid.0 * config.grid.1,
        multiprocessors: sms,
        alone_ms: alone,
        together_ms,
        overlap_ratio: together_ms / (alone.0 + alone.1),
        matmul_check,
        dependent_check,
    })
}

impl StreamsReport {
    pub fn print(&self) {
        let (m, n, k) = self.shape;
        println!(
            "two independent SGEMMs {}x{}x{}, {} blocks each on a {}-SM GPU",
            m, n, k, self.blocks_per_kernel, self.multiprocessors
        );
        println!("  stream 1 alone      {:>9.3} ms", self.alone_ms.0);
        println!("  stream 2 alone      {:>9.3} ms", self.alone_ms.1);
        println!("  sum                 {:>9.3} ms", self.alone_ms.0 + self.alone_ms.1);
        println!(
            "  both, two streams   {:>9.3} ms   = {:.2} x the sum ({})",
            self.together_ms,
            self.overlap_ratio,
            if self.overlap_ratio < 0.75 { "they overlap" } else { "little overlap" }
        );
        println!("dependent kernel on stream 2 after an event on stream 1:");
        println!(
            "  C1 vs CPU           {} (worst error {:.3e}, tolerance {:.1e})",
            verdict(&self.matmul_check),
            self.matmul_check.worst_error,
            self.matmul_check.tolerance
        );
        println!(
            "  2*C1 read after the event  {} (worst error {:.3e})",
            verdict(&self.dependent_check),
            self.dependent_check.worst_error
        );
    }

    pub fn passed(&self) -> bool {
        self.matmul_check.passed && self.dependent_check.passed
    }
}

fn verdict(check: &Check) -> &'static str {
    if check.passed {
        "PASS"
    } else {
        "FAIL"
    }
}

#[derive(Debug, Serialize)]
pub struct BandwidthRow {
    pub bytes: usize,
    pub h2d_pageable: f64,
    pub h2d_pinned: f64,
    pub d2h_pageable: f64,
    pub d2h_pinned: f64,
    /// Counts the read and the write: 2 × bytes per copy.
    pub d2d: f64,
}

/// Host-to-device and device-to-host from pageable (ordinary) and pinned (page-locked)
/// memory, and device-to-device, in GB/s (median of `iters`, CUDA events), like
/// cuda-samples' bandwidthTest. Pageable copies go through a staging buffer the driver
/// copies into first; pinned memory lets the copy engine DMA directly.
pub fn bandwidth(gpu: &Gpu, sizes: &[usize], iters: usize) -> GpuResult<Vec<BandwidthRow>> {
    let mut rows = Vec::new();
    for &bytes in sizes {
        require(bytes > 0, || "bandwidth sizes must be at least 1 byte".into())?;
        gpu.ensure_fits("bandwidth buffers", 2 * bytes as u64)?;
        let mut pageable = vec![0x5Au8; bytes];
        let mut pinned = LockedBuffer::new(&0x5Au8, bytes).during("allocating pinned memory")?;
        let mut device = DeviceBuffer::<u8>::zeroed(bytes).during("allocating device memory")?;
        let mut device2 = DeviceBuffer::<u8>::zeroed(bytes).during("allocating device memory")?;
        let s = gpu.stream();
        let gbs = |moved: usize, copy: &mut dyn FnMut() -> GpuResult<()>| -> GpuResult<f64> {
            let ms = gpu.time(iters, Cache::Warm, || Ok(()), &mut *copy)?.median_ms;
            Ok(moved as f64 / (ms / 1e3) / 1e9)
        };
        let h2d_pageable = gbs(bytes, &mut || device.copy_from(&pageable[..]).during("copying H2D"))?;
        // SAFETY: `pinned` and `device` are `bytes` long, and `gbs` waits for each timed copy
        // (its stop event) before the next, so neither buffer is touched while one is in flight.
        let h2d_pinned = gbs(bytes, &mut || unsafe { device.async_copy_from(&pinned[..], s) }.during("copying H2D"))?;
        let d2h_pageable = gbs(bytes, &mut || device.copy_to(&mut pageable[..]).during("copying D2H"))?;
        // SAFETY: as for the copy in.
        let d2h_pinned = gbs(bytes, &mut || unsafe { device.async_copy_to(&mut pinned[..], s) }.during("copying D2H"))?;
        // SAFETY: two device buffers of `bytes`, each copy waited for before the next.
        let d2d = gbs(2 * bytes, &mut || unsafe { device2.async_copy_from(&device, s) }.during("copying D2D"))?;
        rows.push(BandwidthRow { bytes, h2d_pageable, h2d_pinned, d2h_pageable, d2h_pinned, d2d });
    }
    Ok(rows)
}

pub fn print_bandwidth(rows: &[BandwidthRow]) {
    println!(
        "{:>12}  {:>12} {:>12}  {:>12} {:>12}  {:>10}   (GB/s)",
        "bytes", "H2D pageable", "H2D pinned", "D2H pageable", "D2H pinned", "D2D"
    );
    for r in rows {
        println!(
            "{:>12}  {:>12.1} {:>12.1}  {:>12.1} {:>12.1}  {:>10.1}",
            r.bytes, r.h2d_pageable, r.h2d_pinned, r.d2h_pageable, r.d2h_pinned, r.d2d
        );
    }
    if let Some(last) = rows.last() {
        println!(
            "pinned / pageable at {} bytes: H2D x{:.2}, D2H x{:.2}",
            last.bytes,
            last.h2d_pinned / last.h2d_pageable,
            last.d2h_pinned / last.d2h_pageable
        );
    }
}

#[derive(Debug, Serialize)]
pub struct OverlapReport {
    pub n: usize,
    pub streams: usize,
    pub chunks: usize,
    pub serial_ms: f64,
    pub pipelined_ms: f64,
    pub speedup: f64,
    pub check: Check,
}

/// `c = a + b` for data that starts and ends on the host. Serial: copy all of `a` and `b`
/// in, add, copy `c` out, on one stream. Pipelined: the same in `chunks` pieces spread
/// round-robin over `streams` streams, so one chunk's kernel and copies run while other
/// chunks are copied in either direction (the H100 has separate copy engines for each).
/// Host buffers are pinned: asynchronous copies need page-locked memory. Times are host
/// wall-clock from the first enqueue to the last synchronize, median of `iters`.
pub fn overlap(
    gpu: &Gpu,
    n: usize,
    streams: usize,
    chunks: usize,
    iters: usize,
    seed: u64,
) -> GpuResult<OverlapReport> {
    require(n >= 1 && streams >= 1 && chunks >= 1, || "overlap needs n, streams and chunks >= 1".into())?;
    require(chunks <= n, || {
        format!("overlap cannot split {} elements into {} chunks (at most one chunk per element)", n, chunks)
    })?;
    require(iters >= 1, || "overlap needs at least one timed run (--iters 1 or more)".into())?;
    gpu.ensure_fits("overlap's three buffers", 3 * 4 * n as u64)?;
    let a = LockedBuffer::from_slice(&random_f32(n, seed)).during("allocating pinned memory")?;
    let b = LockedBuffer::from_slice(&random_f32(n, seed ^ 1)).during("allocating pinned memory")?;
    let mut c = LockedBuffer::new(&f32::NAN, n).during("allocating pinned memory")?;
    let da = DeviceBuffer::<f32>::zeroed(n).during("allocating device memory")?;
    let db = DeviceBuffer::<f32>::zeroed(n).during("allocating device memory")?;
    let dc = gpu.poisoned::<f32>("c", n)?;
    let pool: Vec<Stream> = (0..streams).map(|_| stream()).collect::<GpuResult<_>>()?;
    gpu.validate("vector_add", &LaunchConfig::linear(n, 256)?)?;

    let run = |pieces: usize, lanes: &[Stream], c: &mut LockedBuffer<f32>| -> GpuResult<f64> {
        let piece = n.div_ceil(pieces);
        let start = Instant::now();
        for (i, lo) in (0..n).step_by(piece).enumerate() {
            let hi = (lo + piece).min(n);
            let s = &lanes[i % lanes.len()];
            // SAFETY: equally long pieces of pinned host and device buffers that outlive the
            // loop, which synchronizes every stream before returning; each piece is written by
            // one copy and read by this chunk's kernel and copy out, in stream order.
            unsafe {
                da.index(lo..hi).async_copy_from(&a[lo..hi], s).during("copying a in")?;
                db.index(lo..hi).async_copy_from(&b[lo..hi], s).during("copying b in")?;
            }
            let add = AddArgs { a: &da.index(lo..hi), b: &db.index(lo..hi), c: &dc.index(lo..hi), block: 256 };
            // SAFETY: as for the copies in.
            unsafe { gpu.launch_on(s, "vector_add", &add) }?;
            // SAFETY: as for the copies in; `c` is read only after the streams are synchronized.
            unsafe { dc.index(lo..hi).async_copy_to(&mut c[lo..hi], s) }.during("copying c out")?;
        }
        for s in lanes {
            s.synchronize().during("running the pipeline")?;
        }
        Ok(start.elapsed().as_secs_f64() * 1e3)
    };
    // Checked first, while c (host) and dc (device) still hold their poison.
    run(chunks, &pool, &mut c)?;
    let expected: Vec<f32> = a.iter().zip(b.iter()).map(|(x, y)| x + y).collect();
    let check = check::close(&c, &expected, 0.0);
    let (mut serial, mut pipelined) = (Vec::new(), Vec::new());
    for _ in 0..iters {
        serial.push(run(1, &pool[..1], &mut c)?);
        pipelined.push(run(chunks, &pool, &mut c)?);
    }
    let (serial_ms, pipelined_ms) =
        (Timing::from_samples(serial, Cache::Warm).median_ms, Timing::from_samples(pipelined, Cache::Warm).median_ms);
    Ok(OverlapReport { n, streams, chunks, serial_ms, pipelined_ms, speedup: serial_ms / pipelined_ms, check })
}

impl OverlapReport {
    pub fn print(&self) {
        println!("c = a + b over {} floats from and back to pinned host memory", self.n);
        println!("  serial     (1 stream, 1 chunk)            {:>9.3} ms", self.serial_ms);
        println!(
            "  pipelined  ({} streams, {} chunks)        {:>9.3} ms",
            self.streams, self.chunks, self.pipelined_ms
        );
        println!(
            "  speed-up   x{:.2}   result {} (worst error {:.3e})",
            self.speedup,
            verdict(&self.check),
            self.check.worst_error
        );
    }
}
