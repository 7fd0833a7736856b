//! What each kernel costs the SM: registers per thread, static shared memory, local memory
//! (spills), the largest block it can launch with, and the occupancy of the launch shape its
//! family uses by default (resident threads per SM over the SM's maximum).

use crate::gpu::{CudaContext, Gpu, GpuResult, LaunchConfig};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use cust::function::{BlockSize, FunctionAttribute};
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct KernelResources {
    pub family: &'static str,
    pub kernel: &'static str,
    pub block: (u32, u32, u32),
    pub registers: i32,
    pub static_shared_bytes: i32,
    pub dynamic_shared_bytes: u32,
    pub local_bytes: i32,
    pub max_threads_per_block: i32,
    pub blocks_per_sm: u32,
    pub occupancy_percent: f64,
}

/// What `kernel` costs when launched with `config`.
pub fn of(gpu: &Gpu, family: &'static str, kernel: &'static str, config: &LaunchConfig) -> GpuResult<KernelResources> {
    let function = gpu.function(kernel)?;
    let attr = |a: FunctionAttribute| function.get_attribute(a).during("reading kernel attributes");
    let block = BlockSize::xyz(config.block.0, config.block.1, config.block.2);
    let blocks_per_sm = function
        .max_active_blocks_per_multiprocessor(block, config.shared_bytes as usize)
        .during("computing occupancy")?;
    let resident_threads = blocks_per_sm as u64 * config.threads_per_block();
    Ok(KernelResources {
        family,
        kernel,
        block: config.block,
        registers: attr(FunctionAttribute::NumRegisters)?,
        static_shared_bytes: attr(FunctionAttribute::SharedMemorySizeBytes)?,
        dynamic_shared_bytes: config.shared_bytes,
        local_bytes: attr(FunctionAttribute::LocalSizeBytes)?,
        max_threads_per_block: attr(FunctionAttribute::MaxThreadsPerBlock)?,
        blocks_per_sm,
        occupancy_percent: 100.0 * resident_threads as f64 / gpu.info().max_threads_per_multiprocessor as f64,
    })
}

pub fn table(rows: &[KernelResources]) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "kernel",
        "block",
        "regs",
        "shared (static+dynamic)",
        "local",
        "max block",
        "blocks/SM",
        "occupancy",
    ]);
    for r in rows {
        table.add_row([
            r.kernel.to_string(),
            format!("{}x{}x{}", r.block.0, r.block.1, r.block.2),
            r.registers.to_string(),
            format!("{}+{}", r.static_shared_bytes, r.dynamic_shared_bytes),
            r.local_bytes.to_string(),
            r.max_threads_per_block.to_string(),
            r.blocks_per_sm.to_string(),
            format!("{:.0}%", r.occupancy_percent),
        ]);
    }
    table
}
