//! Real data in and out: NumPy `.npy` arrays (f32, u32 or i32, 1-D or 2-D; f16 matrices
//! widened to f32), 2-D images (grey-scale PNG, f32 `.npy`, FITS through [`crate::fits`]), and
//! filter and tap files. The `.npy` readers parse bytes in memory (`read_*_bytes`, which the
//! file readers call), so they can be fed bytes that never touched the disk. Every failure is
//! a [`GpuError::File`](cuda_kernels::gpu::GpuError::File) naming the file and what is wrong
//! with it; nothing here panics on what a user hands in.

pub use crate::image::{file_error, Image};

use crate::fits::Card;
use crate::image::{open, require_image_shape, with_file};
use cuda_kernels::conv2d::filter_side_ok;
use cuda_kernels::gpu::GpuResult;
use image::{GrayImage, ImageFormat, ImageReader};

use ndarray::{ArrayView, IxDyn, ShapeBuilder};
use ndarray_npy::npy::header::{Header, ParseHeaderError, ReadHeaderError};
use ndarray_npy::{ReadableElement, WritableElement, WriteNpyExt};
use std::fs::File;
use std::io::{BufReader, BufWriter, ErrorKind, Write};
use std::path::Path;

/// An element type of the `.npy` files read and written here.
pub trait NpyElement: ReadableElement + WritableElement + Copy {
    /// The dtype descriptors it is read from: little- and big-endian.
    const DTYPES: [&'static str; 2];
    const NAME: &'static str;
}

impl NpyElement for f32 {
    const DTYPES: [&'static str; 2] = ["<f4", ">f4"];
    const NAME: &'static str = "f32";
}

impl NpyElement for u32 {
    const DTYPES: [&'static str; 2] = ["<u4", ">u4"];
    const NAME: &'static str = "u32";
}

/// Labels, as SciPy's `ndimage.label` returns them.
impl NpyElement for i32 {
    const DTYPES: [&'static str; 2] = ["<i4", ">i4"];
    const NAME: &'static str = "i32";
}

/// How a report names a file the user gave: its name without the directories.
pub fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.display().to_string())
}

/// A shape as `3x4`, the way the reports write shapes; `()` for a scalar.
fn shape_text(shape: &[usize]) -> String {
    if shape.is_empty() {
        return "()".into();
    }
    shape.iter().map(usize::to_string).collect::<Vec<_>>().join("x")
}

/// A NumPy dtype descriptor with the Rust name of the common ones, for error messages.
fn dtype_text(descriptor: &str) -> String {
    let name = match descriptor.trim_start_matches(['<', '>', '=', '|']) {
        "f2" => "f16",
        "f4" => "f32",
        "f8" => "f64",
        "i1" => "i8",
        "i2" => "i16",
        "i4" => "i32",
        "i8" => "i64",
        "u1" => "u8",
        "u2" => "u16",
        "u4" => "u32",
        "u8" => "u64",
        "b1" => "bool",
        _ => return format!("'{}'", descriptor),
    };
    format!("{} ('{}')", name, descriptor)
}

fn header_reason(error: ReadHeaderError) -> String {
    match error {
        ReadHeaderError::Io(e) if e.kind() == ErrorKind::UnexpectedEof => "not a .npy file (too short)".into(),
        ReadHeaderError::Io(e) => format!("cannot read: {}", e),
        ReadHeaderError::Parse(ParseHeaderError::MagicString) => {
            "not a .npy file (it does not start with \\x93NUMPY)".into()
        }
        ReadHeaderError::Parse(e) => format!("not a valid .npy file: {}", e),
    }
}

/// NumPy's `max_header_size`: it refuses longer headers unless told they are safe (a long one
/// costs the dictionary parser time and stack); those of the arrays read here are ~100 bytes.
const MAX_NPY_HEADER: u64 = 10_000;

/// Brackets nested deeper than this in an `.npy` header are refused: the dictionary parser
/// backtracks, in time exponential in the depth (12 braces take a second, 20 would take
/// hours). The arrays read here nest 2 deep (a dictionary holding the shape), a structured
/// dtype 3 or 4.
const MAX_NPY_DEPTH: usize = 4;

/// Unless the header of the `.npy` file `bytes` is present, at most [`MAX_NPY_HEADER`] bytes
/// and [`MAX_NPY_DEPTH`] deep, why not: [`Header::from_reader`] allocates the length the file
/// declares before reading it (a version 2 header could ask for 4 GiB), then parses what it
/// reads. Files without the magic string or of an unknown version pass, for it to name what
/// is wrong.
fn check_header(bytes: &[u8]) -> Result<(), String> {
    let little_endian = |range| bytes.get(range).map(|b: &[u8]| b.iter().rev().fold(0, |n, &b| n << 8 | u64::from(b)));
    let declared = match bytes.get(..8) {
        Some([0x93, b'N', b'U', b'M', b'P', b'Y', 1, 0]) => little_endian(8..10).map(|len| (10, len)),
        Some([0x93, b'N', b'U', b'M', b'P', b'Y', 2 | 3, 0]) => little_endian(8..12).map(|len| (12, len)),
        _ => None,
    };
    let Some((prefix, len)) = declared else { return Ok(()) };
    if len > MAX_NPY_HEADER {
        return Err(format!(
            "has a header of {} bytes: NumPy reads at most {} unless told it is safe",
            len, MAX_NPY_HEADER
        ));
    }
    let Some(header) = bytes.get(prefix..prefix + len as usize) else {
        return Err(format!(
            "is truncated: its header needs {} bytes, the file holds {}",
            prefix + len as usize,
            bytes.len()
        ));
    };
    // Brackets in strings count too: no header read here has any.
    let depth = |depth: &mut usize, &byte: &u8| {
        match byte {
            b'(' | b'[' | b'{' => *depth += 1,
            b')' | b']' | b'}' => *depth = depth.saturating_sub(1),
            _ => {}
        }
        Some(*depth)
    };
    let deepest = header.iter().scan(0, depth).max().unwrap_or(0);
    if deepest > MAX_NPY_DEPTH {
        return Err(format!("nests brackets {} deep in its header: at most {} are read", deepest, MAX_NPY_DEPTH));
    }
    Ok(())
}

/// The header of the `.npy` file `bytes`, and the bytes after it.
fn npy_header<'a>(path: &Path, bytes: &'a [u8]) -> GpuResult<(Header, &'a [u8])> {
    check_header(bytes).map_err(|reason| file_error(path, reason))?;
    let mut rest = bytes;
    let header = Header::from_reader(&mut rest).map_err(|e| file_error(path, header_reason(e)))?;
    Ok((header, rest))
}

/// An `.npy` array checked up to its data: dtype, dimensions, and size against the bytes present.
struct NpyData<'a> {
    header: Header,
    shape: Vec<usize>,
    len: usize,
    /// Exactly the array's bytes.
    data: &'a [u8],
}

