//! What can go wrong on the GPU side, each error saying what was being done.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum GpuError {
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    #[error("the kernels' PTX failed to load: {0} (a corrupt PTX, or a driver too old for it)")]
    ModuleLoad(cust::error::CudaError),
    #[error("{what}: {source}")]
    Cuda { what: String, source: cust::error::CudaError },
    /// A driver call that cust does not wrap failed with this `CUresult`.
    #[error("{what}: CUDA driver error {code}")]
    Driver { what: String, code: u32 },
    #[error("not enough GPU memory: {what} needs {needed} bytes, {free} of {total} are free")]
    OutOfMemory { what: String, needed: u64, free: u64, total: u64 },
    #[error("invalid launch of {kernel}: {reason}")]
    InvalidLaunch { kernel: String, reason: String },
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A file the user named (input or output) that cannot be used.
    #[error("{path}: {reason}")]
    File { path: String, reason: String },
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
