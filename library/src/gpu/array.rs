//! Arrays in GPU memory that know their shape, the GPU they live on and their last use.
//!
//! A kernel runs after its launch returns, so memory it reads or writes must outlive the
//! launch, not the call. Every family function records an event on its stream behind the work
//! that uses an array ([`DeviceArray::record_use`]); dropping the array waits for that event
//! before the memory is freed, whatever CUDA's free does by itself. This is what cudarc's
//! event-tracked slices do, with one event per array: a function that uses an array re-records
//! it, so it always marks the last use.

use super::{CudaContext, Gpu, GpuError, GpuResult};
use cust::context::{Context, CurrentContext};
use cust::event::{Event, EventFlags};
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy, DeviceSlice};
use ndarray::{Array, ArrayView, Dimension, IntoDimension, Ix1, Ix2};
use std::mem::ManuallyDrop;

/// An array of `T` in the memory of one [`Gpu`], with the shape `D` of an `ndarray` array,
/// stored row-major (C order).
///
/// Each array is its own allocation, so its address is aligned to 256 bytes
/// ([`DeviceArray::alignment`]): the kernels' 16-byte vector loads and stores always find it
/// aligned. Outputs are taken as `&mut DeviceArray`, so the borrow checker rules out an output
/// that aliases an input.
///
/// ```no_run
/// use cuda_kernels::gpu::{DeviceArray, Gpu};
/// use ndarray::array;
///
/// let gpu = Gpu::new()?;
/// let a = DeviceArray::from_array(&gpu, array![[1.0f32, 2.0], [3.0, 4.0]].view())?;
/// assert_eq!(a.shape(), &[2, 2]);
/// assert_eq!(a.to_array(&gpu)?, array![[1.0f32, 2.0], [3.0, 4.0]]);
/// # Ok::<(), cuda_kernels::gpu::GpuError>(())
/// ```
pub struct DeviceArray<T: DeviceCopy, D: Dimension = Ix1> {
    // Field order is drop order; `Drop` frees `buffer` itself, after waiting for `last_use`.
    buffer: ManuallyDrop<DeviceBuffer<T>>,
    dim: D,
    last_use: Event,
    /// [`Gpu::id`] of the GPU it was allocated on.
    gpu: u64,
    /// The context the memory belongs to, held so that it outlives the memory.
    context: Context,
}

/// A one-dimensional device array.
pub type DeviceVector<T> = DeviceArray<T, Ix1>;

/// A two-dimensional device array (rows × columns, row-major).
pub type DeviceMatrix<T> = DeviceArray<T, Ix2>;

