//! Device memory: allocations checked against the free memory first, poisoned outputs, zeroed
//! accumulators and copies back.

use super::{CudaContext, Gpu, GpuError, GpuResult};
use cust::memory::{
    mem_get_info, AsyncCopyDestination, CopyDestination, DeviceBuffer, DeviceCopy, DeviceSlice, LockedBuffer,
};
use cust::stream::Stream;
use std::cell::{RefCell, RefMut};
use std::mem::ManuallyDrop;

impl Gpu {
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

    /// A new buffer holding a copy of `data`, once [`Gpu::ensure_fits`] says it fits; `what`
    /// names it in errors.
    pub fn upload<T: DeviceCopy>(&self, what: &str, data: &[T]) -> GpuResult<DeviceBuffer<T>> {
        self.ensure_fits(what, std::mem::size_of_val(data) as u64)?;
        DeviceBuffer::from_slice(data).during(format!("copying {} to the GPU", what))
    }

    /// A buffer of `len` elements, every byte set to 0xFF: an f32 NaN, u32::MAX. Results are
    /// checked against a CPU reference, so an element the kernel never wrote shows up.
    pub fn poisoned<T: DeviceCopy + bytemuck::Pod>(&self, what: &str, len: usize) -> GpuResult<DeviceBuffer<T>> {
        // SAFETY: every byte is poisoned before the buffer is returned.
        let buffer = unsafe { self.unset(what, len) }?;
        self.poison(what, &buffer)?;
        Ok(buffer)
    }

    /// A buffer of `len` elements (at least one), its bytes not yet set, once
    /// [`Gpu::ensure_fits`] says it fits.
    ///
    /// # Safety
    /// The caller sets every byte before anything reads them.
    unsafe fn unset<T: DeviceCopy + bytemuck::Pod>(&self, what: &str, len: usize) -> GpuResult<DeviceBuffer<T>> {
        self.ensure_fits(what, (len as u64).saturating_mul(std::mem::size_of::<T>() as u64))?;
        // SAFETY: `T` is plain data (`Pod`), and the caller sets every byte before any is read.
        unsafe { DeviceBuffer::<T>::uninitialized(len.max(1)) }.during(format!("allocating {}", what))
    }

