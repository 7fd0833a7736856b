//! A deterministic mutation fuzzer for the FITS and `.npy` readers, on stable Rust: seeds
//! made by the crate's own writers, by hand (other BITPIX, dtypes, orders, shapes, header
//! versions) and, for FITS, by astropy (extensions, gzip, tile compression; `tests/data/fits`),
//! mutated in memory by a seeded [`SmallRng`] and fed to the `*_bytes` readers.
//! Every input must give an image or array whose shape accounts for every value, or a
//! [`GpuError::File`] naming the file; a panic, another error, or an input that takes over
//! a second, or one that makes a reader allocate far more than its size (or what its
//! compression can give) at once, fails the test with its seed, number and first bytes (and
//! saves it to a file); one that never returns makes a watchdog save it and abort.
//!
//! Input `i` of seed `s` depends on nothing else, so a failure can be replayed alone. The
//! number of inputs per reader comes from `FUZZ_INPUTS` and the seed from `FUZZ_SEED`:
//!
//! ```text
//! FUZZ_INPUTS=1000000 cargo test --release -p radio --test fuzz -- --nocapture
//! ```

use cuda_kernels::gpu::{GpuError, GpuResult};
use radio::{fits, io};
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use test_support::scratch;

/// Inputs per reader unless `FUZZ_INPUTS` says otherwise: 5 to 7 s on one core, in release or
/// (fewer, as each is slower) in a debug build.
const DEFAULT_INPUTS: u64 = if cfg!(debug_assertions) { 10_000 } else { 300_000 };
/// The name errors must give: the readers are handed this path with the bytes.
const NAME: &str = "fuzz.input";
/// An input slower than this is reported (they are a few KiB; a microsecond's work each).
const SLOW: Duration = Duration::from_secs(1);
/// With no input finished for this long, the watchdog saves the current one and aborts.
const HANG: Duration = Duration::from_secs(10);

const BLOCK: usize = 2880;
const CARD: usize = 80;

/// The system's allocator, noting the largest block each thread asks for: a reader must not
/// size what it allocates by a header alone.
struct Watched;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // Not during the thread's teardown, when the cell is gone.
    let _ = LARGEST.try_with(|largest| largest.set(largest.get().max(size)));
}

// SAFETY: every call is handed to the system allocator unchanged; `note` only records a size
// in a thread-local cell and never allocates.
unsafe impl GlobalAlloc for Watched {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's promises for this call are the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's promises for this call are the system allocator's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: the caller's promises for this call are the system allocator's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's promises for this call are the system allocator's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Watched = Watched;

/// The most a reader may allocate at once for an input of `len` bytes that may hold up to
/// `values` values: its values widened to f32 and a vector's doubling, or the parser's tokens
/// of a header.
fn allocation_limit(len: usize, values: usize) -> usize {
    len.max(values).saturating_mul(16).saturating_add(4 << 20)
}

/// The most pixels a byte of compressed data can give: deflate's largest ratio (the FITS
/// reader refuses a tile-compressed image that claims more).
const DEFLATE: usize = 1032;

/// What a reader made of an input: the shape (rows first) and each value's bits.
#[derive(Debug, PartialEq)]
struct Parsed {
    shape: Vec<usize>,
    values: Vec<u64>,
}

trait Bits: Copy {
    fn bits(self) -> u64;
}

/// A NaN's payload means nothing: every NaN is the same value.
impl Bits for f32 {
    fn bits(self) -> u64 {
        if self.is_nan() { f32::NAN } else { self }.to_bits().into()
    }
}

impl Bits for u32 {
    fn bits(self) -> u64 {
        self.into()
    }
}

impl Bits for i32 {
    fn bits(self) -> u64 {
        (self as u32).into()
    }
}

fn parsed<T: Bits>(shape: &[usize], values: &[T]) -> Parsed {
    Parsed { shape: shape.to_vec(), values: values.iter().map(|v| v.bits()).collect() }
}

/// A reader under test.
struct Reader {
    name: &'static str,
    /// The most values an input can hold, so what parses is never bigger than the input allows.
    max_values: fn(&[u8]) -> usize,
    read: fn(&Path, &[u8]) -> GpuResult<Parsed>,
}

/// What a FITS input can hold: a value a byte (BITPIX 8), or for a tile-compressed image as
/// many as deflate gives, and for a gzipped file that again.
fn fits_values(bytes: &[u8]) -> usize {
    let tiled = bytes.as_chunks::<CARD>().0.iter().any(|card| card.starts_with(b"ZIMAGE  ="));
    let gzipped = bytes.starts_with(&[0x1F, 0x8B]);
    let factor = if gzipped {
        DEFLATE * DEFLATE
    } else if tiled {
        DEFLATE
    } else {
        1
    };
    bytes.len().saturating_mul(factor)
}

const FITS_READERS: &[Reader] = &[Reader {
    name: "fits::read_image_bytes",
    max_values: fits_values,
    read: |path, bytes| {
        let image = fits::read_image_bytes(path, bytes)?;
        Ok(parsed(&[image.height, image.width], &image.pixels))
    },
}];

const NPY_READERS: &[Reader] = &[
    Reader {
        name: "io::read_vector_bytes::<f32>",
        max_values: |b| b.len() / 4,
        read: |path, bytes| io::read_vector_bytes::<f32>(path, bytes).map(|v| parsed(&[v.len()], &v)),
    },
    Reader {
        name: "io::read_vector_bytes::<u32>",
        max_values: |b| b.len() / 4,
        read: |path, bytes| io::read_vector_bytes::<u32>(path, bytes).map(|v| parsed(&[v.len()], &v)),
    },
    Reader {
        name: "io::read_vector_bytes::<i32>",
        max_values: |b| b.len() / 4,
        read: |path, bytes| io::read_vector_bytes::<i32>(path, bytes).map(|v| parsed(&[v.len()], &v)),
    },
    Reader {
        name: "io::read_matrix_bytes::<f32>",
        max_values: |b| b.len() / 4,
        read: |path, bytes| io::read_matrix_bytes::<f32>(path, bytes).map(|((r, c), v)| parsed(&[r, c], &v)),
    },
    Reader {
        name: "io::read_matrix_bytes::<u32>",
        max_values: |b| b.len() / 4,
        read: |path, bytes| io::read_matrix_bytes::<u32>(path, bytes).map(|((r, c), v)| parsed(&[r, c], &v)),
    },
    Reader {
        name: "io::read_matrix_bytes::<i32>",
        max_values: |b| b.len() / 4,
        read: |path, bytes| io::read_matrix_bytes::<i32>(path, bytes).map(|((r, c), v)| parsed(&[r, c], &v)),
    },
    Reader {
        name: "io::read_matrix_f32_or_f16_bytes",
        max_values: |b| b.len() / 2,
        read: |path, bytes| io::read_matrix_f32_or_f16_bytes(path, bytes).map(|((r, c), v)| parsed(&[r, c], &v)),
    },
];

/// An input the mutations start from, the reader it is for, and what that reader must make of
/// it: the values it was written from, or an error containing the text given.
struct Seed {
    name: &'static str,
    bytes: Vec<u8>,
    reader: usize,
    expected: Result<Parsed, &'static str>,
}

/// The FITS file of `cards` (each padded to 80 bytes, then END, the header padded with
/// blanks to whole blocks) and `data`, its last block padded with zeros when `pad`.
fn fits_bytes(cards: &[String], data: &[u8], pad: bool) -> Vec<u8> {
    let mut bytes: Vec<u8> =
        cards.iter().map(String::as_str).chain(["END"]).flat_map(|c| format!("{c:<80}").into_bytes()).collect();
    bytes.resize(bytes.len().next_multiple_of(BLOCK), b' ');
    bytes.extend_from_slice(data);
    if pad {
        bytes.resize(bytes.len().next_multiple_of(BLOCK), 0);
    }
    bytes
}

/// The cards of an image of `bitpix` and `axes` (NAXIS1 first), then `extra`.
fn image_cards(bitpix: i32, axes: &[usize], extra: &[&str]) -> Vec<String> {
    let mut cards = vec![
        format!("SIMPLE  = {:>20}", "T"),
        format!("BITPIX  = {bitpix:>20}"),
        format!("NAXIS   = {:>20}", axes.len()),
    ];
    cards.extend(axes.iter().enumerate().map(|(i, n)| format!("{:<8}= {n:>20}", format!("NAXIS{}", i + 1))));
    cards.extend(extra.iter().map(|c| c.to_string()));
    cards
}

/// `values` in the byte order `bytes` gives them, one after another.
fn encode<const N: usize, T: Copy>(values: &[T], bytes: fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| bytes(v)).collect()
}

