//! The device's facts the reports need: limits, clocks and the peaks rates are measured against.

use super::{CudaContext, GpuResult};
use cust::device::{Device, DeviceAttribute};
use cust::memory::mem_get_info;
use serde::Serialize;

/// What the driver says of one device, read once when it is opened.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceInfo {
    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// (major, minor): (9, 0) for Hopper.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors (SMs).
    pub multiprocessors: i32,
    /// The SM clock, in MHz.
    pub clock_mhz: f64,
    /// The memory clock, in MHz.
    pub memory_clock_mhz: f64,
    /// The width of the memory bus, in bits.
    pub memory_bus_bits: i32,
    /// The L2 cache, in bytes.
    pub l2_bytes: u64,
    /// The device memory, in bytes.
    pub total_memory: u64,
    /// The device memory free when it was queried (just after the context was made), in bytes.
    pub free_memory: u64,
    /// The most threads a block may have.
    pub max_threads_per_block: i32,
    /// The most threads resident on one SM.
    pub max_threads_per_multiprocessor: i32,
    /// The shared memory a block gets without opting in, in bytes.
    pub max_shared_per_block: i32,
    /// What a kernel may ask for with `cuFuncSetAttribute` (the tensor-core steps and the Hopper
    /// kernels do), in bytes.
    pub max_shared_per_block_optin: i32,
    /// The most threads a block may have along x, y and z.
    pub max_block_dims: (i32, i32, i32),
    /// The most blocks a grid may have along x, y and z.
    pub max_grid_dims: (i32, i32, i32),
    /// The memory's peak bandwidth in GB/s: 2 transfers per memory clock (DDR) over the whole
    /// bus.
    pub peak_bandwidth_gbs: f64,
    /// The peak FP32 rate in GFLOP/s: FP32 lanes × 2 flops (FMA) × clock.
    pub peak_fp32_gflops: f64,
}

/// FP32 lanes per SM by architecture (CUDA C Programming Guide, arithmetic throughput).
fn fp32_lanes_per_sm(major: i32, minor: i32) -> i32 {
    match (major, minor) {
        (8, 0) | (7, _) | (6, 0) => 64,
        _ => 128,
    }
}

impl DeviceInfo {
    /// Reads the facts of `device`; its free memory is that of the current context's device.
    pub fn query(device: Device) -> GpuResult<Self> {
        let attr = |a: DeviceAttribute| device.get_attribute(a).during("reading device attributes");
        let (major, minor) =
            (attr(DeviceAttribute::ComputeCapabilityMajor)?, attr(DeviceAttribute::ComputeCapabilityMinor)?);
        let multiprocessors = attr(DeviceAttribute::MultiprocessorCount)?;
        let clock_khz = attr(DeviceAttribute::ClockRate)? as f64;
        let memory_clock_khz = attr(DeviceAttribute::MemoryClockRate)? as f64;
        let memory_bus_bits = attr(DeviceAttribute::GlobalMemoryBusWidth)?;
        let (free, total) = mem_get_info().during("querying GPU memory")?;
        Ok(Self {
            name: device.name().during("reading the device name")?,
            compute_capability: (major, minor),
            multiprocessors,
            clock_mhz: clock_khz / 1e3,
            memory_clock_mhz: memory_clock_khz / 1e3,
            memory_bus_bits,
            l2_bytes: attr(DeviceAttribute::L2CacheSize)? as u64,
            total_memory: total as u64,
            free_memory: free as u64,
            max_threads_per_block: attr(DeviceAttribute::MaxThreadsPerBlock)?,
            max_threads_per_multiprocessor: attr(DeviceAttribute::MaxThreadsPerMultiprocessor)?,
            max_shared_per_block: attr(DeviceAttribute::MaxSharedMemoryPerBlock)?,
            max_shared_per_block_optin: shared_optin(device)?,
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
            peak_fp32_gflops: multiprocessors as f64 * fp32_lanes_per_sm(major, minor) as f64 * 2.0 * clock_khz * 1e3
                / 1e9,
        })
    }

    /// Prints the facts to stdout, one per line, for `host info`.
    pub fn print(&self) {
        let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
        println!("device              {}", self.name);
        println!("compute capability  {}.{}", self.compute_capability.0, self.compute_capability.1);
        println!("multiprocessors     {}", self.multiprocessors);
        println!(
            "clock               {:.0} MHz (memory {:.0} MHz, {}-bit bus)",
            self.clock_mhz, self.memory_clock_mhz, self.memory_bus_bits
        );
        println!("memory              {:.1} GiB total, {:.1} GiB free", gib(self.total_memory), gib(self.free_memory));
        println!("L2 cache            {:.1} MiB", self.l2_bytes as f64 / (1 << 20) as f64);
        println!(
            "limits              {} threads per block, {} bytes shared memory per block",
            self.max_threads_per_block, self.max_shared_per_block
        );
        println!(
            "peaks               {:.0} GB/s memory, {:.0} GFLOP/s FP32",
            self.peak_bandwidth_gbs, self.peak_fp32_gflops
        );
    }
}

/// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`, which cust's `DeviceAttribute`
/// lacks.
fn shared_optin(device: Device) -> GpuResult<i32> {
    let mut value = 0;
    // SAFETY: `value` is a valid `int` to write; `device` is a handle cust obtained.
    let result = unsafe {
        cust::sys::cuDeviceGetAttribute(
            &mut value,
            cust::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            device.as_raw(),
        )
    };
    super::driver_result(result, "reading the opt-in shared memory limit")?;
    Ok(value)
}
