//! What each kernel costs the SM: registers per thread, static shared memory, local memory
//! (spills), the largest block it can launch with, and the occupancy of the launch
//! configuration its launcher uses (resident threads per SM over the SM's maximum).

use crate::gpu::{CudaContext, Gpu, GpuResult, LaunchConfig};
use crate::ops::{conv, histogram, matmul, saxpy};
use cust::device::DeviceAttribute;
use cust::function::{BlockSize, FunctionAttribute};
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct KernelResources {
    pub kernel: String,
    pub block: (u32, u32, u32),
    pub registers: i32,
    pub static_shared_bytes: i32,
    pub dynamic_shared_bytes: u32,
    pub local_bytes: i32,
    pub max_threads_per_block: i32,
    pub blocks_per_sm: u32,
    pub occupancy_percent: f64,
}

/// Every kernel with the launch configuration of its default run.
fn launches(gpu: &Gpu) -> GpuResult<Vec<(String, LaunchConfig)>> {
    let linear = LaunchConfig::linear(1 << 20, 256)?;
    let histogram = histogram::launch_config(gpu, 256, 0)?;
    let (naive, tiled) = conv::conv2d_configs(8192, 8192)?;
    let mut list = vec![
        ("vector_add".to_string(), linear),
        ("saxpy".to_string(), saxpy::launch_config(gpu, 256, 0)?),
        ("counter_racy".to_string(), linear),
        ("counter_atomic".to_string(), linear),
    ];
    for name in ["global_u32", "global_f32", "shared_u32", "shared_f32"] {
        list.push((format!("histogram_{}", name), histogram));
    }
    for variant in matmul::Variant::ALL {
        list.push((variant.kernel().to_string(), variant.launch_config(4096, 4096)?));
    }
    list.push(("conv2d_naive".to_string(), naive));
    for r in 1..=3 {
        list.push((format!("conv2d_tiled_r{}", r), tiled));
    }
    list.push(("conv1d".to_string(), conv::conv1d_config(1 << 26)?));
    Ok(list)
}

pub fn kernel_resources(gpu: &Gpu) -> GpuResult<Vec<KernelResources>> {
    let max_threads_per_sm =
        gpu.device.get_attribute(DeviceAttribute::MaxThreadsPerMultiprocessor).during("reading device limits")?;
    let mut rows = Vec::new();
    for (kernel, config) in launches(gpu)? {
        let function = gpu.function(&kernel)?;
        let attr = |a: FunctionAttribute| function.get_attribute(a).during("reading kernel attributes");
        let block = BlockSize::xyz(config.block.0, config.block.1, config.block.2);
        let blocks_per_sm = function
            .max_active_blocks_per_multiprocessor(block, config.shared_bytes as usize)
            .during("computing occupancy")?;
        rows.push(KernelResources {
            block: config.block,
            registers: attr(FunctionAttribute::NumRegisters)?,
            static_shared_bytes: attr(FunctionAttribute::SharedMemorySizeBytes)?,
            dynamic_shared_bytes: config.shared_bytes,
            local_bytes: attr(FunctionAttribute::LocalSizeBytes)?,
            max_threads_per_block: attr(FunctionAttribute::MaxThreadsPerBlock)?,
            blocks_per_sm,
            occupancy_percent: 100.0 * (blocks_per_sm as u64 * config.threads_per_block()) as f64 / max_threads_per_sm as f64,
            kernel,
        });
    }
    Ok(rows)
}

pub fn print(rows: &[KernelResources]) {
    println!(
        "{:<24} {:>12} {:>5} {:>13} {:>7} {:>10} {:>11} {:>10}",
        "kernel", "block", "regs", "shared (s+d)", "local", "max block", "blocks/SM", "occupancy"
    );
    for r in rows {
        println!(
            "{:<24} {:>12} {:>5} {:>13} {:>7} {:>10} {:>11} {:>9.0}%",
            r.kernel,
            format!("{}x{}x{}", r.block.0, r.block.1, r.block.2),
            r.registers,
            format!("{}+{}", r.static_shared_bytes, r.dynamic_shared_bytes),
            r.local_bytes,
            r.max_threads_per_block,
            r.blocks_per_sm,
            r.occupancy_percent
        );
    }
}