/// Files from [`fits::write_image`], read back from disk (the file reader must agree), and FITS
/// files made by hand for each BITPIX, with scaling, BLANK and length-1 axes.
fn fits_seeds() -> Vec<Seed> {
    let dir = scratch("fuzz", "fits-seeds");
    let mut seeds = Vec::new();
    let written: [(&str, usize, usize, Vec<f32>); 3] = [
        ("written 3x2", 3, 2, vec![1.0, -2.5, f32::NAN, 0.15625, -0.0, f32::MAX]),
        ("written 1x1", 1, 1, vec![42.0]),
        ("written 720x1, one whole block", 720, 1, (0..720).map(|i| i as f32 * 0.25 - 90.0).collect()),
    ];
    for (name, width, height, pixels) in written {
        let path = dir.join("seed.fits");
        fits::write_image(&path, width, height, &pixels).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let (from_disk, in_memory) = (fits::read_image(&path).unwrap(), fits::read_image_bytes(&path, &bytes).unwrap());
        assert_eq!(parsed(&[1], &from_disk.pixels), parsed(&[1], &in_memory.pixels), "{name}");
        let expected = Ok(parsed(&[height, width], &pixels));
        seeds.push(Seed { name, bytes, reader: 0, expected });
    }
    std::fs::remove_dir_all(dir).unwrap();

    let hand = |name, cards: Vec<String>, data: Vec<u8>, pad, expected| Seed {
        name,
        bytes: fits_bytes(&cards, &data, pad),
        reader: 0,
        expected,
    };
    let image = |height: usize, width: usize, pixels: &[f32]| Ok(parsed(&[height, width], pixels));
    seeds.extend([
        hand(
            "BITPIX 8, signed by BZERO",
            image_cards(8, &[2, 2], &["BZERO   =                 -128"]),
            vec![0, 1, 128, 255],
            true,
            image(2, 2, &[-128.0, -127.0, 0.0, 127.0]),
        ),
        hand(
            "BITPIX 8, BLANK",
            image_cards(8, &[3, 1], &["BLANK   =                  255"]),
            vec![7, 255, 0],
            false,
            image(1, 3, &[7.0, f32::NAN, 0.0]),
        ),
        hand(
            "BITPIX 16, scaled, BLANK",
            image_cards(
                16,
                &[3, 2],
                &["BSCALE  =                  0.5", "BZERO   =                 10.0", "BLANK   =               -32768"],
            ),
            encode(&[-2i16, 0, 1, 32767, -32768, 5], i16::to_be_bytes),
            true,
            image(2, 3, &[9.0, 10.0, 10.5, 16393.5, f32::NAN, 12.5]),
        ),
        hand(
            "BITPIX 32, unsigned by BZERO, BLANK, NAXIS3 = 1",
            image_cards(32, &[3, 1, 1], &["BZERO   =           2147483648", "BLANK   =                  100"]),
            encode(&[i32::MIN, -1, 100], i32::to_be_bytes),
            false,
            image(1, 3, &[0.0, 2147483647f64 as f32, f32::NAN]),
        ),
        hand(
            "BITPIX 64",
            image_cards(64, &[2, 1], &[]),
            encode(&[1i64, -1], i64::to_be_bytes),
            true,
            image(1, 2, &[1.0, -1.0]),
        ),
        hand(
            "BITPIX -32, scaled, NAXIS 4",
            image_cards(
                -32,
                &[2, 2, 1, 1],
                &["BSCALE  = 2", "BZERO   = 1", "CTYPE3  = 'FREQ    '", "COMMENT degenerate axes"],
            ),
            encode(&[1.0f32, -2.5, 0.15625, -0.0], f32::to_be_bytes),
            true,
            image(2, 2, &[3.0, -4.0, 1.3125, 1.0]),
        ),
        hand(
            "BITPIX -64, BZERO, unpadded",
            image_cards(-64, &[3, 1, 1], &["BZERO   =                  0.5 / shift", "BUNIT   = 'JY/BEAM '"]),
            encode(&[1.0f64, -0.5, 3.0], f64::to_be_bytes),
            false,
            image(1, 3, &[1.5, 0.0, 3.5]),
        ),
        hand(
            "BITPIX 16 without scaling, two header blocks",
            image_cards(16, &[1, 2], &["HISTORY a long header"; 40]),
            encode(&[-1i16, 256], i16::to_be_bytes),
            true,
            image(2, 1, &[-1.0, 256.0]),
        ),
        hand(
            "BITPIX -32 with strings and commentary",
            image_cards(
                -32,
                &[1, 1],
                &["OBJECT  = 'O''Neil / Sgr A*'", "CONTINUE  'more'", "        blank keyword", "EXTEND  = F"],
            ),
            encode(&[0.5f32], f32::to_be_bytes),
            true,
            image(1, 1, &[0.5]),
        ),
    ]);

    // An image after an empty primary HDU and a table with a heap.
    let mut extension = fits_bytes(&image_cards(8, &[], &["EXTEND  = T"]), &[], true);
    let table = [
        "XTENSION= 'BINTABLE'",
        "BITPIX  =                    8",
        "NAXIS   =                    2",
        "NAXIS1  =                    8",
        "NAXIS2  =                    1",
        "PCOUNT  =                    8",
        "GCOUNT  =                    1",
        "TFIELDS =                    1",
        "TFORM1  = '1PJ(2)  '",
    ];
    let table = table.map(String::from);
    extension.extend(fits_bytes(&table, &[0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2], true));
    let mut cards = image_cards(16, &[2, 2], &["PCOUNT  =                    0", "GCOUNT  =                    1"]);
    cards[0] = "XTENSION= 'IMAGE   '".into();
    extension.extend(fits_bytes(&cards, &encode(&[1i16, -2, 3, -4], i16::to_be_bytes), false));
    seeds.push(Seed {
        name: "an image extension",
        bytes: extension,
        reader: 0,
        expected: image(2, 2, &[1.0, -2.0, 3.0, -4.0]),
    });

    // Files astropy wrote (tests/fits_astropy.rs reads them all), with what astropy reads.
    macro_rules! fixture {
        ($file:literal, $reference:literal) => {{
            let bytes = include_bytes!(concat!("data/fits/", $file)).to_vec();
            let reference = include_bytes!(concat!("data/fits/", $reference));
            let ((rows, cols), values) = io::read_matrix_bytes::<f32>(Path::new($reference), reference).unwrap();
            Seed { name: $file, bytes, reader: 0, expected: Ok(parsed(&[rows, cols], &values)) }
        }};
    }
    seeds.extend([
        fixture!("rice-f32-sd1.fits", "rice-f32-sd1.npy"),
        fixture!("rice-i16-blank.fits", "rice-i16-blank.npy"),
        fixture!("rice-f32-tiles.fits", "rice-f32-tiles.npy"),
        fixture!("rice-f32-flat.fits", "rice-f32-flat.npy"),
        fixture!("gzip1-f32-lossless.fits", "gzip1-f32-lossless.npy"),
        fixture!("gzip2-i32.fits", "gzip2-i32.npy"),
        fixture!("plio-mask.fits", "plio-mask.npy"),
        fixture!("gz.fits.gz", "gz.npy"),
    ]);
    seeds
}