impl<T: DeviceCopy + bytemuck::Pod, D: Dimension> DeviceArray<T, D> {
    /// Allocates the elements of `dim` and fills them from `fill` (not called for an empty
    /// array, which has no memory).
    fn allocate(gpu: &Gpu, dim: D, fill: impl FnOnce(&mut DeviceBuffer<T>) -> GpuResult<()>) -> GpuResult<Self> {
        gpu.bind()?;
        let len = dim.size_checked().ok_or_else(|| {
            GpuError::InvalidInput(format!("an array of shape {:?} has more elements than memory", dim.slice()))
        })?;
        let bytes = (len as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        gpu.ensure_fits("a device array", bytes)?;
        // SAFETY: `T` is plain data (`Pod`), and `fill` writes every element before anyone reads
        // the array (zeroing, or copying `len` elements in).
        let mut buffer = unsafe { DeviceBuffer::<T>::uninitialized(len) }.during("allocating a device array")?;
        if len > 0 {
            fill(&mut buffer)?;
        }
        let last_use = Event::new(EventFlags::DISABLE_TIMING).during("creating a device array's event")?;
        Ok(Self { buffer: ManuallyDrop::new(buffer), dim, last_use, gpu: gpu.id(), context: gpu.context().clone() })
    }

    /// A copy of `array` on `gpu` (any memory layout; the copy is row-major).
    pub fn from_array(gpu: &Gpu, array: ArrayView<T, D>) -> GpuResult<Self> {
        let dim = array.raw_dim();
        let standard = array.as_standard_layout();
        let values = standard.as_slice().expect("a standard-layout array is contiguous");
        Self::allocate(gpu, dim, |buffer| buffer.copy_from(values).during("copying an array to the GPU"))
    }

    /// An array of `shape` on `gpu`, every element zero (all bits clear).
    pub fn zeros(gpu: &Gpu, shape: impl IntoDimension<Dim = D>) -> GpuResult<Self> {
        Self::allocate(gpu, shape.into_dimension(), |buffer| buffer.set_8(0).during("zeroing a device array"))
    }

    /// The array, copied back once `gpu` has run all the work queued on its stream.
    pub fn to_array(&self, gpu: &Gpu) -> GpuResult<Array<T, D>> {
        self.check_gpu(gpu)?;
        gpu.synchronize("the work writing an array")?;
        let mut host = vec![T::zeroed(); self.len()];
        if !host.is_empty() {
            self.buffer.copy_to(&mut host[..]).during("copying an array back")?;
        }
        Ok(Array::from_shape_vec(self.dim.clone(), host).expect("the shape holds the elements"))
    }
}

impl<T: DeviceCopy + bytemuck::Pod> DeviceArray<T, Ix1> {
    /// A copy of `values` on `gpu`.
    pub fn from_slice(gpu: &Gpu, values: &[T]) -> GpuResult<Self> {
        Self::from_array(gpu, ArrayView::from(values))
    }
}

impl<T: DeviceCopy, D: Dimension> DeviceArray<T, D> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.dim.size()
    }

    /// Whether the array holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The length of each axis.
    pub fn shape(&self) -> &[usize] {
        self.dim.slice()
    }

    /// The shape as `ndarray` writes it: `n` for a vector, `(rows, cols)` for a matrix.
    pub fn dim(&self) -> D::Pattern {
        self.dim.clone().into_pattern()
    }

    /// The largest power of two, up to 256, that the array's address is a multiple of: 256 for
    /// every array, since each is its own allocation.
    pub fn alignment(&self) -> usize {
        let address = self.buffer.as_device_ptr().as_raw();
        1 << address.trailing_zeros().min(8)
    }

    /// An error unless the array lives on `gpu`: an array of another GPU (another context, or
    /// another stream whose work is not ordered with this one's) must not be mixed in.
    pub(crate) fn check_gpu(&self, gpu: &Gpu) -> GpuResult<()> {
        if self.gpu == gpu.id() {
            Ok(())
        } else {
            Err(GpuError::InvalidInput(format!(
                "an array of GPU #{} was passed to GPU #{}: arrays are used on the GPU that made them",
                self.gpu,
                gpu.id()
            )))
        }
    }

    /// The memory, for a binding, once the array is known to live on `gpu`.
    pub(crate) fn slice(&self, gpu: &Gpu) -> GpuResult<&DeviceSlice<T>> {
        self.check_gpu(gpu)?;
        Ok(&self.buffer)
    }

    /// Marks the work queued so far on `gpu`'s stream as this array's last use: dropping the
    /// array waits for it.
    pub(crate) fn record_use(&self, gpu: &Gpu) -> GpuResult<()> {
        self.last_use.record(gpu.stream()).during("recording an array's use")
    }
}

impl<T: DeviceCopy, D: Dimension> Drop for DeviceArray<T, D> {
    fn drop(&mut self) {
        // The free happens in the array's own context, after the last kernel or copy that
        // used the array. Should the wait fail, the context is broken (a kernel faulted), and
        // the memory is leaked rather than freed under work that may still run.
        let waited = CurrentContext::set_current(&self.context).and_then(|()| self.last_use.synchronize());
        if waited.is_ok() {
            // SAFETY: the buffer is dropped once, here, and nothing uses it afterwards.
            unsafe { ManuallyDrop::drop(&mut self.buffer) }
        }
    }
}

impl<T: DeviceCopy, D: Dimension> std::fmt::Debug for DeviceArray<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceArray").field("shape", &self.shape()).field("gpu", &self.gpu).finish()
    }
}
