//! What can go wrong on the GPU side, each error saying what was being done.

use thiserror::Error;

/// An error of the GPU side: its message says what was being done and what went wrong.
#[derive(Debug, Error)]
pub enum GpuError {
    /// No GPU can be used: the driver failed to initialize, or the device does not exist. The
    /// string says why.
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    /// The driver refused the kernels' PTX.
    #[error("the kernels' PTX failed to load: {0} (a corrupt PTX, or a driver too old for it)")]
    ModuleLoad(cust::error::CudaError),
    /// A CUDA call failed.
    #[error("{what}: {source}")]
    Cuda {
        /// What was being done.
        what: String,
        /// The driver's error.
        source: cust::error::CudaError,
    },
    /// A driver call that cust does not wrap failed with this `CUresult`.
    #[error("{what}: CUDA driver error {code}")]
    Driver {
        /// What was being done.
        what: String,
        /// The `CUresult`, as a number.
        code: u32,
    },
    /// An allocation larger than the free device memory, refused before it was tried.
    #[error("not enough GPU memory: {what} needs {needed} bytes, {free} of {total} are free")]
    OutOfMemory {
        /// What was to be allocated.
        what: String,
        /// Bytes asked for.
        needed: u64,
        /// Bytes free on the device.
        free: u64,
        /// Bytes the device has.
        total: u64,
    },
    /// A launch refused before it ran: arguments that do not fit the kernel, or a shape past
    /// the device's limits.
    #[error("invalid launch of {kernel}: {reason}")]
    InvalidLaunch {
        /// The kernel's name.
        kernel: String,
        /// What does not fit.
        reason: String,
    },
    /// Input a function refuses (a shape, a length, a range); the string says what and why.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A file the user named (input or output) that cannot be used.
    #[error("{path}: {reason}")]
    File {
        /// The file's path, as given.
        path: String,
        /// Why it cannot be used.
        reason: String,
    },
}

/// The result of everything on the GPU side.
pub type GpuResult<T> = Result<T, GpuError>;

/// Adds what was being done to a CUDA error.
pub trait CudaContext<T> {
    /// The value, or a [`GpuError::Cuda`] saying that the error happened during `what`.
    fn during(self, what: impl Into<String>) -> GpuResult<T>;
}

impl<T> CudaContext<T> for cust::error::CudaResult<T> {
    fn during(self, what: impl Into<String>) -> GpuResult<T> {
        self.map_err(|source| GpuError::Cuda { what: what.into(), source })
    }
}

/// An [`GpuError::InvalidInput`] unless `ok`.
pub fn require(ok: bool, message: impl FnOnce() -> String) -> GpuResult<()> {
    if ok {
        Ok(())
    } else {
        Err(GpuError::InvalidInput(message()))
    }
}

/// An error unless a raw driver call (one cust does not wrap) succeeded.
pub fn driver_result(result: cust::sys::CUresult, what: impl Into<String>) -> GpuResult<()> {
    if result == cust::sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Driver { what: what.into(), code: result as u32 })
    }
}