/// A `.npy` file of format `version` (1, 2 or 3): the header `dict` padded with blanks and a
/// newline to a multiple of 64 bytes, then `data`.
fn npy_bytes(version: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let length_bytes = if version == 1 { 2 } else { 4 };
    let prefix = 8 + length_bytes;
    let header_len = (prefix + dict.len() + 1).next_multiple_of(64) - prefix;
    let mut bytes = b"\x93NUMPY".to_vec();
    bytes.extend([version, 0]);
    bytes.extend(&(header_len as u32).to_le_bytes()[..length_bytes]);
    bytes.extend(format!("{dict:<width$}\n", width = header_len - 1).into_bytes());
    bytes.extend_from_slice(data);
    bytes
}

fn npy_dict(descr: &str, fortran: &str, shape: &str) -> String {
    format!("{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, }}")
}

/// Files from [`io::write_vector`] and [`io::write_matrix`], read back from disk (the file
/// readers must agree), and `.npy` files made by hand: other dtypes, byte orders, Fortran
/// order, shapes, and header versions.
fn npy_seeds() -> Vec<Seed> {
    let dir = scratch("fuzz", "npy-seeds");
    let path = dir.join("seed.npy");
    let file = |path: &Path| std::fs::read(path).unwrap();
    let mut seeds = Vec::new();
    let f32s = [1.5f32, -2.25, f32::NAN, -0.0, f32::MAX, 3e-8];
    let (u32s, i32s) = ([0u32, 7, u32::MAX, 42], [-1i32, 0, i32::MIN, i32::MAX, 5, -6]);

    io::write_vector(&path, &f32s).unwrap();
    assert_eq!(
        io::read_vector::<f32>(&path).unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        f32s.map(f32::to_bits)
    );
    seeds.push(Seed { name: "written f32 vector", bytes: file(&path), reader: 0, expected: Ok(parsed(&[6], &f32s)) });
    io::write_vector(&path, &u32s).unwrap();
    assert_eq!(io::read_vector::<u32>(&path).unwrap(), u32s);
    seeds.push(Seed { name: "written u32 vector", bytes: file(&path), reader: 1, expected: Ok(parsed(&[4], &u32s)) });
    io::write_vector(&path, &i32s).unwrap();
    assert_eq!(io::read_vector::<i32>(&path).unwrap(), i32s);
    seeds.push(Seed { name: "written i32 vector", bytes: file(&path), reader: 2, expected: Ok(parsed(&[6], &i32s)) });
    io::write_matrix(&path, (2, 3), &f32s).unwrap();
    assert_eq!(io::read_matrix::<f32>(&path).unwrap().0, (2, 3));
    assert_eq!(io::read_matrix_f32_or_f16(&path).unwrap().0, (2, 3));
    seeds.push(Seed {
        name: "written f32 matrix",
        bytes: file(&path),
        reader: 3,
        expected: Ok(parsed(&[2, 3], &f32s)),
    });
    io::write_matrix(&path, (2, 2), &u32s).unwrap();
    assert_eq!(io::read_matrix::<u32>(&path).unwrap(), ((2, 2), u32s.to_vec()));
    seeds.push(Seed {
        name: "written u32 matrix",
        bytes: file(&path),
        reader: 4,
        expected: Ok(parsed(&[2, 2], &u32s)),
    });
    io::write_matrix(&path, (3, 2), &i32s).unwrap();
    assert_eq!(io::read_matrix::<i32>(&path).unwrap(), ((3, 2), i32s.to_vec()));
    seeds.push(Seed {
        name: "written i32 matrix",
        bytes: file(&path),
        reader: 5,
        expected: Ok(parsed(&[3, 2], &i32s)),
    });
    std::fs::remove_dir_all(dir).unwrap();

    // 1, -2, 0.5, 65504, 2^-24, -0 as halves.
    let halves = [0x3c00u16, 0xc000, 0x3800, 0x7bff, 0x0001, 0x8000];
    let widened = [1.0f32, -2.0, 0.5, 65504.0, 2f32.powi(-24), -0.0];
    let hand = |name, version, dict: String, data: Vec<u8>, reader, expected| Seed {
        name,
        bytes: npy_bytes(version, &dict, &data),
        reader,
        expected,
    };
    let le = |values: &[f32]| values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
    seeds.extend([
        hand(
            "f16 matrix",
            1,
            npy_dict("'<f2'", "False", "(2, 3)"),
            halves.iter().flat_map(|h| h.to_le_bytes()).collect(),
            6,
            Ok(parsed(&[2, 3], &widened)),
        ),
        hand(
            "big-endian f16 matrix in Fortran order",
            1,
            npy_dict("'>f2'", "True", "(3, 2)"),
            [0, 2, 4, 1, 3, 5].iter().flat_map(|&i| halves[i].to_be_bytes()).collect(),
            6,
            Ok(parsed(&[3, 2], &widened)),
        ),
        hand(
            "big-endian f32 matrix",
            1,
            npy_dict("'>f4'", "False", "(2, 2)"),
            [1.0f32, 2.0, -3.0, 4.5].iter().flat_map(|v| v.to_be_bytes()).collect(),
            3,
            Ok(parsed(&[2, 2], &[1.0f32, 2.0, -3.0, 4.5])),
        ),
        hand(
            "f32 matrix in Fortran order",
            1,
            npy_dict("'<f4'", "True", "(2, 3)"),
            le(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]),
            3,
            Ok(parsed(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])),
        ),
        hand(
            "big-endian u32 vector",
            1,
            npy_dict("'>u4'", "False", "(3,)"),
            [1u32, 256, u32::MAX].iter().flat_map(|v| v.to_be_bytes()).collect(),
            1,
            Ok(parsed(&[3], &[1u32, 256, u32::MAX])),
        ),
        hand(
            "big-endian i32 matrix in Fortran order",
            1,
            npy_dict("'>i4'", "True", "(2, 2)"),
            [1i32, -3, 2, -4].iter().flat_map(|v| v.to_be_bytes()).collect(),
            5,
            Ok(parsed(&[2, 2], &[1i32, 2, -3, -4])),
        ),
        hand(
            "f32 vector, format 2.0",
            2,
            npy_dict("'<f4'", "False", "(2,)"),
            le(&[0.25, -8.0]),
            0,
            Ok(parsed(&[2], &[0.25f32, -8.0])),
        ),
        hand(
            "f32 matrix, format 3.0",
            3,
            npy_dict("'<f4'", "False", "(1, 2)"),
            le(&[7.0, 8.0]),
            6,
            Ok(parsed(&[1, 2], &[7.0f32, 8.0])),
        ),
        hand(
            "f64 vector",
            1,
            npy_dict("'<f8'", "False", "(2,)"),
            [1.0f64, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
            0,
            Err("holds f64 ('<f8') values, expected f32 ('<f4')"),
        ),
        hand("u8 vector", 1, npy_dict("'|u1'", "False", "(4,)"), vec![1, 2, 3, 4], 1, Err("holds u8 ('|u1') values")),
        hand(
            "structured dtype",
            1,
            npy_dict("[('x', '<f4'), ('y', '<f4')]", "False", "(1,)"),
            le(&[1.0, 2.0]),
            3,
            Err("holds a structured dtype"),
        ),
        hand("3-D f32", 1, npy_dict("'<f4'", "False", "(1, 2, 1)"), le(&[1.0, 2.0]), 3, Err("is 3-D (shape 1x2x1)")),
        hand("f32 scalar", 1, npy_dict("'<f4'", "False", "()"), le(&[1.0]), 0, Err("is 0-D (shape ())")),
        hand("empty f32 matrix", 1, npy_dict("'<f4'", "False", "(0, 3)"), vec![], 3, Err("is empty (shape 0x3)")),
    ]);
    seeds
}

