//! Launch configurations, checked against the device and the kernel before any launch, so a
//! bad one is an error naming the limit rather than a bare CUDA error code.

use super::{CudaContext, Gpu, GpuError, GpuResult, KernelArgs};
use cust::function::{BlockSize, Function, FunctionAttribute, GridSize};
use cust::stream::Stream;
use cust::sys::{cuFuncGetAttribute, cuFuncSetAttribute, CUfunction_attribute, CUresult};

const MAX_DYNAMIC_SHARED: CUfunction_attribute = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;

/// An error naming `kernel` and what failed, unless `result` is success.
fn driver(result: CUresult, kernel: &str, what: &str) -> GpuResult<()> {
    match result {
        CUresult::CUDA_SUCCESS => Ok(()),
        error => Err(GpuError::InvalidLaunch { kernel: kernel.to_string(), reason: format!("{what}: {error:?}") }),
    }
}

/// Lets `function` (the kernel `kernel`) be launched with up to `bytes` of dynamic shared
/// memory; `bytes` plus its static shared memory must fit the device's opt-in limit.
fn allow_shared(function: &Function, kernel: &str, bytes: i32) -> GpuResult<()> {
    // SAFETY: sets one attribute of a function of a loaded module; a value the device does not
    // allow is an error the driver returns.
    let result = unsafe { cuFuncSetAttribute(function.to_raw(), MAX_DYNAMIC_SHARED, bytes) };
    driver(result, kernel, "raising its shared memory limit")
}

/// The dynamic shared memory `function` may be launched with.
fn dynamic_shared_limit(function: &Function, kernel: &str) -> GpuResult<i64> {
    let mut limit = 0;
    // SAFETY: writes one int through a valid pointer, for a function of the loaded module.
    let result = unsafe { cuFuncGetAttribute(&mut limit, MAX_DYNAMIC_SHARED, function.to_raw()) };
    driver(result, kernel, "reading its limits")?;
    Ok(limit as i64)
}

/// Grid, block and dynamic shared memory of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks along x, y and z.
    pub grid: (u32, u32, u32),
    /// Threads a block along x, y and z.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory a block, in bytes.
    pub shared_bytes: u32,
}

/// Blocks of `per_block` needed to cover `extent`, as one grid dimension.
pub fn blocks(extent: usize, per_block: usize) -> GpuResult<u32> {
    u32::try_from(extent.div_ceil(per_block).max(1))
        .map_err(|_| GpuError::InvalidInput(format!("{} elements need more than 2^32 blocks of {}", extent, per_block)))
}

impl LaunchConfig {
    /// One thread per element, `block` threads per block.
    pub fn linear(elements: usize, block: u32) -> GpuResult<Self> {
        if block == 0 {
            return Err(GpuError::InvalidInput("block size must be at least 1".into()));
        }
        Ok(Self { grid: (blocks(elements, block as usize)?, 1, 1), block: (block, 1, 1), shared_bytes: 0 })
    }

    /// A grid-stride launch: `grid` blocks of `block`, or `per_sm` blocks per SM when `grid` is 0.
    pub fn grid_stride(sms: u32, per_sm: u32, block: u32, grid: u32) -> GpuResult<Self> {
        let grid = if grid == 0 { per_sm * sms } else { grid };
        Ok(Self { grid: (grid, 1, 1), ..Self::linear(1, block)? })
    }

    /// A 2D grid of `tile.0 × tile.1` tiles over `width × height`, `block` threads each.
    pub fn tiles_2d(
        width: usize,
        height: usize,
        tile: (usize, usize),
        block: (u32, u32),
        shared_bytes: usize,
    ) -> GpuResult<Self> {
        Ok(Self {
            grid: (blocks(width, tile.0)?, blocks(height, tile.1)?, 1),
            block: (block.0, block.1, 1),
            shared_bytes: shared_bytes as u32,
        })
    }

    /// Threads in one block: the product of the block's three dimensions.
    pub fn threads_per_block(&self) -> u64 {
        self.block.0 as u64 * self.block.1 as u64 * self.block.2 as u64
    }
}

impl Gpu {
    /// Checks `config` against the device and the kernel.
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
        let kernel_max =
            function.get_attribute(FunctionAttribute::MaxThreadsPerBlock).during("reading kernel limits")?;
        if config.threads_per_block() > kernel_max as u64 {
            return Err(invalid(format!(
                "{} threads per block exceed this kernel's limit of {} (set by its register use)",
                config.threads_per_block(),
                kernel_max
            )));
        }
        self.ensure_shared(&function, kernel, config.shared_bytes)?;
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

