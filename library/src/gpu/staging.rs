//! Copies at the bus's rate: through two page-locked chunks in turn, the CPU's threads filling
//! one while the bus carries the other (an upload), or emptying one while the bus fills the
//! other (a copy back). A copy from pageable memory goes through the driver's
//! own staging, filled by one thread, at a fraction of that rate. Page-locking memory costs
//! milliseconds a chunk, more than one image's copy saves, so a [`Gpu`] allocates its chunks
//! once, on a thread of their own while it loads its modules, and keeps them.

use super::{driver_result, CudaContext, Gpu, GpuError, GpuResult};
use cust::context::{Context, CurrentContext};
use cust::device::Device;
use cust::event::{Event, EventFlags};
use cust::memory::{AsyncCopyDestination, DeviceBuffer, DeviceCopy, DeviceSlice, LockedBuffer};
use rayon::prelude::*;
use std::thread::JoinHandle;

/// Bytes of each of the two page-locked chunks that [`Gpu::upload_staged`] copies through.
/// Each chunk's turn costs a wait for its last copy, a wake-up of the CPU's threads and a copy
/// queued, whatever its size: a survey image's upload takes a handful of large chunks, not
/// dozens of small ones. Their page-locking, which grows with their size, is done while the
/// modules load.
pub const STAGING_CHUNK_BYTES: usize = 16 << 20;

/// Bytes from which [`Gpu::download`] copies back through the chunks. A copy to pageable
/// memory goes through the driver's staging a piece at a time, at a fraction of the bus's rate;
/// smaller copies go that plain way, a few values not being worth a chunk's turn.
pub const STAGED_DOWNLOAD_BYTES: usize = 64 << 10;

/// The two chunks, and for each the event recorded behind its last copy.
struct Chunks {
    host: [LockedBuffer<u8>; 2],
    copied: [Event; 2],
}

impl Chunks {
    fn allocate(device: Device) -> GpuResult<Self> {
        // The device's primary context, which the `Gpu` holds, retained for this thread too.
        let context = Context::new(device).during("opening the context for the upload chunks")?;
        CurrentContext::set_current(&context).during("opening the context for the upload chunks")?;
        let chunk = || {
            // SAFETY: bytes are plain data; an upload fills a chunk before a copy reads it, and
            // only as far as it is filled.
            unsafe { LockedBuffer::<u8>::uninitialized(STAGING_CHUNK_BYTES) }
                .during("allocating page-locked host memory")
        };
        let event = || Event::new(EventFlags::DISABLE_TIMING).during("creating an event");
        Ok(Self { host: [chunk()?, chunk()?], copied: [event()?, event()?] })
    }
}

/// A `Gpu`'s upload chunks: the thread allocating them until it is waited for, then the chunks,
/// or none where they could not be had (uploads then go through pageable memory, as
/// [`Gpu::upload`]'s).
pub(super) struct Staging {
    thread: Option<JoinHandle<GpuResult<Chunks>>>,
    chunks: Option<Chunks>,
}

impl Staging {
    /// Starts allocating the chunks in `device`'s primary context, on a thread of their own.
    pub(super) fn start(device: Device) -> Self {
        Staging { thread: Some(std::thread::spawn(move || Chunks::allocate(device))), chunks: None }
    }

    /// The chunks, once their thread is done.
    fn ready(&mut self) -> Option<&mut Chunks> {
        if let Some(thread) = self.thread.take() {
            self.chunks = thread.join().ok().and_then(Result::ok);
        }
        self.chunks.as_mut()
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // A thread still allocating is waited for, so that its chunks go with the `Gpu`'s
        // fields, before its context, and not after.
        self.ready();
    }
}

impl Gpu {
    /// [`Gpu::upload`] at the bus's rate, for an array larger than a chunk: `data` goes up
    /// through the `Gpu`'s two page-locked chunks of [`STAGING_CHUNK_BYTES`] in turn, the CPU's
    /// threads filling one while the bus carries the other. Where the chunks could not be
    /// allocated, or `data` fits in one, it is [`Gpu::upload`].
    ///
    /// ```
    /// # fn main() -> cuda_kernels::GpuResult<()> {
    /// use cuda_kernels::gpu::STAGING_CHUNK_BYTES;
    ///
    /// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
    /// // Two and a half chunks of f32: both page-locked chunks are filled, one twice.
    /// let values: Vec<f32> = (0..5 * STAGING_CHUNK_BYTES / 8).map(|i| i as f32).collect();
    /// let device = gpu.upload_staged("the values", &values)?;
    /// assert_eq!(gpu.download("the values", &device, values.len())?, values);
    /// # Ok(())
    /// # }
    /// ```
    pub fn upload_staged<T: DeviceCopy + bytemuck::Pod + Send + Sync>(
        &self,
        what: &str,
        data: &[T],
    ) -> GpuResult<DeviceBuffer<T>> {
        let size = std::mem::size_of::<T>();
        let chunk = STAGING_CHUNK_BYTES / size.max(1);
        let mut staging = self.staging.borrow_mut();
        let chunks = match staging.ready() {
            Some(chunks) if size > 0 && data.len() > chunk => chunks,
            _ => return self.upload(what, data),
        };
        self.ensure_fits(what, std::mem::size_of_val(data) as u64)?;
        let during = || format!("copying {what} to the GPU");
        // SAFETY: `T` is plain data (`Pod`); the chunks' copies below write every element before
        // the buffer is returned.
        let buffer = unsafe { DeviceBuffer::<T>::uninitialized(data.len()) }.during(during())?;
        let mut queue = || -> GpuResult<()> {
            for (i, part) in data.chunks(chunk).enumerate() {
                let (host, copied) = (&mut chunks.host[i % 2], &chunks.copied[i % 2]);
                // The chunk's last copy (two turns ago, or the last upload's) must have left it
                // before it is refilled; an event not yet recorded has nothing to wait for.
                copied.synchronize().during(during())?;
                let host: &mut [T] = bytemuck::try_cast_slice_mut(&mut host[..std::mem::size_of_val(part)])
                    .map_err(|e| GpuError::InvalidInput(format!("staging {what}: {e}")))?;
                let pieces = host.par_chunks_mut(1 << 16).zip(part.par_chunks(1 << 16));
                pieces.for_each(|(to, from)| to.copy_from_slice(from));
                let mut target = buffer.index(i * chunk..i * chunk + part.len());
                // SAFETY: the page-locked chunk is not written again until `copied`, recorded
                // right behind the copy, has run, and it and `buffer` outlive the copy: the
                // stream is synchronized below, after an error too, before either can go.
                unsafe { target.async_copy_from(&*host, &self.stream) }.during(during())?;
                copied.record(&self.stream).during(during())?;
            }
            Ok(())
        };
        let queued = queue();
        let synchronized = self.stream.synchronize().during(during());
        queued.and(synchronized)?;
        Ok(buffer)
    }