/// Bytes an overwrite writes: the extremes, digits, and the characters of FITS cards and
/// `.npy` headers.
const INTERESTING_BYTES: &[u8] = b"\x00\xff0123456789 ='E-.+/TF(),:{}\n";
/// FITS header values a mutation gives a card: sizes past any file, out of range, negative,
/// not integers, not numbers, or not values at all.
/// How many of [`FITS_KEYWORDS`] a header mutation mostly aims at.
const LAYOUT: usize = 31;
const FITS_VALUES: &[&str] = &[
    "99999999999",
    "1000000000000",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "99999999999999999999",
    "-1",
    "-2",
    "0",
    "1",
    "2",
    "3",
    "7",
    "8",
    "16",
    "32",
    "64",
    "-32",
    "-64",
    "999",
    "1000",
    "32768",
    "-32768",
    "2147483648",
    "1E999",
    "-1E999",
    "1D-999",
    "1.5",
    "0.0",
    "-0",
    "1E",
    ".",
    "E",
    "-",
    "+",
    "NaN",
    "inf",
    "T",
    "F",
    "'text'",
    "'",
    "''",
    "(1, 2)",
    "",
    "/ only a comment",
    "4096",
    "10000",
    "1000000",
    "'RICE_1'",
    "'GZIP_1'",
    "'GZIP_2'",
    "'NOCOMPRESS'",
    "'HCOMPRESS_1'",
    "'PLIO_1'",
    "'SUBTRACTIVE_DITHER_1'",
    "'SUBTRACTIVE_DITHER_2'",
    "'NO_DITHER'",
    "'1PB(9)'",
    "'1QB'",
    "'1D'",
    "'J'",
    "'BINTABLE'",
    "'IMAGE'",
    "'ERR'",
];
/// The keywords the FITS reader looks at (the first [`LAYOUT`] hold an image's or a compressed
/// image's layout, a table's or an HDU's size), and some it must not mistake for them.
const FITS_KEYWORDS: &[&str] = &[
    "SIMPLE",
    "BITPIX",
    "NAXIS",
    "NAXIS1",
    "NAXIS2",
    "NAXIS3",
    "NAXIS4",
    "BSCALE",
    "BZERO",
    "BLANK",
    "PCOUNT",
    "GCOUNT",
    "TFIELDS",
    "TFORM1",
    "TFORM2",
    "TTYPE1",
    "THEAP",
    "ZIMAGE",
    "ZBITPIX",
    "ZNAXIS",
    "ZNAXIS1",
    "ZNAXIS2",
    "ZTILE1",
    "ZTILE2",
    "ZCMPTYPE",
    "ZVAL1",
    "ZVAL2",
    "ZQUANTIZ",
    "ZDITHER0",
    "ZBLANK",
    "EXTNAME",
    "GROUPS",
    "END",
    "COMMENT",
    "HISTORY",
    "CONTINUE",
    "",
    "XTENSION",
    "NAXIS0",
    "NAXIS1000",
];
/// `.npy` header values a mutation puts in the dictionary; the first 8 dtypes and 2 orders are
/// those read.
const NPY_DESCRS: &[&str] = &[
    "'<f4'",
    "'>f4'",
    "'<f2'",
    "'>f2'",
    "'<u4'",
    "'>u4'",
    "'<i4'",
    "'>i4'",
    "'<f8'",
    "'|u1'",
    "'=f4'",
    "'f4'",
    "'|f4'",
    "'<f4 '",
    "'<c8'",
    "'O'",
    "'<U4'",
    "b'<f4'",
    "[('a', '<f4')]",
    "[]",
    "1",
    "None",
    "'<f4''",
];
const NPY_ORDERS: &[&str] = &["True", "False", "None", "1", "0", "'True'", "true"];
const NPY_SHAPES: &[&str] = &[
    "(1000000000000000,)",
    "(1000000000000000, 1000000000000000)",
    "(4294967296, 4294967297)",
    "(18446744073709551615, 2)",
    "(18446744073709551616,)",
    "(9223372036854775807, 9223372036854775807)",
    "(99999999999999999999999999999999, 1)",
    "(-1,)",
    "(-1, 3)",
    "(2, -3)",
    "()",
    "(0,)",
    "(0, 0)",
    "(1,)",
    "(2, 3, 4)",
    "(1, 1, 1, 1)",
    "[2, 3]",
    "(2.0, 3)",
    "(None,)",
    "((2,), 3)",
    "(True, 2)",
    "(0x10, 1)",
    "(1_0,)",
    "2",
];
/// Text a textual mutation of an `.npy` header puts in: brackets, separators, long numbers.
const NPY_TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "'",
    "\"",
    "\\",
    " ",
    "\n",
    "1000000000000000",
    "-1",
    "True",
    "None",
    "'shape'",
    "'descr'",
    "'fortran_order'",
    "1e308",
    "0b1",
    "1j",
    "'''",
    "b'",
];