    /// [`Gpu::poisoned`], the poison set in the stream's order rather than at once: the call
    /// does not wait for the work already queued (a synchronous memset waits for every
    /// blocking stream), so the next kernels' buffers are made while the GPU runs the last ones
    /// (a second background pass's, while the first runs). Only work ordered after the
    /// stream's may read it.
    ///
    /// ```
    /// # fn main() -> cuda_kernels::GpuResult<()> {
    /// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
    /// let poisoned = gpu.poisoned_in_order::<u32>("marks", 3)?;
    /// let zeroed = gpu.zeroed_in_order::<u32>("counts", 3)?;
    /// // A copy back waits for the stream: it sees the bytes set.
    /// assert_eq!(gpu.download("marks", &poisoned, 3)?, vec![u32::MAX; 3]);
    /// assert_eq!(gpu.download("counts", &zeroed, 3)?, vec![0; 3]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn poisoned_in_order<T: DeviceCopy + bytemuck::Pod>(
        &self,
        what: &str,
        len: usize,
    ) -> GpuResult<DeviceBuffer<T>> {
        self.filled_in_order(what, len, 0xFF)
    }

    /// [`Gpu::zeroed`], in the stream's order as [`Gpu::poisoned_in_order`] poisons.
    pub fn zeroed_in_order<T: DeviceCopy + bytemuck::Pod>(&self, what: &str, len: usize) -> GpuResult<DeviceBuffer<T>> {
        self.filled_in_order(what, len, 0)
    }

    fn filled_in_order<T: DeviceCopy + bytemuck::Pod>(
        &self,
        what: &str,
        len: usize,
        byte: u8,
    ) -> GpuResult<DeviceBuffer<T>> {
        // SAFETY: the memset queued below sets every byte before anything ordered after it on
        // the stream reads them.
        let buffer = unsafe { self.unset(what, len) }?;
        self.set_in_order(&buffer, byte, format!("filling {}", what))?;
        Ok(buffer)
    }

    /// Sets every byte of `buffer` to `byte` in stream order ([`Gpu::zero`], the `_in_order`
    /// buffers); `doing` names the memset in an error.
    fn set_in_order<T: DeviceCopy + bytemuck::Pod>(
        &self,
        buffer: &DeviceSlice<T>,
        byte: u8,
        doing: String,
    ) -> GpuResult<()> {
        // A view of the same memory: the memset is ordered on the stream like a kernel that
        // writes through a shared reference.
        let mut view = buffer.index(..);
        // SAFETY: the memset stays inside `buffer`, whose owner outlives the stream's work (every
        // workload synchronizes before it is dropped), and any byte is a valid `Pod` value.
        unsafe { view.set_8_async(byte, &self.stream) }.during(doing)
    }

    /// A buffer of `len` elements, every byte zero: padding that kernels read as zeros.
    ///
    /// ```
    /// # fn main() -> cuda_kernels::GpuResult<()> {
    /// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
    /// let padding = gpu.zeroed::<u16>("padding", 64)?;
    /// assert_eq!(gpu.download("padding", &padding, 64)?, vec![0u16; 64]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn zeroed<T: DeviceCopy + bytemuck::Pod>(&self, what: &str, len: usize) -> GpuResult<DeviceBuffer<T>> {
        self.ensure_fits(what, (len as u64).saturating_mul(std::mem::size_of::<T>() as u64))?;
        DeviceBuffer::<T>::zeroed(len.max(1)).during(format!("allocating {}", what))
    }

    /// Sets every byte of `buffer` to 0xFF before a kernel writes it (see [`Gpu::poisoned`]).
    pub fn poison<T: DeviceCopy + bytemuck::Pod>(&self, what: &str, buffer: &DeviceSlice<T>) -> GpuResult<()> {
        buffer.index(..).set_8(0xFF).during(format!("poisoning {}", what))
    }

    /// Zeroes `buffer` in stream order, so the next launch on the stream sees zeros.
    pub fn zero<T: DeviceCopy + bytemuck::Pod>(&self, what: &str, buffer: &DeviceSlice<T>) -> GpuResult<()> {
        self.set_in_order(buffer, 0, format!("zeroing {}", what))
    }

    /// The first `len` elements of `buffer`, copied to the host: from
    /// [`STAGED_DOWNLOAD_BYTES`](super::STAGED_DOWNLOAD_BYTES) on, through the `Gpu`'s two
    /// page-locked chunks, one emptied while the bus fills the other, on the legacy stream as a
    /// synchronous copy goes (after the work queued on every blocking stream). An error, not a
    /// panic, where `len` is past the buffer's end.
    pub fn download<T: DeviceCopy + bytemuck::Pod + Send + Sync>(
        &self,
        what: &str,
        buffer: &DeviceSlice<T>,
        len: usize,
    ) -> GpuResult<Vec<T>> {
        if let Some(host) = self.download_staged(what, buffer, len)? {
            return Ok(host);
        }
        let mut host = vec![T::zeroed(); len];
        buffer.index(..len).copy_to(&mut host[..]).during(format!("copying {} back", what))?;
        Ok(host)
    }
}

/// A few values a kernel computes, read back through page-locked host memory. The copy is
/// queued on the stream that computes them, right behind the kernel, and the wait is for that
/// stream alone. A plain copy into pageable memory goes through a staging buffer and, being
/// synchronous, waits for every stream: where a pipeline reads a small answer between short
/// kernels, that latency is time the GPU sits idle.
///
/// A [`Pending`] copy borrows the page-locked memory until its stream has run the copy. One
/// that is forgotten (`mem::forget`) never gives it back, and then the `Readback`'s drop leaks
/// the memory instead of freeing it under a copy that may still be writing it.
pub struct Readback<T: DeviceCopy> {
    host: RefCell<ManuallyDrop<LockedBuffer<T>>>,
}