    /// [`Gpu::download`]'s copy back at the bus's rate, for `len` elements of `buffer` that
    /// make at least [`STAGED_DOWNLOAD_BYTES`]: each chunk's worth goes to one of the `Gpu`'s two
    /// page-locked chunks, and the CPU's threads copy one chunk out while the bus fills the
    /// other. `None` where the chunks could not be allocated or the copy is smaller.
    ///
    /// The copies go on the legacy stream, as a synchronous copy does: each waits for the work
    /// queued before it on every blocking stream (another pipeline's stream, not only the
    /// `Gpu`'s), and the work queued after it on them waits for it.
    pub(super) fn download_staged<T: DeviceCopy + bytemuck::Pod + Send + Sync>(
        &self,
        what: &str,
        buffer: &DeviceSlice<T>,
        len: usize,
    ) -> GpuResult<Option<Vec<T>>> {
        let size = std::mem::size_of::<T>();
        let during = || format!("copying {what} back");
        if len > buffer.len() {
            let reason = format!("{} elements asked of a buffer of {}", len, buffer.len());
            return Err(GpuError::InvalidInput(format!("{}: {}", during(), reason)));
        }
        let mut staging = self.staging.borrow_mut();
        let chunks = match staging.ready() {
            Some(chunks) if size > 0 && len * size >= STAGED_DOWNLOAD_BYTES => chunks,
            _ => return Ok(None),
        };
        let legacy = std::ptr::null_mut();
        let wait = || {
            // SAFETY: waits for the legacy stream; it touches no memory.
            driver_result(unsafe { cust::sys::cuStreamSynchronize(legacy) }, during())
        };
        // The chunks' last copies (an upload's) must have left them before they are refilled.
        for copied in &chunks.copied {
            copied.synchronize().during(during())?;
        }
        let chunk = STAGING_CHUNK_BYTES / size;
        let mut host = vec![T::zeroed(); len];
        let parts = len.div_ceil(chunk);
        let base = buffer.as_device_ptr().as_raw();
        let queue = |part: usize, staged: &mut LockedBuffer<u8>| -> GpuResult<()> {
            let (first, count) = (part * chunk, chunk.min(len - part * chunk));
            // SAFETY: the copy reads `count` elements of `buffer` from `first` (within its
            // `len`, checked above) and writes as many bytes of the page-locked chunk, which
            // holds `STAGING_CHUNK_BYTES`; both outlive it: the legacy stream is waited for
            // before this function returns, after an error too.
            let result = unsafe {
                cust::sys::cuMemcpyDtoHAsync_v2(
                    staged.as_mut_ptr().cast(),
                    base + (first * size) as u64,
                    count * size,
                    legacy,
                )
            };
            driver_result(result, during())
        };
        let mut copy = || -> GpuResult<()> {
            queue(0, &mut chunks.host[0])?;
            wait()?;
            for (part, out) in host.chunks_mut(chunk).enumerate() {
                // The next part comes over the bus while this one is copied out of its chunk.
                if part + 1 < parts {
                    queue(part + 1, &mut chunks.host[(part + 1) % 2])?;
                }
                let staged: &[T] = bytemuck::try_cast_slice(&chunks.host[part % 2][..std::mem::size_of_val(out)])
                    .map_err(|e| GpuError::InvalidInput(format!("staging {what}: {e}")))?;
                let pieces = out.par_chunks_mut(1 << 16).zip(staged.par_chunks(1 << 16));
                pieces.for_each(|(to, from)| to.copy_from_slice(from));
                if part + 1 < parts {
                    wait()?;
                }
            }
            Ok(())
        };
        let copied = copy();
        let waited = wait();
        copied.and(waited)?;
        Ok(Some(host))
    }
}