    /// Lets `function` (the kernel `kernel`) be launched with `bytes` of dynamic shared memory.
    /// Past the 48 KiB a launch gets by default, a kernel opts in to more: to what the launch
    /// asks, up to the device's opt-in limit less the kernel's static shared memory, so that a
    /// kernel's limit says what it uses and a launch past the device's limit is refused here
    /// with the numbers.
    fn ensure_shared(&self, function: &Function, kernel: &str, bytes: u32) -> GpuResult<()> {
        if bytes as i64 <= dynamic_shared_limit(function, kernel)? {
            return Ok(());
        }
        let static_shared =
            function.get_attribute(FunctionAttribute::SharedMemorySizeBytes).during("reading kernel limits")?;
        let most = self.info.max_shared_per_block_optin as i64 - static_shared as i64;
        if bytes as i64 > most {
            return Err(GpuError::InvalidLaunch {
                kernel: kernel.to_string(),
                reason: format!(
                    "{bytes} bytes of dynamic shared memory exceed this kernel's limit of {most} on this device"
                ),
            });
        }
        allow_shared(function, kernel, bytes as i32)
    }

    /// Launches `kernel` on the stream with `args`, after `args` has checked itself for it.
    /// Device limits are checked once per workload ([`Gpu::validate`]), not here, to keep driver
    /// queries out of timed launches: a launch beyond them is refused by the driver, which is
    /// an error, not undefined behaviour. The exception is dynamic shared memory: past 48 KiB
    /// with the kernel's static memory a launch must opt into it rather than only meet it (one
    /// query, for the kernels that take dynamic shared memory).
    ///
    /// # Safety
    /// The launch is queued, not finished, when this returns. Every buffer `args` refers to
    /// must stay allocated until the stream has run the kernel: synchronize it (a download
    /// does) before dropping or freeing one. CUDA does not promise that freeing memory waits for
    /// the kernels using it. The library's own functions keep this promise for you: they take
    /// [`DeviceArray`](super::DeviceArray)s, whose drop waits for the work recorded on them.
    ///
    /// ```compile_fail,E0133
    /// use cuda_kernels::{vector_add::AddArgs, Gpu, GpuResult};
    /// // error[E0133]: call to unsafe function: a launch on untracked buffers is `unsafe`.
    /// fn raw(gpu: &Gpu, args: &AddArgs) -> GpuResult<()> {
    ///     gpu.launch("vector_add", args)
    /// }
    /// ```
    pub unsafe fn launch<A: KernelArgs + ?Sized>(&self, kernel: &str, args: &A) -> GpuResult<()> {
        // SAFETY: the caller keeps `args`' buffers alive until the stream has run the kernel.
        unsafe { self.launch_on(&self.stream, kernel, args) }
    }

    /// [`Gpu::launch`] on another stream.
    ///
    /// # Safety
    /// As for [`Gpu::launch`]: `args`' buffers stay allocated until `stream` has run the kernel.
    pub unsafe fn launch_on<A: KernelArgs + ?Sized>(&self, stream: &Stream, kernel: &str, args: &A) -> GpuResult<()> {
        let config = args.checked_config(kernel)?;
        let function = self.function(kernel)?;
        // Static and dynamic shared memory together past 48 KiB need opting in: a kernel with
        // any dynamic shared memory is asked its limit.
        if config.shared_bytes > 0 {
            self.ensure_shared(&function, kernel, config.shared_bytes)?;
        }
        let mut params = args.params(kernel);
        let (pointers, count) = params.pointers();
        let (grid, block) = (
            GridSize::xyz(config.grid.0, config.grid.1, config.grid.2),
            BlockSize::xyz(config.block.0, config.block.1, config.block.2),
        );
        // SAFETY: `A: KernelArgs` promises that, once `checked_config` accepted `kernel`, its
        // parameter list is `kernel`'s in order and size, and that the lengths, alignment,
        // aliasing and launch shape meet the kernel's `# Safety` section; `config` is the shape
        // it returned. The caller keeps the buffers behind `args` allocated until the kernel ran.
        unsafe { stream.launch(&function, grid, block, config.shared_bytes, &pointers[..count]) }
            .during(format!("launching {}", kernel))
    }
}