/// The `ndim`-dimensional array of `header` and `data` (the bytes after the header), whose
/// dtype is one of `dtypes` (`expected` names them in errors) and elements `size` bytes.
/// Everything is checked before the data is read, so a bad header cannot ask for more memory
/// than the file holds.
fn check_npy<'a>(
    path: &Path,
    (header, data): (Header, &'a [u8]),
    ndim: usize,
    dtypes: &[&str],
    expected: &str,
    size: usize,
) -> GpuResult<NpyData<'a>> {
    match header.type_descriptor.as_string() {
        Some(d) if dtypes.contains(&d.as_str()) => {}
        Some(d) => return Err(file_error(path, format!("holds {} values, expected {}", dtype_text(d), expected))),
        None => return Err(file_error(path, format!("holds a structured dtype, expected {}", expected))),
    }
    let shape = header.shape.clone();
    if shape.len() != ndim {
        let reason = format!("is {}-D (shape {}), expected a {}-D array", shape.len(), shape_text(&shape), ndim);
        return Err(file_error(path, reason));
    }
    let len = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let bytes = len.and_then(|n| n.checked_mul(size));
    let (Some(len), Some(bytes)) = (len, bytes) else {
        return Err(file_error(path, format!("has an impossible shape {}", shape_text(&shape))));
    };
    if len == 0 {
        return Err(file_error(path, format!("is empty (shape {})", shape_text(&shape))));
    }
    let present = data.len();
    if present != bytes {
        let what = if present < bytes { "is truncated" } else { "has bytes past its data" };
        let shape = shape_text(&shape);
        let reason = format!("{what}: shape {shape} needs {bytes} bytes of data, the file holds {present}");
        return Err(file_error(path, reason));
    }
    Ok(NpyData { header, shape, len, data })
}

/// `data`, read in the file's order, in row-major order.
fn row_major<T: Copy>(path: &Path, npy: &NpyData, data: Vec<T>) -> GpuResult<Vec<T>> {
    if !npy.header.layout.is_fortran() {
        return Ok(data);
    }
    let array = ArrayView::from_shape(IxDyn(&npy.shape).f(), &data)
        .map_err(|e| file_error(path, format!("cannot read the data: {}", e)))?;
    Ok(array.iter().copied().collect())
}

/// The `ndim`-dimensional array of `T` of a parsed `.npy` header and the bytes after it: its
/// shape and its elements in row-major order. `expected` names the dtypes accepted.
fn decode_npy<T: NpyElement>(
    path: &Path,
    parsed: (Header, &[u8]),
    ndim: usize,
    expected: &str,
) -> GpuResult<(Vec<usize>, Vec<T>)> {
    let npy = check_npy(path, parsed, ndim, &T::DTYPES, expected, size_of::<T>())?;
    let mut reader = npy.data;
    let data = T::read_to_end_exact_vec(&mut reader, &npy.header.type_descriptor, npy.len)
        .map_err(|e| file_error(path, format!("cannot read the data: {}", e)))?;
    let data = row_major(path, &npy, data)?;
    Ok((npy.shape, data))
}

/// `T`'s dtype, as errors name the one expected.
fn expected_dtype<T: NpyElement>() -> String {
    format!("{} ('{}')", T::NAME, T::DTYPES[0])
}

