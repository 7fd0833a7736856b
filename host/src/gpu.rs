//! The host machinery every kernel uses, written once: context and module, the stream,
//! launches checked against the device's limits, CUDA-event timing, memory checks, and the
//! device's facts (peak bandwidth and FP32 rate for the reports).

use cust::context::Context;
use cust::device::{Device, DeviceAttribute};
use cust::event::{Event, EventFlags};
use cust::function::{BlockSize, Function, FunctionAttribute, GridSize};
use cust::memory::{mem_get_info, DeviceBuffer, DeviceCopy, DeviceSlice};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::CudaFlags;
use std::ffi::c_void;
use thiserror::Error;

/// The PTX that host/build.rs compiled from `kernels/` with rustc_codegen_nvvm.
pub const KERNELS_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

#[derive(Debug, Error)]
pub enum GpuError {
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    #[error("the kernels' PTX failed to load: {0} (a corrupt PTX, or a driver too old for it)")]
    ModuleLoad(cust::error::CudaError),
    #[error("{what}: {source}")]
    Cuda { what: String, source: cust::error::CudaError },
    #[error("not enough GPU memory: {what} needs {needed} bytes, {free} of {total} are free")]
    OutOfMemory { what: String, needed: u64, free: u64, total: u64 },
    #[error("invalid launch of {kernel}: {reason}")]
    InvalidLaunch { kernel: String, reason: String },
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

pub type GpuResult<T> = Result<T, GpuError>;

/// Adds what was being done to a CUDA error.
pub trait CudaContext<T> {
    fn during(self, what: impl Into<String>) -> GpuResult<T>;
}

impl<T> CudaContext<T> for cust::error::CudaResult<T> {
    fn during(self, what: impl Into<String>) -> GpuResult<T> {
        self.map_err(|source| GpuError::Cuda { what: what.into(), source })
    }
}

/// Grid, block and dynamic shared memory of one launch.
#[derive(Debug, Clone, Copy)]
pub struct LaunchConfig {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// One thread per element, `block` threads per block.
    pub fn linear(elements: usize, block: u32) -> GpuResult<Self> {
        if block == 0 {
            return Err(GpuError::InvalidInput("block size must be at least 1".into()));
        }
        let blocks = (elements as u64 + block as u64 - 1) / block as u64;
        let grid = u32::try_from(blocks.max(1)).map_err(|_| {
            GpuError::InvalidInput(format!("{} elements need more than 2^32 blocks of {}", elements, block))
        })?;
        Ok(Self { grid: (grid, 1, 1), block: (block, 1, 1), shared_bytes: 0 })
    }

    pub fn threads_per_block(&self) -> u64 {
        self.block.0 as u64 * self.block.1 as u64 * self.block.2 as u64
    }
}

/// What the reports need to know about the device.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceInfo {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessors: i32,
    pub clock_mhz: f64,
    pub memory_clock_mhz: f64,
    pub memory_bus_bits: i32,
    pub total_memory: u64,
    pub free_memory: u64,
    pub max_threads_per_block: i32,
    pub max_shared_per_block: i32,
    pub max_block_dims: (i32, i32, i32),
    pub max_grid_dims: (i32, i32, i32),
    /// 2 transfers per memory clock (DDR) over the whole bus.
    pub peak_bandwidth_gbs: f64,
    /// FP32 lanes × 2 flops (FMA) × clock.
    pub peak_fp32_gflops: f64,
}

pub struct Gpu {
    // Field order is drop order: the stream and module go before the context.
    pub stream: Stream,
    pub module: Module,
    pub device: Device,
    pub info: DeviceInfo,
    _context: Context,
}

impl Gpu {
    /// Opens device 0 and loads the kernels' PTX.
    pub fn new() -> GpuResult<Self> {
        Self::with_ptx(KERNELS_PTX)
    }