/// The format fuzzed: its readers, magic string and header mutations.
#[derive(Clone, Copy, PartialEq)]
enum Format {
    Fits,
    Npy,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Fits => "fits",
            Format::Npy => "npy",
        }
    }

    fn readers(self) -> &'static [Reader] {
        match self {
            Format::Fits => FITS_READERS,
            Format::Npy => NPY_READERS,
        }
    }

    fn magic(self) -> &'static [u8] {
        match self {
            Format::Fits => b"SIMPLE  = ",
            Format::Npy => b"\x93NUMPY\x01\x00",
        }
    }
}

/// A random position in `0..=len`.
fn position(rng: &mut SmallRng, len: usize) -> usize {
    rng.random_range(0..=len)
}

/// A random range within `0..len`, mostly short.
fn run(rng: &mut SmallRng, len: usize) -> std::ops::Range<usize> {
    let start = position(rng, len);
    let most = (len - start).min(if rng.random_bool(0.8) { 16 } else { 4096 });
    start..start + rng.random_range(0..=most)
}

/// The index of the END card, or the number of whole cards where there is none.
fn end_card(bytes: &[u8]) -> usize {
    let cards = bytes.len() / CARD;
    (0..cards).find(|&i| bytes[i * CARD..].starts_with(b"END     ")).unwrap_or(cards)
}

/// A card of `keyword` (cut to 8 bytes) and `value`, as the reader expects them.
fn fits_card(keyword: &[u8], value: &str) -> Vec<u8> {
    let mut card = keyword[..keyword.len().min(8)].to_vec();
    card.resize(8, b' ');
    card.extend(format!("= {value:>20}").bytes());
    card.resize(CARD, b' ');
    card
}

/// Inserts `card` before card `at`, then drops a blank card after END in the header's last
/// block when there is one, so the data stays where it was.
fn insert_card(bytes: &mut Vec<u8>, at: usize, card: &[u8]) {
    bytes.splice(at * CARD..at * CARD, card.iter().copied());
    let end = end_card(bytes);
    let spare = (end + 1) * CARD;
    let blank = bytes.get(spare..spare + CARD).is_some_and(|c| c.iter().all(|&b| b == b' '));
    if blank && !(end + 1).is_multiple_of(BLOCK / CARD) {
        bytes.drain(spare..spare + CARD);
    }
}