/// An IEEE half's value: sign, 5-bit exponent (bias 15; 0 for subnormals, 31 for infinities
/// and NaN), 10-bit mantissa. Every half is exactly an f32.
pub fn f16_to_f32(bits: u16) -> f32 {
    let mantissa = (bits & 0x3ff) as f32;
    let magnitude = match (bits >> 10) & 0x1f {
        0 => mantissa * 2f32.powi(-24),
        31 if mantissa == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        exponent => (1024.0 + mantissa) * 2f32.powi(exponent as i32 - 25),
    };
    if bits & 0x8000 != 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// A 2-D f32 array, or an f16 one widened to f32 (exactly), from the `.npy` file `bytes`
/// (`path` names it in errors).
pub fn read_matrix_f32_or_f16_bytes(path: &Path, bytes: &[u8]) -> GpuResult<((usize, usize), Vec<f32>)> {
    let parsed = npy_header(path, bytes)?;
    let expected = "f32 ('<f4') or f16 ('<f2')";
    let big_endian = match parsed.0.type_descriptor.as_string().map(String::as_str) {
        Some("<f2") => false,
        Some(">f2") => true,
        _ => {
            let (shape, data) = decode_npy::<f32>(path, parsed, 2, expected)?;
            return Ok(((shape[0], shape[1]), data));
        }
    };
    let npy = check_npy(path, parsed, 2, &["<f2", ">f2"], expected, 2)?;
    let halves = npy
        .data
        .as_chunks::<2>()
        .0
        .iter()
        .map(|&pair| f16_to_f32(if big_endian { u16::from_be_bytes(pair) } else { u16::from_le_bytes(pair) }));
    let data = row_major(path, &npy, halves.collect())?;
    Ok(((npy.shape[0], npy.shape[1]), data))
}

/// A 2-D f32 array, or an f16 one widened to f32 (exactly), from an `.npy` file.
pub fn read_matrix_f32_or_f16(path: &Path) -> GpuResult<((usize, usize), Vec<f32>)> {
    with_file(path, |bytes| read_matrix_f32_or_f16_bytes(path, bytes))
}

/// A 1-D array of `T` from the `.npy` file `bytes` (`path` names it in errors).
pub fn read_vector_bytes<T: NpyElement>(path: &Path, bytes: &[u8]) -> GpuResult<Vec<T>> {
    Ok(decode_npy(path, npy_header(path, bytes)?, 1, &expected_dtype::<T>())?.1)
}

/// A 1-D array of `T` from an `.npy` file.
pub fn read_vector<T: NpyElement>(path: &Path) -> GpuResult<Vec<T>> {
    with_file(path, |bytes| read_vector_bytes(path, bytes))
}

/// A 2-D array of `T` from the `.npy` file `bytes` (`path` names it in errors): its (rows,
/// columns) and its elements row by row.
pub fn read_matrix_bytes<T: NpyElement>(path: &Path, bytes: &[u8]) -> GpuResult<((usize, usize), Vec<T>)> {
    let (shape, data) = decode_npy(path, npy_header(path, bytes)?, 2, &expected_dtype::<T>())?;
    Ok(((shape[0], shape[1]), data))
}

/// A 2-D array of `T` from an `.npy` file: its (rows, columns) and its elements row by row.
pub fn read_matrix<T: NpyElement>(path: &Path) -> GpuResult<((usize, usize), Vec<T>)> {
    with_file(path, |bytes| read_matrix_bytes(path, bytes))
}

/// Fails unless every value is finite: a NaN or infinity in an input makes the GPU and CPU
/// results incomparable (NaN never passes a check).
pub fn require_finite(path: &Path, values: &[f32]) -> GpuResult<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(file_error(path, format!("element {} is {}; inputs must be finite", i, values[i]))),
    }
}

/// Writes `text` to the file at `path`; an error names it.
pub fn write_text(path: &Path, text: &str) -> GpuResult<()> {
    std::fs::write(path, text).map_err(|e| file_error(path, format!("cannot write: {}", e)))
}

fn write_npy<T: NpyElement>(path: &Path, shape: &[usize], data: &[T]) -> GpuResult<()> {
    let cannot = |e: &dyn std::fmt::Display| file_error(path, format!("cannot write: {}", e));
    let array = ArrayView::from_shape(IxDyn(shape), data).map_err(|e| cannot(&e))?;
    let mut writer = BufWriter::new(File::create(path).map_err(|e| cannot(&e))?);
    array.write_npy(&mut writer).map_err(|e| cannot(&e))?;
    writer.flush().map_err(|e| cannot(&e))
}

/// Writes `data` as a 1-D `.npy` array (native byte order: little-endian on every host here).
pub fn write_vector<T: NpyElement>(path: &Path, data: &[T]) -> GpuResult<()> {
    write_npy(path, &[data.len()], data)
}

/// Writes `data`, row by row, as a `rows`×`cols` `.npy` array.
pub fn write_matrix<T: NpyElement>(path: &Path, (rows, cols): (usize, usize), data: &[T]) -> GpuResult<()> {
    write_npy(path, &[rows, cols], data)
}