    pub fn with_ptx(ptx: &str) -> GpuResult<Self> {
        cust::init(CudaFlags::empty()).map_err(|e| GpuError::NoGpu(format!("cuInit failed: {}", e)))?;
        let device = Device::get_device(0).map_err(|e| GpuError::NoGpu(format!("no device 0: {}", e)))?;
        let context = Context::new(device).during("creating a context")?;
        let module = Module::from_ptx(ptx, &[]).map_err(GpuError::ModuleLoad)?;
        // A blocking stream: synchronous copies and memsets (legacy default stream) are then
        // ordered before the kernels launched here.
        let stream = Stream::new(StreamFlags::DEFAULT, None).during("creating a stream")?;
        let info = device_info(device)?;
        Ok(Self { stream, module, device, info, _context: context })
    }

    pub fn function(&self, name: &str) -> GpuResult<Function<'_>> {
        self.module.get_function(name).during(format!("looking up kernel `{}`", name))
    }

    /// Fails with a clear message unless `bytes` more fit in the free GPU memory.
    pub fn ensure_fits(&self, what: &str, bytes: u64) -> GpuResult<()> {
        let (free, total) = mem_get_info().during("querying free GPU memory")?;
        if bytes > free as u64 {
            return Err(GpuError::OutOfMemory {
                what: what.to_string(),
                needed: bytes,
                free: free as u64,
                total: total as u64,
            });
        }
        Ok(())
    }

    pub fn upload<T: DeviceCopy>(&self, what: &str, data: &[T]) -> GpuResult<DeviceBuffer<T>> {
        self.ensure_fits(what, std::mem::size_of_val(data) as u64)?;
        DeviceBuffer::from_slice(data).during(format!("copying {} to the GPU", what))
    }

    /// A buffer of `len` elements, every byte set to 0xFF: an f32 NaN, u32::MAX. Results
    /// are checked against a CPU reference, so an element the kernel never wrote shows up.
    pub fn poisoned<T: DeviceCopy + bytemuck::Pod>(&self, what: &str, len: usize) -> GpuResult<DeviceBuffer<T>> {
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        self.ensure_fits(what, bytes)?;
        let buffer = unsafe { DeviceBuffer::<T>::uninitialized(len.max(1)) }
            .during(format!("allocating {}", what))?;
        self.poison(what, &buffer)?;
        Ok(buffer)
    }

    /// Sets every byte of `buffer` to 0xFF (an f32 NaN, u32::MAX) before a kernel writes it,
    /// so that an element the kernel misses fails the check against the CPU.
    pub fn poison<T: DeviceCopy + bytemuck::Pod>(&self, what: &str, buffer: &DeviceSlice<T>) -> GpuResult<()> {
        buffer.index(..).set_8(0xFF).during(format!("poisoning {}", what))
    }

    /// Zeroes `buffer` in stream order, so the next launch on the stream sees zeros.
    pub fn zero<T: DeviceCopy + bytemuck::Pod>(&self, what: &str, buffer: &DeviceSlice<T>) -> GpuResult<()> {
        // A view of the same memory: the memset is ordered on the stream like a kernel that
        // writes through a shared reference.
        let mut view = buffer.index(..);
        unsafe { view.set_8_async(0, &self.stream) }.during(format!("zeroing {}", what))
    }

    /// Checks `config` against the device and the kernel, so that a bad configuration is an
    /// error naming the limit rather than a bare CUDA error code.
    pub fn validate(&self, kernel: &str, config: &LaunchConfig) -> GpuResult<()> {
        let invalid = |reason: String| GpuError::InvalidLaunch { kernel: kernel.to_string(), reason };
        let (bx, by, bz) = config.block;
        let (gx, gy, gz) = config.grid;
        if bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 {
            return Err(invalid(format!("grid {:?} and block {:?} must be non-zero", config.grid, config.block)));
        }
        let device_max = self.info.max_threads_per_block as u64;
        if config.threads_per_block() > device_max {
            return Err(invalid(format!(
                "{} threads per block exceed the device limit of {}",
                config.threads_per_block(),
                device_max
            )));
        }
        let function = self.function(kernel)?;
        let kernel_max = function.get_attribute(FunctionAttribute::MaxThreadsPerBlock).during("reading kernel limits")?;
        if config.threads_per_block() > kernel_max as u64 {
            return Err(invalid(format!(
                "{} threads per block exceed this kernel's limit of {} (set by its register use)",
                config.threads_per_block(),
                kernel_max
            )));
        }
        let static_shared = function.get_attribute(FunctionAttribute::SharedMemorySizeBytes).during("reading kernel limits")?;
        let shared = static_shared as u64 + config.shared_bytes as u64;
        if shared > self.info.max_shared_per_block as u64 {
            return Err(invalid(format!(
                "{} bytes of shared memory exceed the per-block limit of {}",
                shared, self.info.max_shared_per_block
            )));
        }
        let (grid_max, block_max) = (self.info.max_grid_dims, self.info.max_block_dims);
        for (name, value, max) in [
            ("grid.x", gx, grid_max.0),
            ("grid.y", gy, grid_max.1),
            ("grid.z", gz, grid_max.2),
            ("block.x", bx, block_max.0),
            ("block.y", by, block_max.1),
            ("block.z", bz, block_max.2),
        ] {
            if value as i64 > max as i64 {
                return Err(invalid(format!("{} = {} exceeds the device limit of {}", name, value, max)));
            }
        }
        Ok(())
    }

    /// Launches `kernel` on the stream. `args` are pointers to the argument values, in the
    /// kernel's parameter order (a slice parameter takes two: pointer and length). The
    /// configuration is not checked here, to keep the driver queries out of timed launches:
    /// call [`Gpu::validate`] once first (every prepared workload does when it is built).
    pub fn launch(&self, kernel: &str, config: &LaunchConfig, args: &[*mut c_void]) -> GpuResult<()> {
        self.launch_on(&self.stream, kernel, config, args)
    }

    /// [`Gpu::launch`] on another stream.
    pub fn launch_on(&self, stream: &Stream, kernel: &str, config: &LaunchConfig, args: &[*mut c_void]) -> GpuResult<()> {
        let function = self.function(kernel)?;
        let (grid, block) = (
            GridSize::xyz(config.grid.0, config.grid.1, config.grid.2),
            BlockSize::xyz(config.block.0, config.block.1, config.block.2),
        );
        unsafe { stream.launch(&function, grid, block, config.shared_bytes, args) }
            .during(format!("launching {}", kernel))
    }

    pub fn synchronize(&self, what: &str) -> GpuResult<()> {
        self.stream.synchronize().during(format!("running {}", what))
    }

    /// Event-timed durations (ms) of `iters` launches: each launch bracketed by its own
    /// pair of CUDA events on the stream, `prepare` running before it, outside the events
    /// (e.g. to clear an accumulator).
    fn launch_times(
        &self,
        stream: &Stream,
        what: &str,
        iters: u64,
        mut prepare: impl FnMut() -> GpuResult<()>,
        mut launch: impl FnMut() -> GpuResult<()>,
    ) -> GpuResult<Vec<f64>> {
        let start = Event::new(EventFlags::DEFAULT).during("creating an event")?;
        let stop = Event::new(EventFlags::DEFAULT).during("creating an event")?;
        let mut times = Vec::with_capacity(iters as usize);
        for _ in 0..iters {
            prepare()?;
            start.record(stream).during("recording an event")?;
            launch()?;
            stop.record(stream).during("recording an event")?;
            stop.synchronize().during(format!("running {}", what))?;
            times.push(stop.elapsed_time_f32(&start).during("reading event time")? as f64);
        }
        Ok(times)
    }

    /// Median time (ms) of `iters` launches after one untimed warm-up launch.
    pub fn time_ms(
        &self,
        what: &str,
        iters: usize,
        prepare: impl FnMut() -> GpuResult<()>,
        launch: impl FnMut() -> GpuResult<()>,
    ) -> GpuResult<f64> {
        self.time_ms_on(&self.stream, what, iters, prepare, launch)
    }

    /// [`Gpu::time_ms`] with the events on `stream`: `launch` must queue its work there, or
    /// make `stream` wait for it.
    pub fn time_ms_on(
        &self,
        stream: &Stream,
        what: &str,
        iters: usize,
        mut prepare: impl FnMut() -> GpuResult<()>,
        mut launch: impl FnMut() -> GpuResult<()>,
    ) -> GpuResult<f64> {
        prepare()?;
        launch()?;
        stream.synchronize().during(format!("running {}", what))?;
        Ok(median(&mut self.launch_times(stream, what, iters.max(1) as u64, prepare, launch)?))
    }

    /// Total time of `iters` launches: what criterion's `iter_custom` wants.
    pub fn time_total(
        &self,
        iters: u64,
        prepare: impl FnMut() -> GpuResult<()>,
        launch: impl FnMut() -> GpuResult<()>,
    ) -> GpuResult<std::time::Duration> {
        let total_ms: f64 = self.launch_times(&self.stream, "a benchmark", iters, prepare, launch)?.iter().sum();
        Ok(std::time::Duration::from_secs_f64(total_ms / 1e3))
    }
}

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let mid = values.len() / 2;
    if values.len() % 2 == 0 {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

/// Pointer to a launch argument, as `cuLaunchKernel` wants it.
pub fn arg<T>(value: &T) -> *mut c_void {
    value as *const T as *mut c_void
}

/// FP32 lanes per SM by architecture (CUDA C Programming Guide, arithmetic throughput).
fn fp32_lanes_per_sm(major: i32, minor: i32) -> i32 {
    match (major, minor) {
        (8, 0) | (7, _) | (6, 0) => 64,
        _ => 128,
    }
}

fn device_info(device: Device) -> GpuResult<DeviceInfo> {
    let attr = |a: DeviceAttribute| device.get_attribute(a).during("reading device attributes");
    let (major, minor) = (attr(DeviceAttribute::ComputeCapabilityMajor)?, attr(DeviceAttribute::ComputeCapabilityMinor)?);
    let multiprocessors = attr(DeviceAttribute::MultiprocessorCount)?;
    let clock_khz = attr(DeviceAttribute::ClockRate)? as f64;
    let memory_clock_khz = attr(DeviceAttribute::MemoryClockRate)? as f64;
    let memory_bus_bits = attr(DeviceAttribute::GlobalMemoryBusWidth)?;
    let (free, total) = mem_get_info().during("querying GPU memory")?;
    Ok(DeviceInfo {
        name: device.name().during("reading the device name")?,
        compute_capability: (major, minor),
        multiprocessors,
        clock_mhz: clock_khz / 1e3,
        memory_clock_mhz: memory_clock_khz / 1e3,
        memory_bus_bits,
        total_memory: total as u64,
        free_memory: free as u64,
        max_threads_per_block: attr(DeviceAttribute::MaxThreadsPerBlock)?,
        max_shared_per_block: attr(DeviceAttribute::MaxSharedMemoryPerBlock)?,
        max_block_dims: (
            attr(DeviceAttribute::MaxBlockDimX)?,
            attr(DeviceAttribute::MaxBlockDimY)?,
            attr(DeviceAttribute::MaxBlockDimZ)?,
        ),
        max_grid_dims: (
            attr(DeviceAttribute::MaxGridDimX)?,
            attr(DeviceAttribute::MaxGridDimY)?,
            attr(DeviceAttribute::MaxGridDimZ)?,
        ),
        peak_bandwidth_gbs: 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits as f64 / 8.0) / 1e9,
        peak_fp32_gflops: multiprocessors as f64 * fp32_lanes_per_sm(major, minor) as f64 * 2.0 * clock_khz * 1e3 / 1e9,
    })
}
