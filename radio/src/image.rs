//! What every image format shares: the [`Image`] its reader returns, the errors that name the
//! user's file, and the checks before reading or writing one. [`crate::io`] (PNG, `.npy`, and
//! dispatch by extension) and [`crate::fits`] both build on this module, which imports neither,
//! so that io can hand FITS files to fits without the two importing each other.

use cuda_kernels::gpu::{GpuError, GpuResult};
use memmap2::Mmap;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::ops::Deref;
use std::path::Path;

/// A 2-D image of f32, row by row: a PNG's luminance in [0, 1] (its top row first), or the
/// values of an `.npy` or FITS image as stored (row 0 is its first row).
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<f32>,
}

/// The error for a file the user named: `<path>: <reason>`.
pub fn file_error(path: &Path, reason: impl Into<String>) -> GpuError {
    GpuError::File { path: path.display().to_string(), reason: reason.into() }
}

/// The file at `path`, opened for reading; a missing file is said to be so.
pub(crate) fn open(path: &Path) -> GpuResult<File> {
    File::open(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => file_error(path, "no such file"),
        _ => file_error(path, format!("cannot open: {}", e)),
    })
}

/// The bytes of a whole file: mapped, or read where it cannot be mapped.
enum FileBytes {
    Mapped(Mmap),
    Read(Vec<u8>),
}

impl Deref for FileBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(map) => map,
            FileBytes::Read(bytes) => bytes,
        }
    }
}

/// Bytes of a map that [`with_file`] lets go of on a thread of its own: unmapping a file of
/// this size or more costs the caller milliseconds (each page's entry torn down), more than
/// starting a thread.
const UNMAP_APART: usize = 8 << 20;

/// `parse` of the whole file at `path` ([`read_file`]). A large map is then let go of on a
/// thread of its own, so that the caller goes on with what it parsed while the pages are
/// unmapped.
pub(crate) fn with_file<T>(path: &Path, parse: impl FnOnce(&[u8]) -> GpuResult<T>) -> GpuResult<T> {
    let bytes = read_file(path)?;
    let parsed = parse(&bytes);
    if let FileBytes::Mapped(map) = bytes {
        if map.len() >= UNMAP_APART {
            // Should the thread not start, the closure, and with it the map, is dropped here.
            let _ = std::thread::Builder::new().name("unmap".into()).spawn(move || drop(map));
        }
    }
    parsed
}

/// The whole of the file at `path`, for the readers that parse bytes in memory. A regular
/// file is mapped, not read: reading a large image into a fresh buffer costs more than
/// decoding it (the copy, and a page fault for every 4 KiB of the buffer), while its mapped
/// pages come straight from the page cache, each decoding thread faulting in its own part.
/// Anything else (a pipe, a device, a file whose size says 0, as /proc's do) is read to its end.
fn read_file(path: &Path) -> GpuResult<FileBytes> {
    let mut file = open(path)?;
    if file.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) {
        // SAFETY: the map is read-only and dropped once the file is parsed. Its bytes change if
        // another process writes the file meanwhile (a read racing that write gets a mix of old
        // and new too), and a page past a concurrent truncation raises SIGBUS when touched,
        // ending the program: the hazard every reader that maps files takes, astropy's by default.
        if let Ok(map) = unsafe { Mmap::map(&file) } {
            return Ok(FileBytes::Mapped(map));
        }
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| file_error(path, format!("cannot read: {}", e)))?;
    Ok(FileBytes::Read(bytes))
}

/// Before writing `pixels` as a `width`×`height` image: fails unless they make one.
pub(crate) fn require_image_shape(path: &Path, width: usize, height: usize, pixels: &[f32]) -> GpuResult<()> {
    if pixels.is_empty() || width.checked_mul(height) != Some(pixels.len()) {
        let reason = format!("cannot write: {} pixels do not make a {}x{} image", pixels.len(), width, height);
        return Err(file_error(path, reason));
    }
    Ok(())
}
