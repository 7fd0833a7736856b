//! The host machinery every kernel uses, written once: the context, the module holding the
//! kernels' PTX and the stream ([`Gpu`]); typed kernel arguments that check themselves
//! (`args`); launches checked against the device's limits (`launch`); allocation, poisoning and copies (`memory`); CUDA-event timing (`timing`); and
//! the device's facts (`device`).

mod args;
mod array;
mod device;
mod error;
mod launch;
mod memory;
mod staging;
mod timing;

pub use args::{
    product, refuse, require_aligned, require_apart, require_disjoint, require_kernel, require_len, KernelArgs, Params,
    Span,
};
pub use array::{DeviceArray, DeviceMatrix, DeviceVector};
pub use device::DeviceInfo;
pub use error::{driver_result, require, CudaContext, GpuError, GpuResult};
pub use launch::{blocks, LaunchConfig};
pub use memory::{Pending, Readback};
pub use staging::{STAGED_DOWNLOAD_BYTES, STAGING_CHUNK_BYTES};
pub use timing::{Cache, Timing};

use cust::context::{Context, CurrentContext};
use cust::device::Device;
use cust::function::Function;
use cust::memory::DeviceBuffer;
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::CudaFlags;
use staging::Staging;
use std::cell::{OnceCell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The PTX of every family's kernels, compiled from `kernels/` by rustc_codegen_nvvm and
/// shipped in `ptx/` (`build.rs` says how it is rebuilt).
pub const KERNELS_PTX: &str = include_str!("../../ptx/kernels.ptx");

/// The Hopper module: the kernels on wgmma, TMA and setmaxnreg, PTX for `sm_90a`, which only a
/// device of compute capability 9.0 loads.
pub const HOPPER_PTX: &str = include_str!("../../ptx/kernels_sm90a.ptx");

/// The compute capability `sm_90a` code runs on, and no other.
pub const HOPPER: (i32, i32) = (9, 0);

/// Whether `kernel` lives in the Hopper module.
pub fn is_hopper_kernel(kernel: &str) -> bool {
    hopper_kernels().contains(&kernel)
}

/// The Hopper module's kernels. Every launch asks which module a kernel is in, so the names are
/// read from the PTX once (a search of the whole text on each launch slowed launch-bound work
/// such as the source pipeline's clipping rounds), and a [`Gpu`] reads them as it opens, so that
/// the first launch of a timed pipeline does not pay for reading the whole PTX.
fn hopper_kernels() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        HOPPER_PTX.split(".visible .entry ").skip(1).filter_map(|rest| rest.split('(').next()).collect()
    })
}

/// Initializes the driver; without a usable GPU, the error says why.
fn init() -> GpuResult<()> {
    cust::init(CudaFlags::empty()).map_err(|e| GpuError::NoGpu(format!("cuInit failed: {}", e)))
}