/// A PNG of any colour type and bit depth as luminance in [0, 1] (alpha dropped).
pub fn read_png(path: &Path) -> GpuResult<Image> {
    let reader = ImageReader::new(BufReader::new(open(path)?))
        .with_guessed_format()
        .map_err(|e| file_error(path, format!("cannot read: {}", e)))?;
    if reader.format() != Some(ImageFormat::Png) {
        return Err(file_error(path, "not a PNG file (images are read from .png, .npy or .fits, by extension)"));
    }
    let image = reader.decode().map_err(|e| file_error(path, format!("not a valid PNG: {}", e)))?;
    let (width, height) = (image.width() as usize, image.height() as usize);
    if width == 0 || height == 0 {
        return Err(file_error(path, format!("is empty ({}x{})", width, height)));
    }
    // Colour converts with weights that sum to a hair over 1: clamp to keep white at 1.
    let pixels = image.to_luma32f().into_raw().into_iter().map(|v| v.clamp(0.0, 1.0)).collect();
    Ok(Image { width, height, pixels })
}

/// Writes `pixels` (row by row) as an 8-bit grey PNG, each value clamped to [0, 1].
pub fn write_png(path: &Path, width: usize, height: usize, pixels: &[f32]) -> GpuResult<()> {
    let cannot = |reason: String| file_error(path, format!("cannot write: {}", reason));
    let (Ok(w), Ok(h)) = (u32::try_from(width), u32::try_from(height)) else {
        return Err(cannot(format!("{}x{} is too large for a PNG", width, height)));
    };
    // NaN clamps to NaN, which `as u8` turns into 0.
    let bytes = pixels.iter().map(|&v| (v.clamp(0.0, 1.0) * 255.0).round() as u8).collect();
    let image = GrayImage::from_raw(w, h, bytes)
        .ok_or_else(|| cannot(format!("{} pixels do not make a {}x{} image", pixels.len(), width, height)))?;
    image.save_with_format(path, ImageFormat::Png).map_err(|e| cannot(e.to_string()))
}

/// Whether `path` ends in one of `extensions` (without the dot, any case).
fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    let extension = path.extension().and_then(|e| e.to_str());
    extension.is_some_and(|e| extensions.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// The formats of 2-D images, told by the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// 8-bit (or 16-bit) grey or colour, read as luminance in [0, 1].
    Png,
    /// A 2-D f32 NumPy array: rows by columns.
    Npy,
    /// The first 2-D image of a FITS file (see [`crate::fits`]), read as f32 and written as
    /// BITPIX -32.
    Fits,
}

impl ImageKind {
    /// `.npy`, or `.fits`, `.fit` or `.fts` (any case), gzipped (`.fits.gz`) or not, or fpack's
    /// `.fz`; anything else is a PNG, as every image was before the float formats came.
    pub fn of(path: &Path) -> ImageKind {
        let fits = |path: &Path| has_extension(path, &["fits", "fit", "fts", "fz"]);
        if has_extension(path, &["npy"]) {
            ImageKind::Npy
        } else if fits(path) || (has_extension(path, &["gz"]) && fits(&path.with_extension(""))) {
            ImageKind::Fits
        } else {
            ImageKind::Png
        }
    }
}

/// A 2-D image in the format its extension names (see [`ImageKind::of`]). NaN pixels of an
/// `.npy` or FITS image (blanked areas) are kept: the caller decides whether it can use them.
pub fn read_image(path: &Path) -> GpuResult<Image> {
    match ImageKind::of(path) {
        ImageKind::Png => read_png(path),
        ImageKind::Npy => {
            let ((height, width), pixels) = read_matrix::<f32>(path)?;
            Ok(Image { width, height, pixels })
        }
        ImageKind::Fits => crate::fits::read_image(path),
    }
}

/// Writes `pixels` (row by row, `width` a row) in the format the extension names: f32 for
/// `.npy` and FITS, else an 8-bit grey PNG clamped to [0, 1].
pub fn write_image(path: &Path, width: usize, height: usize, pixels: &[f32]) -> GpuResult<()> {
    write_image_with(path, width, height, pixels, &[])
}

/// [`write_image`], with `cards` in the header where the format is FITS (the other formats
/// have no header: they are left out).
pub fn write_image_with(path: &Path, width: usize, height: usize, pixels: &[f32], cards: &[Card]) -> GpuResult<()> {
    match ImageKind::of(path) {
        ImageKind::Png => write_png(path, width, height, pixels),
        ImageKind::Npy => {
            require_image_shape(path, width, height, pixels)?;
            write_matrix(path, (height, width), pixels)
        }
        ImageKind::Fits => crate::fits::write_image_with(path, width, height, pixels, cards),
    }
}

/// `word` as a finite f32, or why not.
fn finite_number(word: &str) -> Result<f32, String> {
    match word.parse::<f32>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(format!("`{}` is not a finite number", word)),
        Err(_) => Err(format!("`{}` is not a number", word)),
    }
}

/// A square filter from text: one row per line, numbers separated by white space, blank lines
/// ignored; 3×3, 5×5 or 7×7. Returns its side and its taps row by row.
pub fn parse_filter(text: &str) -> Result<(usize, Vec<f32>), String> {
    let mut rows = Vec::new();
    for (line, row) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let parse = |word| finite_number(word).map_err(|e| format!("line {}: {}", line + 1, e));
        rows.push(row.split_whitespace().map(parse).collect::<Result<Vec<f32>, String>>()?);
    }
    let side = rows.len();
    if let Some(row) = rows.iter().find(|r| r.len() != side) {
        return Err(format!("{} rows of {} numbers: a filter must be square", side, row.len()));
    }
    if !filter_side_ok(side) {
        return Err(format!("a {0}x{0} filter: the side must be 3, 5 or 7", side));
    }
    Ok((side, rows.concat()))
}