/// A header mutation of one HDU of a FITS file (any whose header starts a block): see
/// [`mutate_header`].
fn mutate_fits_header(bytes: &mut Vec<u8>, rng: &mut SmallRng) {
    let starts = (0..bytes.len())
        .step_by(BLOCK)
        .filter(|&at| bytes[at..].starts_with(b"SIMPLE  =") || bytes[at..].starts_with(b"XTENSION="))
        .collect::<Vec<_>>();
    let start = starts.choose(rng).copied().unwrap_or(0);
    let mut hdu = bytes.split_off(start);
    mutate_header(&mut hdu, rng);
    bytes.extend(hdu);
}

/// A header mutation of the FITS bytes `bytes` start with: a card's value replaced, a card
/// replaced or inserted, or NAXIS changed with cards for its axes.
fn mutate_header(bytes: &mut Vec<u8>, rng: &mut SmallRng) {
    let end = end_card(bytes);
    let value = *FITS_VALUES.choose(rng).unwrap();
    match rng.random_range(0..4) {
        0 if end > 0 => {
            // Mostly the cards the reader uses.
            let known = (0..end)
                .filter(|&c| {
                    FITS_KEYWORDS[..LAYOUT]
                        .iter()
                        .any(|k| bytes[c * CARD..c * CARD + 8] == *format!("{k:<8}").as_bytes())
                })
                .collect::<Vec<_>>();
            let card = match known.choose(rng) {
                Some(&c) if rng.random_bool(0.9) => c,
                _ => rng.random_range(0..end),
            };
            let keyword = bytes[card * CARD..card * CARD + 8].to_vec();
            bytes[card * CARD..(card + 1) * CARD].copy_from_slice(&fits_card(&keyword, value));
        }
        1 if end > 0 => {
            let card = rng.random_range(0..=end.min(bytes.len() / CARD - 1));
            bytes[card * CARD..(card + 1) * CARD]
                .copy_from_slice(&fits_card(FITS_KEYWORDS.choose(rng).unwrap().as_bytes(), value));
        }
        2 => insert_card(
            bytes,
            position(rng, end.min(bytes.len() / CARD)),
            &fits_card(FITS_KEYWORDS.choose(rng).unwrap().as_bytes(), value),
        ),
        _ => {
            let naxis = *[0, 1, 2, 3, 4, 5, 999, 1000].choose(rng).unwrap();
            let Some(card) = (0..end).find(|&c| bytes[c * CARD..].starts_with(b"NAXIS   ")) else { return };
            bytes[card * CARD..(card + 1) * CARD].copy_from_slice(&fits_card(b"NAXIS", &naxis.to_string()));
            for axis in 3..=naxis.min(5) {
                let length = *["1", "1", "2", "99999999999", "0", "-1", "1000000"].choose(rng).unwrap();
                let at = end_card(bytes);
                insert_card(bytes, at, &fits_card(format!("NAXIS{axis}").as_bytes(), length));
            }
        }
    }
}

/// The header dictionary of an `.npy` file and the bytes after the header, when its length
/// field fits in the file.
fn npy_parts(bytes: &[u8]) -> Option<(String, &[u8])> {
    let (prefix, len) = match bytes.get(6..8)? {
        [1, 0] => (10usize, u16::from_le_bytes(bytes.get(8..10)?.try_into().ok()?) as usize),
        [2 | 3, 0] => (12, u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?) as usize),
        _ => return None,
    };
    let header = bytes.get(prefix..prefix.checked_add(len)?)?;
    Some((String::from_utf8_lossy(header).trim_end().to_string(), &bytes[prefix + len..]))
}

/// A header mutation of an `.npy` file: a new dictionary (random values, sometimes a shape
/// that fits the data, keys missing, repeated or unknown), or the old one edited as text, or
/// brackets nested deep; then the header is rebuilt around it, mostly with a length field
/// that fits.
fn mutate_npy_header(bytes: &mut Vec<u8>, rng: &mut SmallRng) {
    let Some((dict, data)) = npy_parts(bytes) else { return };
    let data = data.to_vec();
    let dict = match rng.random_range(0..8) {
        0..=4 => {
            // Mostly a dtype and an order that are read, to get past them to the data.
            let descr = *NPY_DESCRS[..if rng.random_bool(0.7) { 8 } else { NPY_DESCRS.len() }].choose(rng).unwrap();
            let order = *NPY_ORDERS[..if rng.random_bool(0.8) { 2 } else { NPY_ORDERS.len() }].choose(rng).unwrap();
            let shape = if rng.random_bool(0.5) {
                // A shape that the data fills, in elements of the dtype's size.
                let size = if descr.contains('2') {
                    2
                } else if descr.contains('8') {
                    8
                } else {
                    4
                };
                let n = data.len() / size;
                match rng.random_range(0..3) {
                    0 => format!("({n},)"),
                    1 => {
                        let rows = (1..=n.max(1)).filter(|d| n % d == 0).collect::<Vec<_>>();
                        let rows = *rows.choose(rng).unwrap();
                        format!("({rows}, {})", n / rows)
                    }
                    _ => format!("(1, {n}, 1)"),
                }
            } else {
                NPY_SHAPES.choose(rng).unwrap().to_string()
            };
            let mut entries =
                vec![format!("'descr': {descr}"), format!("'fortran_order': {order}"), format!("'shape': {shape}")];
            match rng.random_range(0..8) {
                0 => {
                    entries.remove(rng.random_range(0..3));
                }
                1 => entries.push(entries[rng.random_range(0..3)].clone()),
                2 => entries.push("'extra': 1".into()),
                _ => {}
            }
            if rng.random_bool(0.3) {
                let (a, b) = (rng.random_range(0..entries.len()), rng.random_range(0..entries.len()));
                entries.swap(a, b);
            }
            format!("{{{}, }}", entries.join(", "))
        }
        5 | 6 => {
            let mut text = dict.into_bytes();
            let range = run(rng, text.len());
            text.splice(range, NPY_TOKENS.choose(rng).unwrap().bytes());
            String::from_utf8_lossy(&text).into_owned()
        }
        _ => {
            let depth = *[2, 3, 4, 5, 8, 30, 1000, 4990].choose(rng).unwrap();
            let nest = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            npy_dict(&nest, "False", "(1,)")
        }
    };
    let version = *[1, 1, 1, 2, 3].choose(rng).unwrap();
    let mut rebuilt = npy_bytes(version, &dict, &data);
    if rng.random_bool(0.1) {
        // A length field that does not end the header where it ends.
        rng.fill(&mut rebuilt[8..if version == 1 { 10 } else { 12 }]);
    }
    *bytes = rebuilt;
}