impl<T: DeviceCopy + Default> Readback<T> {
    /// Room for `len` values.
    pub fn new(len: usize) -> GpuResult<Self> {
        let host = LockedBuffer::new(&T::default(), len.max(1)).during("allocating page-locked host memory")?;
        Ok(Self { host: RefCell::new(ManuallyDrop::new(host)) })
    }

    /// The first `N` values of `from`, once `stream` has run everything queued on it.
    pub fn read<const N: usize>(&self, what: &str, stream: &Stream, from: &DeviceSlice<T>) -> GpuResult<[T; N]> {
        self.start(what, stream, from)?.wait()
    }

    /// Queues the copy of [`Readback::read`] without waiting for it, so that a wait for other
    /// work can overlap it: [`Pending::wait`] then waits for `stream` and returns the values.
    pub fn start<'a, const N: usize>(
        &'a self,
        what: &'a str,
        stream: &'a Stream,
        from: &DeviceSlice<T>,
    ) -> GpuResult<Pending<'a, T, N>> {
        if N > from.len() || N > self.host.borrow().len() {
            return Err(GpuError::InvalidInput(format!("reading {} values of {} back: there are fewer", N, what)));
        }
        let mut host = self.host.borrow_mut();
        // SAFETY: the copy writes `N` values into page-locked memory that is `N` long, borrowed
        // mutably by the `Pending` until the stream has run the copy (its `wait`, or its drop,
        // synchronizes), so nothing else reads or writes it meanwhile. When the stream reports
        // an error instead, the context is unusable and runs no later work, the copy included.
        unsafe { from.index(..N).async_copy_to(&mut host[..N], stream) }.during(format!("copying {} back", what))?;
        Ok(Pending { host, stream, what, waited: false })
    }
}

impl<T: DeviceCopy> Readback<T> {
    /// The page-locked memory's address, for the test that a forgotten copy leaks it.
    #[doc(hidden)]
    pub fn host_address(&self) -> GpuResult<usize> {
        let host = self.host.try_borrow().map_err(|_| GpuError::InvalidInput("a copy back is pending".into()))?;
        Ok(host.as_ptr() as usize)
    }
}

impl<T: DeviceCopy> Drop for Readback<T> {
    fn drop(&mut self) {
        // Still borrowed only by a forgotten `Pending`, whose copy may be in flight.
        if let Ok(mut host) = self.host.try_borrow_mut() {
            // SAFETY: dropped once, here; no `Pending` holds it, so no copy is writing it.
            unsafe { ManuallyDrop::drop(&mut host) }
        }
    }
}

/// A copy back that [`Readback::start`] queued. It holds the page-locked memory until its
/// stream has run the copy: dropped without [`Pending::wait`], it still waits for the stream.
pub struct Pending<'a, T: DeviceCopy, const N: usize> {
    host: RefMut<'a, ManuallyDrop<LockedBuffer<T>>>,
    stream: &'a Stream,
    what: &'a str,
    waited: bool,
}

impl<T: DeviceCopy + Default, const N: usize> Pending<'_, T, N> {
    /// The values, once the stream has run everything queued on it up to the copy.
    pub fn wait(mut self) -> GpuResult<[T; N]> {
        self.waited = true;
        self.stream.synchronize().during(format!("computing {}", self.what))?;
        let mut out = [T::default(); N];
        out.copy_from_slice(&self.host[..N]);
        Ok(out)
    }
}

impl<T: DeviceCopy, const N: usize> Drop for Pending<'_, T, N> {
    fn drop(&mut self) {
        if !self.waited {
            // An error here is the stream's, and the next use of the context reports it.
            let _ = self.stream.synchronize();
        }
    }
}