/// The whole of a text file.
fn read_text(path: &Path) -> GpuResult<String> {
    std::io::read_to_string(open(path)?).map_err(|e| match e.kind() {
        ErrorKind::InvalidData => file_error(path, "not a text file"),
        _ => file_error(path, format!("cannot read: {}", e)),
    })
}

/// A filter file, as [`parse_filter`] reads it.
pub fn read_filter(path: &Path) -> GpuResult<(usize, Vec<f32>)> {
    parse_filter(&read_text(path)?).map_err(|reason| file_error(path, reason))
}

/// Unless `count` taps make a 1-D filter the kernels take, why not.
fn tap_count(count: usize) -> Result<(), String> {
    if filter_side_ok(count) {
        Ok(())
    } else {
        Err(format!("holds {} taps: a 1-D filter has 3, 5 or 7", count))
    }
}

/// The taps of a 1-D filter from text: 3, 5 or 7 numbers separated by white space, commas or
/// line breaks.
pub fn parse_taps(text: &str) -> Result<Vec<f32>, String> {
    let words = text.split(|c: char| c == ',' || c.is_whitespace()).filter(|w| !w.is_empty());
    let parse = |(i, word)| finite_number(word).map_err(|e| format!("tap {}: {}", i + 1, e));
    let taps = words.enumerate().map(parse).collect::<Result<Vec<f32>, String>>()?;
    tap_count(taps.len())?;
    Ok(taps)
}