/// One mutation of `bytes`; `corpus` supplies the second seed of a splice.
fn mutate(format: Format, bytes: &mut Vec<u8>, corpus: &[Seed], rng: &mut SmallRng) {
    // A quarter of the mutations are the header's, as most of a small seed is header.
    if rng.random_ratio(1, 4) {
        return match format {
            Format::Fits => mutate_fits_header(bytes, rng),
            Format::Npy => mutate_npy_header(bytes, rng),
        };
    }
    let len = bytes.len();
    match rng.random_range(0..10) {
        0 if len > 0 => {
            let at = rng.random_range(0..len);
            bytes[at] ^= 1 << rng.random_range(0..8);
        }
        1 if len > 0 => {
            let at = rng.random_range(0..len);
            bytes[at] = *INTERESTING_BYTES.choose(rng).unwrap();
        }
        2 => {
            // Anywhere, or at a card or block boundary.
            let at = match rng.random_range(0..3) {
                0 => position(rng, len),
                1 => position(rng, len / CARD) * CARD,
                _ => position(rng, len / BLOCK) * BLOCK,
            };
            bytes.truncate(at);
        }
        3 if len >= CARD => {
            // A card, or a run, repeated elsewhere.
            let (copied, to) = if format == Format::Fits || rng.random_bool(0.5) {
                let (cards, card) = (len / CARD, rng.random_range(0..len / CARD));
                (bytes[card * CARD..(card + 1) * CARD].to_vec(), position(rng, cards) * CARD)
            } else {
                (bytes[run(rng, len)].to_vec(), position(rng, len))
            };
            bytes.splice(to..to, copied);
        }
        4 => {
            let range = run(rng, len);
            bytes.drain(range);
        }
        5 => {
            let other = &corpus[rng.random_range(0..corpus.len())].bytes;
            let (keep, from) = (position(rng, len), position(rng, other.len()));
            bytes.truncate(keep);
            bytes.extend_from_slice(&other[from..]);
        }
        6 => {
            let range = run(rng, len);
            rng.fill(&mut bytes[range]);
        }
        7 => {
            let extra = rng.random_range(0..=BLOCK);
            let fill = if rng.random_bool(0.5) { 0 } else { rng.random() };
            bytes.resize(len + extra, fill);
        }
        8 if format == Format::Npy && len >= 12 => {
            // The header length, the one binary size field (FITS sizes are text, mutated above).
            let value = *[0u32, 1, 0xFFFF, 0xFFFF_FFFF, 0x7FFF_FFFF, 64, 118, 10_000, 10_001].choose(rng).unwrap();
            bytes[8..12].copy_from_slice(&value.to_le_bytes());
        }
        _ => {
            let range = run(rng, len);
            let value = *INTERESTING_BYTES.choose(rng).unwrap();
            bytes[range].fill(value);
        }
    }
}

/// Input `iteration` of `seed`: a few mutations of a seed, or now and then random bytes (half
/// of them behind the format's magic string).
fn input(format: Format, corpus: &[Seed], seed: u64, iteration: u64) -> Vec<u8> {
    let mut rng = SmallRng::seed_from_u64(seed ^ iteration.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    if rng.random_ratio(1, 32) {
        let mut bytes = if rng.random_bool(0.5) { format.magic().to_vec() } else { Vec::new() };
        let start = bytes.len();
        bytes.resize(start + rng.random_range(0..2 * BLOCK), 0);
        rng.fill(&mut bytes[start..]);
        return bytes;
    }
    let mut bytes = corpus[rng.random_range(0..corpus.len())].bytes.clone();
    // Mostly one mutation, so that most inputs get past the headers.
    let mutations = if rng.random_bool(0.5) { 1 } else { rng.random_range(2..=4) };
    for _ in 0..mutations {
        mutate(format, &mut bytes, corpus, &mut rng);
    }
    bytes
}

/// The readers input `iteration` goes to: for `.npy`, those of the dtype its header seems to
/// name (a guess from its text, so that most of them get past the dtype), and one more,
/// cycling through all.
fn readers_for(format: Format, bytes: &[u8], iteration: u64) -> Vec<usize> {
    let mut readers = match format {
        Format::Fits => vec![0],
        Format::Npy => {
            let header = &bytes[..bytes.len().min(128)];
            let names = |dtype: &[u8]| header.windows(dtype.len()).any(|w| w == dtype);
            [(b"f4'", &[0, 3, 6][..]), (b"u4'", &[1, 4]), (b"i4'", &[2, 5]), (b"f2'", &[6])]
                .iter()
                .filter(|(dtype, _)| names(*dtype))
                .flat_map(|(_, readers)| readers.iter().copied())
                .collect()
        }
    };
    let other = iteration as usize % format.readers().len();
    if !readers.contains(&other) {
        readers.push(other);
    }
    readers
}

/// The first 256 bytes of `bytes`, 16 a line: offset, hex, printable ASCII.
fn hex_dump(bytes: &[u8]) -> String {
    let lines = bytes[..bytes.len().min(256)].chunks(16).enumerate().map(|(i, line)| {
        let hex = line.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ");
        let text =
            line.iter().map(|&b| if b.is_ascii_graphic() || b == b' ' { b as char } else { '.' }).collect::<String>();
        format!("{:06x}  {hex:<47}  {text}", i * 16)
    });
    lines.collect::<Vec<_>>().join("\n")
}

/// Saves `bytes` to a temporary file; says where, or why not.
fn save(format: Format, seed: u64, iteration: u64, bytes: &[u8]) -> String {
    let path = std::env::temp_dir().join(format!("radio-fuzz-{}-seed{seed}-input{iteration}.bin", format.name()));
    match std::fs::write(&path, bytes) {
        Ok(()) => format!("saved as {}", path.display()),
        Err(e) => format!("not saved: {e}"),
    }
}

/// Fails the test on input `iteration` of `seed`, saving it.
fn fail(format: Format, seed: u64, iteration: u64, bytes: &[u8], what: &str) -> ! {
    let saved = save(format, seed, iteration, bytes);
    panic!(
        "{} fuzzing, FUZZ_SEED={seed}, input {iteration} ({} bytes, {saved}): {what}\n{}",
        format.name(),
        bytes.len(),
        hex_dump(bytes)
    );
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("?")
}

/// What `reader` made of `bytes`, checked: `Ok(None)` when it parsed (every value accounted
/// for by the shape, none conjured from bytes that are not there), `Ok(Some(reason))` when it
/// was refused with a [`GpuError::File`] naming the input, else what is wrong (a panic
/// included, or an allocation past [`allocation_limit`]).
fn run_reader(reader: &Reader, bytes: &[u8]) -> Result<Option<String>, String> {
    let path = Path::new(NAME);
    LARGEST.with(|largest| largest.set(0));
    let result = catch_unwind(AssertUnwindSafe(|| (reader.read)(path, bytes)));
    let largest = LARGEST.with(Cell::get);
    let most = (reader.max_values)(bytes);
    if largest > allocation_limit(bytes.len(), most) {
        return Err(format!("{} allocated {largest} bytes at once for an input of {}", reader.name, bytes.len()));
    }
    match result {
        Err(payload) => Err(format!("{} panicked: {}", reader.name, panic_text(&*payload))),
        Ok(Ok(Parsed { shape, values })) => {
            let count = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
            if shape.contains(&0) || count != Some(values.len()) {
                return Err(format!("{} gave shape {shape:?} with {} values", reader.name, values.len()));
            }
            if values.len() > most {
                return Err(format!("{} gave {} values from {} bytes", reader.name, values.len(), bytes.len()));
            }
            Ok(None)
        }
        Ok(Err(GpuError::File { path, reason })) if path == NAME && !reason.is_empty() => Ok(Some(reason)),
        Ok(Err(other)) => Err(format!("{} failed without naming the input: {other}", reader.name)),
    }
}

/// A refusal's reason with its numbers and quoted text blanked, to count the kinds of refusal.
fn reason_kind(reason: &str) -> String {
    let reason = reason.split(['\'', '`']).step_by(2).collect::<Vec<_>>().join("…");
    reason.chars().filter(|c| !c.is_ascii_digit()).take(60).collect()
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| v.parse().unwrap_or_else(|_| panic!("{name}={v} is not a number")))
}