/// The GPU a doctest or an example runs on: `None` (after saying why) where this machine has
/// none, so that the documentation's examples compile and run everywhere; with
/// `REQUIRE_GPU=1` a missing GPU is an error instead.
#[doc(hidden)]
pub fn doctest_gpu() -> GpuResult<Option<Gpu>> {
    match Gpu::new() {
        Ok(gpu) => Ok(Some(gpu)),
        Err(GpuError::NoGpu(why)) if std::env::var_os("REQUIRE_GPU").is_none_or(|v| v != "1") => {
            eprintln!("SKIPPED: {why}");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// GPUs on this machine.
pub fn device_count() -> GpuResult<usize> {
    init()?;
    let count = Device::num_devices().map_err(|e| GpuError::NoGpu(format!("counting devices: {}", e)))?;
    Ok(count as usize)
}

/// One GPU, opened: its context, the kernels' modules loaded into it, and the stream its work
/// is queued on.
///
/// The fields are private: a module swapped for another could be launched with arguments its
/// kernels do not take, so only [`Gpu::with_ptx`], which is `unsafe`, loads other code.
///
/// ```compile_fail
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// let gpu = cuda_kernels::Gpu::new()?;
/// // error[E0616]: field `module` of struct `Gpu` is private
/// let module = &gpu.module;
/// # Ok(())
/// # }
/// ```
pub struct Gpu {
    // Field order is drop order: everything allocated in the context goes before it.
    stream: Stream,
    /// Written before each cold-cache timed launch to evict the working set from L2.
    flush_buffer: OnceCell<DeviceBuffer<u8>>,
    /// The page-locked chunks large uploads go through ([`Gpu::upload_staged`]).
    staging: RefCell<Staging>,
    module: Module,
    /// [`HOPPER_PTX`], loaded on compute capability 9.0 only.
    hopper: Option<Module>,
    device: Device,
    info: DeviceInfo,
    /// Tells this `Gpu`'s arrays from another's, whose work is queued on another stream.
    id: u64,
    context: Context,
}

impl Gpu {
    /// Opens device 0 and loads the kernels' PTX.
    pub fn new() -> GpuResult<Self> {
        Self::open(0, KERNELS_PTX)
    }

    /// Opens device `ordinal` and loads the kernels' PTX; its context is current on this thread.
    pub fn on(ordinal: usize) -> GpuResult<Self> {
        Self::open(ordinal, KERNELS_PTX)
    }

    /// Opens device 0 with another module than the project's kernels.
    ///
    /// # Safety
    /// The bindings ([`KernelArgs`]) describe the project's kernels: every kernel later
    /// launched through the returned `Gpu` must be one of them, by name and signature.
    pub unsafe fn with_ptx(ptx: &str) -> GpuResult<Self> {
        Self::open(0, ptx)
    }

    fn open(ordinal: usize, ptx: &str) -> GpuResult<Self> {
        init()?;
        let device =
            Device::get_device(ordinal as u32).map_err(|e| GpuError::NoGpu(format!("no device {}: {}", ordinal, e)))?;
        let context = Context::new(device).during("creating a context")?;
        let staging = RefCell::new(Staging::start(device));
        let info = DeviceInfo::query(device)?;
        let module = Module::from_ptx(ptx, &[]).map_err(GpuError::ModuleLoad)?;
        // A blocking stream: synchronous copies and memsets (legacy default stream) are then
        // ordered before the kernels launched here.
        let stream = Stream::new(StreamFlags::DEFAULT, None).during("creating a stream")?;
        // The Hopper module loads only where its sm_90a code runs.
        let hopper = if info.compute_capability == HOPPER {
            Some(Module::from_ptx(HOPPER_PTX, &[]).map_err(GpuError::ModuleLoad)?)
        } else {
            None
        };
        hopper_kernels();
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Ok(Self { stream, flush_buffer: OnceCell::new(), staging, module, hopper, device, info, id, context })
    }

    /// The kernel `name`, from the Hopper module for its kernels: on another GPU, an error
    /// saying that they need sm_90.
    pub fn function(&self, name: &str) -> GpuResult<Function<'_>> {
        let module = match (is_hopper_kernel(name), &self.hopper) {
            (false, _) => &self.module,
            (true, Some(hopper)) => hopper,
            (true, None) => {
                let (major, minor) = self.info.compute_capability;
                return Err(GpuError::InvalidLaunch {
                    kernel: name.to_string(),
                    reason: format!("it needs sm_90 (Hopper); this GPU is compute capability {}.{}", major, minor),
                });
            }
        };
        module.get_function(name).during(format!("looking up kernel `{}`", name))
    }

    /// The stream this GPU's work is queued on, in order.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The device's facts: name, compute capability, limits, peaks.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Its streaming multiprocessors (SMs), at least 1: what a grid's blocks are counted in.
    pub fn sms(&self) -> u32 {
        self.info.multiprocessors.max(1) as u32
    }

    /// The device this GPU was opened on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Whether the Hopper module (wgmma, TMA) is loaded: on compute capability 9.0 only.
    pub fn has_hopper(&self) -> bool {
        self.hopper.is_some()
    }

    /// A number no other `Gpu` of this process has.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The context this GPU's memory and modules belong to.
    pub(crate) fn context(&self) -> &Context {
        &self.context
    }

    /// Makes this GPU's context the thread's current one, so that allocations and copies land
    /// in it even when another `Gpu` was used last on this thread.
    pub fn bind(&self) -> GpuResult<()> {
        CurrentContext::set_current(&self.context).during("making the GPU's context current")
    }

    /// The module holding the kernels of every family (not the Hopper ones).
    pub(crate) fn module(&self) -> &Module {
        &self.module
    }

    /// Waits for everything queued on the stream; an error names `what` was running.
    pub fn synchronize(&self, what: &str) -> GpuResult<()> {
        self.stream.synchronize().during(format!("running {}", what))
    }
}