/// A 1-D filter from a 1-D f32 `.npy` file, or else from text as [`parse_taps`] reads it.
pub fn read_taps(path: &Path) -> GpuResult<Vec<f32>> {
    if !has_extension(path, &["npy"]) {
        return parse_taps(&read_text(path)?).map_err(|reason| file_error(path, reason));
    }
    let taps = read_vector::<f32>(path)?;
    require_finite(path, &taps)?;
    tap_count(taps.len()).map_err(|reason| file_error(path, reason))?;
    Ok(taps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_support::{error_of, scratch};

    #[test]
    fn npy_round_trips_f32_and_u32_vectors_and_matrices() {
        let dir = scratch("io", "round-trip");
        let vector = [1.5f32, -2.25, 0.0, 3e-8, f32::MAX];
        write_vector(&dir.join("v.npy"), &vector).unwrap();
        assert_eq!(read_vector::<f32>(&dir.join("v.npy")).unwrap(), vector);

        let matrix: Vec<f32> = (0..6).map(|i| i as f32 * 0.5 - 1.0).collect();
        write_matrix(&dir.join("m.npy"), (2, 3), &matrix).unwrap();
        assert_eq!(read_matrix::<f32>(&dir.join("m.npy")).unwrap(), ((2, 3), matrix));

        let counts = [0u32, 7, u32::MAX, 42];
        write_vector(&dir.join("c.npy"), &counts).unwrap();
        assert_eq!(read_vector::<u32>(&dir.join("c.npy")).unwrap(), counts);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A version 1.0 `.npy` file as NumPy writes it, for headers this crate would not write;
    /// `descr` is the dtype's Python literal.
    fn npy_bytes(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
        let order = if fortran { "True" } else { "False" };
        let dict = format!("{{'descr': {descr}, 'fortran_order': {order}, 'shape': {shape}, }}");
        let mut header = dict.into_bytes();
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(b' ');
        }
        header.push(b'\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend(header);
        bytes.extend_from_slice(data);
        bytes
    }

    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn npy_in_fortran_order_is_read_row_major() {
        let dir = scratch("io", "fortran");
        let path = dir.join("f.npy");
        // [[1, 2, 3], [4, 5, 6]] stored column by column.
        std::fs::write(&path, npy_bytes("'<f4'", true, "(2, 3)", &f32_bytes(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]))).unwrap();
        assert_eq!(read_matrix::<f32>(&path).unwrap(), ((2, 3), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn f16_matrices_are_widened_exactly_in_either_byte_order_and_layout() {
        let dir = scratch("io", "f16");
        // 1, -2, 0.5, 65504 (the largest half), 2^-24 (the smallest subnormal), -0.
        let halves: [u16; 6] = [0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x8000];
        let widened = [1.0, -2.0, 0.5, 65504.0, 2f32.powi(-24), -0.0];
        let little: Vec<u8> = halves.iter().flat_map(|h| h.to_le_bytes()).collect();
        let big: Vec<u8> = halves.iter().flat_map(|h| h.to_be_bytes()).collect();
        std::fs::write(dir.join("le.npy"), npy_bytes("'<f2'", false, "(2, 3)", &little)).unwrap();
        std::fs::write(dir.join("be.npy"), npy_bytes("'>f2'", false, "(2, 3)", &big)).unwrap();
        for name in ["le.npy", "be.npy"] {
            let (shape, values) = read_matrix_f32_or_f16(&dir.join(name)).unwrap();
            assert_eq!(shape, (2, 3), "{name}");
            assert_eq!(values.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), widened.map(f32::to_bits), "{name}");
        }
        // [[1, 65504], [-2, 2^-24], [0.5, -0]] stored column by column.
        let columns: Vec<u8> = [0, 1, 2, 3, 4, 5].iter().flat_map(|&i| halves[i].to_le_bytes()).collect();
        std::fs::write(dir.join("f.npy"), npy_bytes("'<f2'", true, "(3, 2)", &columns)).unwrap();
        let (shape, values) = read_matrix_f32_or_f16(&dir.join("f.npy")).unwrap();
        assert_eq!((shape, values), ((3, 2), vec![1.0, 65504.0, -2.0, 2f32.powi(-24), 0.5, -0.0]));
        assert!(f16_to_f32(0x7c00).is_infinite() && f16_to_f32(0x7e00).is_nan());
        // f32 files read as before; other types name both accepted ones.
        write_matrix(&dir.join("f32.npy"), (1, 2), &[1.5f32, 2.5]).unwrap();
        assert_eq!(read_matrix_f32_or_f16(&dir.join("f32.npy")).unwrap(), ((1, 2), vec![1.5, 2.5]));
        let f8 = npy_bytes("'<f8'", false, "(1, 1)", &1.0f64.to_le_bytes());
        let f8 = error_of(read_matrix_f32_or_f16_bytes(Path::new("f8.npy"), &f8));
        assert!(f8.contains("holds f64 ('<f8') values, expected f32 ('<f4') or f16 ('<f2')"), "{}", f8);
        std::fs::write(dir.join("short.npy"), npy_bytes("'<f2'", false, "(2, 3)", &little[..10])).unwrap();
        assert!(error_of(read_matrix_f32_or_f16(&dir.join("short.npy"))).contains("is truncated"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_npy_files_give_errors_naming_the_file_and_the_problem() {
        let dir = scratch("io", "bad-npy");
        let path = |name: &str| dir.join(name);
        let missing = error_of(read_vector::<f32>(&path("missing.npy")));
        assert!(missing.contains("missing.npy: no such file"), "{}", missing);

        std::fs::write(path("text.npy"), "this is not numpy at all").unwrap();
        assert!(error_of(read_vector::<f32>(&path("text.npy"))).contains("not a .npy file"));
        std::fs::write(path("tiny.npy"), "ab").unwrap();
        assert!(error_of(read_vector::<f32>(&path("tiny.npy"))).contains("not a .npy file"));

        let whole = npy_bytes("'<f4'", false, "(4,)", &f32_bytes(&[1.0, 2.0, 3.0, 4.0]));
        std::fs::write(path("short.npy"), &whole[..whole.len() - 3]).unwrap();
        let short = error_of(read_vector::<f32>(&path("short.npy")));
        assert!(short.contains("is truncated") && short.contains("needs 16 bytes"), "{}", short);
        // A header that promises far more than the file holds is an error, not an allocation.
        std::fs::write(path("huge.npy"), npy_bytes("'<f4'", false, "(4000000000000,)", &[])).unwrap();
        assert!(error_of(read_vector::<f32>(&path("huge.npy"))).contains("is truncated"));

        write_vector(&path("f.npy"), &[1.0f32, 2.0]).unwrap();
        let dtype = error_of(read_vector::<u32>(&path("f.npy")));
        assert!(dtype.contains("holds f32 ('<f4') values, expected u32 ('<u4')"), "{}", dtype);
        std::fs::write(path("f8.npy"), npy_bytes("'<f8'", false, "(1,)", &1.0f64.to_le_bytes())).unwrap();
        assert!(error_of(read_vector::<f32>(&path("f8.npy"))).contains("holds f64 ('<f8') values"));

        let ndim = error_of(read_matrix::<f32>(&path("f.npy")));
        assert!(ndim.contains("is 1-D (shape 2), expected a 2-D array"), "{}", ndim);
        std::fs::write(path("empty.npy"), npy_bytes("'<f4'", false, "(0, 3)", &[])).unwrap();
        assert!(error_of(read_matrix::<f32>(&path("empty.npy"))).contains("is empty (shape 0x3)"));

        let unwritable = error_of(write_vector(&dir.join("no-such-dir").join("out.npy"), &[1.0f32]));
        assert!(unwritable.contains("cannot write"), "{}", unwritable);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn npy_headers_are_checked_before_they_are_parsed() {
        let path = Path::new("memory.npy");
        let error = |bytes: &[u8]| error_of(read_vector_bytes::<f32>(path, bytes));
        // A version 2 header declaring 4 GiB, which the header parser would allocate first.
        let huge = error(b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr': '<f4'");
        assert!(huge.contains("memory.npy: has a header of 4294967295 bytes: NumPy reads at most 10000"), "{}", huge);
        let cut = error(b"\x93NUMPY\x01\x00\xc8\x00{'descr': '<f4'");
        assert!(cut.contains("is truncated: its header needs 210 bytes, the file holds 25"), "{}", cut);
        // Brackets 30 deep: the dictionary parser backtracks, in time exponential in the depth.
        let nested = format!("{}{}", "[".repeat(30), "]".repeat(30));
        let deep = error(&npy_bytes(&nested, false, "(1,)", &[0; 4]));
        assert!(deep.contains("nests brackets 31 deep in its header: at most 4 are read"), "{}", deep);
        // A structured dtype is still named as one.
        let fields = npy_bytes("[('x', '<f4', (2,))]", false, "(1,)", &[0; 8]);
        assert!(error(&fields).contains("holds a structured dtype"));
        // The in-memory readers read what the file readers do.
        let bytes = npy_bytes("'<f4'", true, "(2, 1)", &f32_bytes(&[1.0, 2.0]));
        assert_eq!(read_matrix_bytes::<f32>(path, &bytes).unwrap(), ((2, 1), vec![1.0, 2.0]));
        assert_eq!(
            read_vector_bytes::<f32>(path, &npy_bytes("'<f4'", false, "(1,)", &f32_bytes(&[3.0]))).unwrap(),
            [3.0]
        );
    }

    #[test]
    fn non_finite_inputs_are_rejected() {
        assert!(require_finite(Path::new("x.npy"), &[1.0, -2.0]).is_ok());
        let nan = error_of(require_finite(Path::new("x.npy"), &[1.0, f32::NAN]));
        assert!(nan.contains("x.npy: element 1 is NaN"), "{}", nan);
    }

    #[test]
    fn png_round_trips_and_bad_pngs_are_errors() {
        let dir = scratch("io", "png");
        let (width, height) = (5, 3);
        let pixels: Vec<f32> = (0..width * height).map(|i| (i * 17) as f32 / 255.0).collect();
        write_png(&dir.join("grey.png"), width, height, &pixels).unwrap();
        assert_eq!(read_png(&dir.join("grey.png")).unwrap(), Image { width, height, pixels });

        // Out-of-range values are clamped; colour images are read as luminance.
        write_png(&dir.join("clamped.png"), 3, 1, &[-2.0, 0.5, 7.0]).unwrap();
        let clamped = read_png(&dir.join("clamped.png")).unwrap().pixels;
        assert_eq!(clamped, vec![0.0, 128.0 / 255.0, 1.0], "0.5 is 127.5 grey levels, rounded up");
        let mut rgb = image::RgbImage::from_pixel(2, 1, image::Rgb([255, 255, 255]));
        rgb.put_pixel(1, 0, image::Rgb([255, 0, 0]));
        rgb.save(dir.join("rgb.png")).unwrap();
        let luma = read_png(&dir.join("rgb.png")).unwrap().pixels;
        assert_eq!(luma[0], 1.0);
        assert!((luma[1] - 0.2126).abs() < 1e-3, "red has the luminance 0.2126: {}", luma[1]);

        assert!(error_of(read_png(&dir.join("nothing.png"))).contains("no such file"));
        write_vector(&dir.join("array.npy"), &[1.0f32]).unwrap();
        assert!(error_of(read_png(&dir.join("array.npy"))).contains("not a PNG file"));
        let whole = std::fs::read(dir.join("grey.png")).unwrap();
        std::fs::write(dir.join("cut.png"), &whole[..whole.len() / 2]).unwrap();
        assert!(error_of(read_png(&dir.join("cut.png"))).contains("not a valid PNG"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn filter_files_are_parsed_and_checked() {
        let (side, taps) = parse_filter("0 -1 0\n-1 5 -1\n\n 0 -1 0 \n").unwrap();
        assert_eq!((side, taps), (3, vec![0.0, -1.0, 0.0, -1.0, 5.0, -1.0, 0.0, -1.0, 0.0]));
        assert_eq!(parse_filter(&"1 1 1 1 1 1 1\n".repeat(7)).unwrap(), (7, vec![1.0; 49]));
        assert!(parse_filter("1 2 3\n4 5 6\n").unwrap_err().contains("must be square"));
        assert!(parse_filter("1 2 3\n4 5\n7 8 9\n").unwrap_err().contains("must be square"));
        assert!(parse_filter("1 2\n3 4\n").unwrap_err().contains("the side must be 3, 5 or 7"));
        assert!(parse_filter("1\n").unwrap_err().contains("the side must be 3, 5 or 7"));
        assert!(parse_filter("").unwrap_err().contains("the side must be 3, 5 or 7"));
        let word = parse_filter("1 2 3\n4 five 6\n7 8 9\n").unwrap_err();
        assert!(word.contains("line 2: `five` is not a number"), "{}", word);
        assert!(parse_filter("1 2 3\n4 inf 6\n7 8 9\n").unwrap_err().contains("not a finite number"));

        let dir = scratch("io", "filter");
        std::fs::write(dir.join("edge.txt"), "1 0 -1\n2 0 -2\n1 0 -1\n").unwrap();
        assert_eq!(read_filter(&dir.join("edge.txt")).unwrap().0, 3);
        std::fs::write(dir.join("even.txt"), "1 1\n1 1\n").unwrap();
        let even = error_of(read_filter(&dir.join("even.txt")));
        assert!(even.contains("even.txt: a 2x2 filter"), "{}", even);
        std::fs::write(dir.join("binary.txt"), [0xFFu8, 0xFE, 0x00]).unwrap();
        assert!(error_of(read_filter(&dir.join("binary.txt"))).contains("not a text file"));
        assert!(error_of(read_filter(&dir.join("absent.txt"))).contains("no such file"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn images_are_read_and_written_by_extension() {
        let dir = scratch("io", "images");
        assert_eq!(ImageKind::of(Path::new("a/sky.FITS")), ImageKind::Fits);
        assert_eq!(ImageKind::of(Path::new("sky.fit")), ImageKind::Fits);
        assert_eq!(ImageKind::of(Path::new("sky.fts")), ImageKind::Fits);
        assert_eq!(ImageKind::of(Path::new("sky.npy")), ImageKind::Npy);
        assert_eq!(ImageKind::of(Path::new("photo.png")), ImageKind::Png);
        assert_eq!(ImageKind::of(Path::new("photo")), ImageKind::Png, "as before the float formats");

        // 3 wide, 2 high, with values a PNG could not hold; NaN survives the float formats.
        let pixels = vec![-1.5f32, 0.25, 7.0, f32::NAN, 1e-9, 3.0e5];
        for name in ["out.npy", "out.fits"] {
            let path = dir.join(name);
            write_image(&path, 3, 2, &pixels).unwrap();
            let image = read_image(&path).unwrap();
            assert_eq!((image.width, image.height), (3, 2), "{}", name);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&image.pixels), bits(&pixels), "{}", name);
        }
        // The .npy is rows by columns, as NumPy indexes an image.
        assert_eq!(read_matrix::<f32>(&dir.join("out.npy")).unwrap().0, (2, 3));
        write_image(&dir.join("out.png"), 3, 2, &pixels).unwrap();
        assert_eq!(read_image(&dir.join("out.png")).unwrap().pixels, vec![0.0, 64.0 / 255.0, 1.0, 0.0, 0.0, 1.0]);

        let mismatch = error_of(write_image(&dir.join("bad.npy"), 4, 2, &pixels));
        assert!(mismatch.contains("bad.npy: cannot write: 6 pixels do not make a 4x2 image"), "{}", mismatch);
        write_vector(&dir.join("v.npy"), &[1.0f32, 2.0]).unwrap();
        assert!(error_of(read_image(&dir.join("v.npy"))).contains("is 1-D (shape 2), expected a 2-D array"));
        std::fs::write(dir.join("text.fits"), "not FITS").unwrap();
        assert!(error_of(read_image(&dir.join("text.fits"))).contains("text.fits: not a FITS file"));
        let jpeg = error_of(read_image(&dir.join("out.npy").with_extension("jpg")));
        assert!(jpeg.contains("no such file"), "{}", jpeg);
        std::fs::copy(dir.join("out.npy"), dir.join("photo.jpg")).unwrap();
        let jpeg = error_of(read_image(&dir.join("photo.jpg")));
        assert!(jpeg.contains("not a PNG file (images are read from .png, .npy or .fits"), "{}", jpeg);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn tap_files_are_parsed_and_checked() {
        assert_eq!(parse_taps("0.25 0.5 0.25").unwrap(), vec![0.25, 0.5, 0.25]);
        assert_eq!(parse_taps("1,2,3,\n4, 5\n").unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(parse_taps("-1\n0\n1\n0\n-1\n2\n-2\n").unwrap().len(), 7);
        assert!(parse_taps("1 2").unwrap_err().contains("holds 2 taps: a 1-D filter has 3, 5 or 7"));
        assert!(parse_taps("1 2 3 4").unwrap_err().contains("holds 4 taps"));
        assert!(parse_taps("").unwrap_err().contains("holds 0 taps"));
        assert!(parse_taps(&"1 ".repeat(9)).unwrap_err().contains("holds 9 taps"));
        let word = parse_taps("1, x, 3").unwrap_err();
        assert!(word.contains("tap 2: `x` is not a number"), "{}", word);
        assert!(parse_taps("1 NaN 3").unwrap_err().contains("tap 2: `NaN` is not a finite number"));
        assert!(parse_taps("1 2 -inf").unwrap_err().contains("not a finite number"));

        let dir = scratch("io", "taps");
        std::fs::write(dir.join("taps.txt"), "0.1, 0.2, 0.4, 0.2, 0.1\n").unwrap();
        assert_eq!(read_taps(&dir.join("taps.txt")).unwrap(), vec![0.1, 0.2, 0.4, 0.2, 0.1]);
        write_vector(&dir.join("taps.npy"), &[1.0f32, -2.0, 1.0]).unwrap();
        assert_eq!(read_taps(&dir.join("taps.npy")).unwrap(), vec![1.0, -2.0, 1.0]);
        write_vector(&dir.join("four.npy"), &[1.0f32; 4]).unwrap();
        let four = error_of(read_taps(&dir.join("four.npy")));
        assert!(four.contains("four.npy: holds 4 taps"), "{}", four);
        write_vector(&dir.join("nan.npy"), &[1.0f32, f32::NAN, 1.0]).unwrap();
        assert!(error_of(read_taps(&dir.join("nan.npy"))).contains("nan.npy: element 1 is NaN"));
        write_matrix(&dir.join("square.npy"), (3, 3), &[1.0f32; 9]).unwrap();
        assert!(error_of(read_taps(&dir.join("square.npy"))).contains("expected a 1-D array"));
        std::fs::write(dir.join("bad.txt"), "1 2 three").unwrap();
        assert!(error_of(read_taps(&dir.join("bad.txt"))).contains("bad.txt: tap 3: `three` is not a number"));
        assert!(error_of(read_taps(&dir.join("absent.txt"))).contains("no such file"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