/// Checks every seed, then fuzzes the readers of `format` with `FUZZ_INPUTS` inputs.
fn fuzz(format: Format, corpus: &[Seed]) {
    let readers = format.readers();
    for seed in corpus {
        let result = (readers[seed.reader].read)(Path::new(NAME), &seed.bytes);
        match (&seed.expected, result) {
            (Ok(expected), Ok(got)) => assert_eq!(&got, expected, "seed {}", seed.name),
            (Err(expected), Err(e)) => assert!(e.to_string().contains(expected), "seed {}: {e}", seed.name),
            (expected, got) => panic!("seed {}: expected {expected:?}, got {got:?}", seed.name),
        }
    }

    let (inputs, seed) = (env_number("FUZZ_INPUTS", DEFAULT_INPUTS), env_number("FUZZ_SEED", 1));
    let (mut parsed, mut refused, mut kinds) = (0u64, 0u64, HashMap::<String, u64>::new());
    let started = Instant::now();
    let done = AtomicBool::new(false);
    let finished = AtomicU64::new(0);
    std::thread::scope(|scope| {
        // A reader that never returns cannot be interrupted: save its input and stop.
        scope.spawn(|| {
            let (mut seen, mut since) = (0, Instant::now());
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let now = finished.load(Ordering::Relaxed);
                if now != seen {
                    (seen, since) = (now, Instant::now());
                } else if since.elapsed() > HANG {
                    let bytes = input(format, corpus, seed, now);
                    eprintln!(
                        "{} fuzzing, FUZZ_SEED={seed}: input {now} has not returned in {HANG:?} ({}):\n{}",
                        format.name(),
                        save(format, seed, now, &bytes),
                        hex_dump(&bytes)
                    );
                    std::process::abort();
                }
            }
        });
        // Stops the watchdog however the loop ends.
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _stop = Stop(&done);
        for iteration in 0..inputs {
            let bytes = input(format, corpus, seed, iteration);
            for reader in readers_for(format, &bytes, iteration) {
                let start = Instant::now();
                match run_reader(&readers[reader], &bytes) {
                    Ok(None) => parsed += 1,
                    Ok(Some(reason)) => {
                        refused += 1;
                        *kinds.entry(reason_kind(&reason)).or_default() += 1;
                    }
                    Err(what) => fail(format, seed, iteration, &bytes, &what),
                }
                if start.elapsed() > SLOW {
                    let what = format!("{} took {:?}", readers[reader].name, start.elapsed());
                    fail(format, seed, iteration, &bytes, &what);
                }
            }
            finished.store(iteration + 1, Ordering::Relaxed);
        }
    });
    let mut kinds = kinds.into_iter().collect::<Vec<_>>();
    kinds.sort_by_key(|&(_, count)| std::cmp::Reverse(count));
    println!(
        "{} fuzzing, FUZZ_SEED={seed}: {inputs} inputs in {:.1} s, {} reads: {parsed} parsed, {refused} refused ({} kinds of refusal, the most common:)",
        format.name(),
        started.elapsed().as_secs_f64(),
        parsed + refused,
        kinds.len()
    );
    for (kind, count) in kinds.iter().take(12) {
        println!("  {count:>9}  {kind}");
    }
    if inputs >= 1000 {
        assert!(parsed > 0 && refused > 0, "the mutations should make both images and refusals");
    }
}

#[test]
fn fits_reader_survives_mutated_files() {
    fuzz(Format::Fits, &fits_seeds());
}

#[test]
fn npy_readers_survive_mutated_files() {
    fuzz(Format::Npy, &npy_seeds());
}
