//! Tile-compressed images: a binary table with `ZIMAGE = T` whose rows hold the tiles of an
//! image (the tiled image compression convention of Pence, Seaman and White 2009, FITS 4.0
//! §10), as fpack and astropy write them. Read: RICE_1, PLIO_1, GZIP_1, GZIP_2 and NOCOMPRESS
//! tiles of every ZBITPIX; floats quantized with NO_DITHER, SUBTRACTIVE_DITHER_1 or _2 (ZSCALE, ZZERO
//! and ZBLANK as columns or keywords, ZDITHER0), and the tiles kept lossless in
//! GZIP_COMPRESSED_DATA or UNCOMPRESSED_DATA where quantizing failed. Each value is astropy's:
//! dequantized in f64 with CFITSIO's dither sequence, as astropy's C code does, then rounded.
//!
//! Written here rather than taken from `fitsrs` 0.4, the kept crate that reads these: it
//! dequantizes in f32, so its values differ from astropy's in the last bits; it unwraps the
//! ZSCALE and ZZERO columns, so a losslessly compressed float image panics; and it brings
//! async and WCS dependencies along. The Rice and PLIO decoders are short ([`super::rice`],
//! [`super::plio`]). HCOMPRESS_1 tiles are refused by name.

use super::{plio, rice};
use super::{Arithmetic, Bitpix, Header, Value};
use flate2::read::MultiGzDecoder;
use rayon::prelude::*;
use std::io::Read;

/// No FITS compression gives more pixels a byte: deflate at most 1032 bytes for one (and a
/// pixel is a byte or more), Rice 51 (32 repeats for 5 bits). A header that claims more is
/// refused before the image is allocated.
pub(super) const MAX_PIXELS_PER_BYTE: usize = 1032;

/// The length of CFITSIO's dither sequence.
const N_RANDOM: usize = 10_000;
/// What SUBTRACTIVE_DITHER_2 stores for an exact zero.
const ZERO_VALUE: i64 = -2_147_483_646;

/// CFITSIO's `fits_init_randoms`: the Park and Miller generator (16807, 2^31 - 1) from seed 1,
/// each value rounded to f32, and the last seed, which the convention fixes at 1043618065.
const fn dither_sequence() -> ([f32; N_RANDOM], f64) {
    let (a, m) = (16807.0f64, 2147483647.0f64);
    let (mut values, mut seed, mut i) = ([0f32; N_RANDOM], 1.0f64, 0);
    while i < N_RANDOM {
        let product = a * seed;
        seed = product - m * ((product / m) as i32 as f64);
        values[i] = (seed / m) as f32;
        i += 1;
    }
    (values, seed)
}

static RANDOMS: [f32; N_RANDOM] = dither_sequence().0;
const _: () = assert!(dither_sequence().1 == 1043618065.0, "the dither sequence differs from CFITSIO's");

/// Where a tile's ZSCALE, ZZERO or ZBLANK comes from: a column of the table (its index), or a
/// keyword for every tile.
#[derive(Debug, Clone, Copy, PartialEq)]
enum PerTile<T> {
    Column(usize),
    Constant(T),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Dither {
    None,
    /// SUBTRACTIVE_DITHER_1, or _2 (`keeps_zero`: exact zeros stored as [`ZERO_VALUE`]), with
    /// ZDITHER0.
    Subtractive {
        keeps_zero: bool,
        seed: i64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Quantized {
    scale: PerTile<f64>,
    zero: PerTile<f64>,
    dither: Dither,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Algorithm {
    Rice { block: usize, bytepix: usize },
    Plio,
    Gzip1,
    Gzip2,
    Uncompressed,
}

impl Algorithm {
    fn name(self) -> &'static str {
        match self {
            Algorithm::Rice { .. } => "RICE_1",
            Algorithm::Plio => "PLIO_1",
            Algorithm::Gzip1 => "GZIP_1",
            Algorithm::Gzip2 => "GZIP_2",
            Algorithm::Uncompressed => "NOCOMPRESS",
        }
    }
}

/// A column of a binary table: where it sits in a row and the type of its values (the TFORM
/// letter; for a variable-length array, P or Q, that of its elements in the heap).
#[derive(Debug, Clone, PartialEq)]
struct Column {
    name: String,
    offset: usize,
    kind: u8,
    /// Whether the field is an array descriptor: P (two i32) or Q (two i64).
    array: Option<u8>,
}

/// The size in bytes of one value of TFORM type `kind`, for the types a number can be read from.
fn value_size(kind: u8) -> Option<usize> {
    match kind {
        b'B' => Some(1),
        b'I' => Some(2),
        b'J' | b'E' => Some(4),
        b'K' | b'D' => Some(8),
        _ => None,
    }
}

/// The number in `bytes` (big-endian, of TFORM type `kind`), widened to f64.
fn number(kind: u8, bytes: &[u8]) -> Option<f64> {
    Some(match kind {
        b'E' => f32::from_be_bytes(bytes.get(..4)?.try_into().ok()?).into(),
        b'D' => f64::from_be_bytes(bytes.get(..8)?.try_into().ok()?),
        _ => whole(kind, bytes)? as f64,
    })
}

/// The integer in `bytes` (big-endian, of TFORM type `kind`).
fn whole(kind: u8, bytes: &[u8]) -> Option<i64> {
    Some(match kind {
        b'B' => (*bytes.first()?).into(),
        b'I' => i16::from_be_bytes(bytes.get(..2)?.try_into().ok()?).into(),
        b'J' => i32::from_be_bytes(bytes.get(..4)?.try_into().ok()?).into(),
        b'K' => i64::from_be_bytes(bytes.get(..8)?.try_into().ok()?),
        _ => return None,
    })
}

/// `rTa`: the repeat count, the type letter and, for P and Q, the element type; and the bytes
/// the field takes in a row.
fn parse_tform(tform: &str) -> Option<(u8, Option<u8>, usize)> {
    let tform = tform.trim().as_bytes();
    let digits = tform.iter().take_while(|b| b.is_ascii_digit()).count();
    let repeat = if digits == 0 { 1 } else { std::str::from_utf8(&tform[..digits]).ok()?.parse::<usize>().ok()? };
    let kind = tform.get(digits)?.to_ascii_uppercase();
    let (array, size) = match kind {
        b'P' | b'Q' => (Some(tform.get(digits + 1)?.to_ascii_uppercase()), if kind == b'P' { 8 } else { 16 }),
        b'L' | b'B' | b'A' => (None, 1),
        b'X' => return Some((kind, None, repeat.div_ceil(8))),
        b'I' => (None, 2),
        b'J' | b'E' => (None, 4),
        b'K' | b'D' | b'C' => (None, 8),
        b'M' => (None, 16),
        _ => return None,
    };
    Some((kind, array, repeat.checked_mul(size)?))
}

/// A binary table's layout: its rows and their fields, and where its heap starts.
#[derive(Debug, Clone, PartialEq)]
struct Table {
    row_bytes: usize,
    rows: usize,
    /// THEAP: the heap's offset from the start of the data.
    heap: usize,
    /// The data's size: the rows, then the gap and heap (PCOUNT).
    size: usize,
    columns: Vec<Column>,
}

impl Table {
    fn new(header: &Header) -> Result<Table, String> {
        let count = |keyword: &str, default: Option<i64>| -> Result<usize, String> {
            let value = header.integer(keyword)?.or(default).ok_or_else(|| format!("has no {} card", keyword))?;
            usize::try_from(value).map_err(|_| format!("{} = {} is negative", keyword, value))
        };
        let (row_bytes, rows, pcount) = (count("NAXIS1", None)?, count("NAXIS2", None)?, count("PCOUNT", Some(0))?);
        let fields = count("TFIELDS", None)?;
        if fields > 999 {
            return Err(format!("TFIELDS = {} is not 0 to 999", fields));
        }
        let mut columns = Vec::new();
        let mut offset = 0usize;
        for n in 1..=fields {
            let keyword = format!("TFORM{}", n);
            let tform = match header.value(&keyword) {
                Some(Value::Text(t)) => t,
                Some(other) => return Err(format!("{} = {} is not a string", keyword, other)),
                None => return Err(format!("has TFIELDS = {} but no {} card", fields, keyword)),
            };
            let (kind, array, width) =
                parse_tform(tform).ok_or_else(|| format!("{} = '{}' is not a binary table format", keyword, tform))?;
            let name = match header.value(&format!("TTYPE{}", n)) {
                Some(Value::Text(t)) => t.trim().to_string(),
                _ => String::new(),
            };
            // An array descriptor's values are its elements, in the heap.
            let (kind, array) = match array {
                Some(element) => (element, Some(kind)),
                None => (kind, None),
            };
            columns.push(Column { name, offset, kind, array });
            offset = offset.checked_add(width).ok_or("has columns wider than memory")?;
        }
        if offset != row_bytes {
            return Err(format!("has columns of {} bytes a row, but NAXIS1 = {}", offset, row_bytes));
        }
        let main = row_bytes.checked_mul(rows).ok_or("has an impossible table size")?;
        let size = main.checked_add(pcount).ok_or("has an impossible table size")?;
        let heap = match header.integer("THEAP")? {
            None => main,
            Some(theap) => usize::try_from(theap).ok().filter(|t| (main..=size).contains(t)).ok_or_else(|| {
                format!("THEAP = {} is not within the {} bytes after the table's {} bytes of rows", theap, pcount, main)
            })?,
        };
        Ok(Table { row_bytes, rows, heap, size, columns })
    }

    /// The index of the column named `name` (TTYPE, any case).
    fn find(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// The bytes of column `column` in row `row` onwards, and the column.
    fn field<'a>(&self, data: &'a [u8], column: usize, row: usize) -> Result<(&'a [u8], &Column), String> {
        let c = &self.columns[column];
        let start = row * self.row_bytes + c.offset;
        let end = self.columns.get(column + 1).map_or(self.row_bytes, |next| next.offset) + row * self.row_bytes;
        let bytes = data.get(start..end).ok_or_else(|| format!("row {} is past the table's data", row + 1))?;
        Ok((bytes, c))
    }

    /// Column `column` of row `row` as a number.
    fn real(&self, data: &[u8], column: usize, row: usize) -> Result<f64, String> {
        let (bytes, c) = self.field(data, column, row)?;
        number(c.kind, bytes).filter(|_| c.array.is_none()).ok_or_else(|| format!("column {} holds no number", c.name))
    }

    /// Column `column` of row `row` as an integer.
    fn integer(&self, data: &[u8], column: usize, row: usize) -> Result<i64, String> {
        let (bytes, c) = self.field(data, column, row)?;
        whole(c.kind, bytes).filter(|_| c.array.is_none()).ok_or_else(|| format!("column {} holds no integer", c.name))
    }

    /// The variable-length array of column `column` in row `row`: its bytes in the heap, the
    /// type of its elements and their number.
    fn array<'a>(&self, data: &'a [u8], column: usize, row: usize) -> Result<(&'a [u8], u8, usize), String> {
        let (bytes, c) = self.field(data, column, row)?;
        let name = &c.name;
        let (count, offset) = match c.array {
            Some(b'P') => (whole(b'J', bytes), bytes.get(4..).and_then(|b| whole(b'J', b))),
            Some(_) => (whole(b'K', bytes), bytes.get(8..).and_then(|b| whole(b'K', b))),
            None => return Err(format!("column {} is not a variable-length array", name)),
        };
        let (Some(count), Some(offset)) = (count, offset) else {
            return Err(format!("column {} has no array descriptor", name));
        };
        let size =
            value_size(c.kind).ok_or_else(|| format!("column {} holds arrays of type {}", name, c.kind as char))?;
        let bounds = usize::try_from(count).ok().zip(usize::try_from(offset).ok()).and_then(|(count, offset)| {
            let start = self.heap.checked_add(offset)?;
            let end = start.checked_add(count.checked_mul(size)?)?;
            (end <= self.size).then_some((count, start..end))
        });
        let Some((count, range)) = bounds else {
            let heap = self.size - self.heap;
            return Err(format!(
                "column {}: {} values at {} are not within the heap of {} bytes",
                name, count, offset, heap
            ));
        };
        let bytes = data.get(range).ok_or_else(|| format!("column {}: the heap is past the data", name))?;
        Ok((bytes, c.kind, count))
    }
}

/// A tile's values as its bytes give them, before scaling.
#[derive(Debug)]
enum Values {
    Integers(Vec<i64>),
    Floats(Vec<f64>),
}

/// The values of a tile of `count` pixels from its decompressed `bytes`, typed by their size as
/// astropy types them: 2, 4 or 8 bytes a pixel big-endian integers (floats where `floats`), 1 a
/// byte.
fn typed(bytes: &[u8], count: usize, floats: bool) -> Result<Values, String> {
    let size = bytes.len();
    Ok(if size == 2 * count {
        Values::Integers(bytes.as_chunks::<2>().0.iter().map(|&b| i16::from_be_bytes(b).into()).collect())
    } else if size == 4 * count && floats {
        Values::Floats(bytes.as_chunks::<4>().0.iter().map(|&b| f32::from_be_bytes(b).into()).collect())
    } else if size == 4 * count {
        Values::Integers(bytes.as_chunks::<4>().0.iter().map(|&b| i32::from_be_bytes(b).into()).collect())
    } else if size == 8 * count && floats {
        Values::Floats(bytes.as_chunks::<8>().0.iter().map(|&b| f64::from_be_bytes(b)).collect())
    } else if size == 8 * count {
        Values::Integers(bytes.as_chunks::<8>().0.iter().map(|&b| i64::from_be_bytes(b)).collect())
    } else if size == count {
        Values::Integers(bytes.iter().map(|&b| b.into()).collect())
    } else {
        return Err(format!("its {} bytes do not make {} pixels of 1, 2, 4 or 8 bytes", size, count));
    })
}

/// The gzip stream `bytes` decompressed, which for `count` pixels is at most 8 bytes each.
fn gunzip(bytes: &[u8], count: usize) -> Result<Vec<u8>, String> {
    let most = count.saturating_mul(8);
    let mut out = Vec::new();
    let limit = u64::try_from(most).unwrap_or(u64::MAX).saturating_add(1);
    MultiGzDecoder::new(bytes)
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| format!("its gzip data cannot be decompressed: {}", e))?;
    if out.len() > most {
        return Err(format!(
            "its gzip data decompress to more than {} bytes, 8 for each of its {} pixels",
            most, count
        ));
    }
    Ok(out)
}

/// GZIP_2's bytes back in order: it stores the first byte of every value, then the second, ….
fn unshuffle(bytes: &[u8], count: usize) -> Result<Vec<u8>, String> {
    let size = bytes.len() / count;
    if size == 0 || !bytes.len().is_multiple_of(size) {
        return Err(format!("its {} bytes do not make {} pixels of 1, 2, 4 or 8 bytes", bytes.len(), count));
    }
    let values = bytes.len() / size;
    let mut out = vec![0u8; bytes.len()];
    for (significance, plane) in bytes.chunks_exact(values).enumerate() {
        for (value, &byte) in plane.iter().enumerate() {
            out[value * size + significance] = byte;
        }
    }
    Ok(out)
}

/// A tile-compressed image: how its tiles are stored and how they become pixels.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Compressed {
    width: usize,
    height: usize,
    bitpix: Bitpix,
    algorithm: Algorithm,
    /// A tile's width and height, at most the image's.
    tile: (usize, usize),
    table: Table,
    /// The columns COMPRESSED_DATA, GZIP_COMPRESSED_DATA and UNCOMPRESSED_DATA.
    data: usize,
    gzip: Option<usize>,
    raw: Option<usize>,
    quantized: Option<Quantized>,
    blank: Option<PerTile<i64>>,
    arithmetic: Arithmetic,
}

/// The integer ZVALn of the ZNAMEn `name` (any case), as astropy looks them up.
fn parameter(header: &Header, name: &str) -> Result<Option<i64>, String> {
    for n in 1..1000 {
        match header.value(&format!("ZNAME{}", n)) {
            None => break,
            Some(Value::Text(t)) if t.trim().eq_ignore_ascii_case(name) => {
                return header.integer(&format!("ZVAL{}", n))
            }
            Some(_) => {}
        }
    }
    Ok(None)
}

impl Compressed {
    /// The compressed image of the binary table of `header`, `width`×`height` by its ZNAXISn.
    pub(super) fn new(header: &Header, width: usize, height: usize) -> Result<Compressed, String> {
        let bitpix = Bitpix::of(header.integer("ZBITPIX")?.ok_or("has no ZBITPIX card")?)?;
        let kind = match header.value("ZCMPTYPE") {
            Some(Value::Text(t)) => t.trim().to_string(),
            Some(other) => return Err(format!("ZCMPTYPE = {} is not a string", other)),
            None => return Err("has no ZCMPTYPE card".into()),
        };
        let positive = |name: &str, default: i64| -> Result<usize, String> {
            let value = parameter(header, name)?.unwrap_or(default);
            usize::try_from(value)
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| format!("{} = {} is not positive", name, value))
        };
        let algorithm = match kind.as_str() {
            "RICE_1" | "RICE_ONE" => Algorithm::Rice { block: positive("BLOCKSIZE", 32)?, bytepix: positive("BYTEPIX", 4)? },
            "PLIO_1" => Algorithm::Plio,
            "GZIP_1" => Algorithm::Gzip1,
            "GZIP_2" => Algorithm::Gzip2,
            "NOCOMPRESS" => Algorithm::Uncompressed,
            "HCOMPRESS_1" => {
                return Err(
                    "is tile-compressed with HCOMPRESS_1, which is not read (RICE_1, PLIO_1, GZIP_1, GZIP_2 and NOCOMPRESS are): funpack makes a plain FITS file of it".into()
                )
            }
            _ => return Err(format!("ZCMPTYPE = '{}' is not a tile compression of the FITS standard", kind)),
        };
        let tile_side = |n: usize, default: usize, side: usize| -> Result<usize, String> {
            let keyword = format!("ZTILE{}", n);
            match header.integer(&keyword)? {
                None => Ok(default),
                Some(v) if v > 0 => Ok(usize::try_from(v).unwrap_or(usize::MAX).min(side)),
                Some(v) => Err(format!("{} = {} is not positive", keyword, v)),
            }
        };
        let tile = (tile_side(1, width, width)?, tile_side(2, 1, height)?);

        let table = Table::new(header)?;
        let tiles = width.div_ceil(tile.0) * height.div_ceil(tile.1);
        if table.rows < tiles {
            let (w, h) = tile;
            return Err(format!(
                "has {} rows, but its {}x{} tiles of {}x{} take {}",
                table.rows, w, h, width, height, tiles
            ));
        }
        let pixels = width * height;
        if pixels / MAX_PIXELS_PER_BYTE > table.size {
            return Err(format!(
                "claims a {}x{} image from {} bytes of compressed data: more than {} pixels a byte, which no FITS compression gives",
                width, height, table.size, MAX_PIXELS_PER_BYTE
            ));
        }
        let array = |name: &str| -> Result<Option<usize>, String> {
            match table.find(name) {
                Some(c) if table.columns[c].array.is_none() => {
                    Err(format!("column {} is not a variable-length array", name))
                }
                found => Ok(found),
            }
        };
        let data = array("COMPRESSED_DATA")?.ok_or("has no COMPRESSED_DATA column")?;
        let (gzip, raw) = (array("GZIP_COMPRESSED_DATA")?, array("UNCOMPRESSED_DATA")?);

        let real = |name: &str| -> Result<Option<PerTile<f64>>, String> {
            Ok(match table.find(name) {
                Some(c) => Some(PerTile::Column(c)),
                None => header.real(name)?.map(PerTile::Constant),
            })
        };
        let quantized = match (real("ZSCALE")?, real("ZZERO")?) {
            (None, _) => None,
            (Some(_), _) if !bitpix.is_float() => {
                return Err(format!(
                    "has ZSCALE for an integer image (ZBITPIX = {}), which is not read",
                    bitpix.value()
                ))
            }
            (Some(_), None) => return Err("has ZSCALE but no ZZERO".into()),
            (Some(scale), Some(zero)) => Some(Quantized { scale, zero, dither: dither(header)? }),
        };
        let blank = match table.find("ZBLANK") {
            Some(c) => Some(PerTile::Column(c)),
            None => header.integer("ZBLANK")?.or(header.integer("BLANK")?).map(PerTile::Constant),
        };
        let scale = header.real("BSCALE")?.unwrap_or(1.0);
        let zero = header.real("BZERO")?.unwrap_or(0.0);
        let arithmetic = Arithmetic::new(bitpix, scale, zero, blank.is_some());
        Ok(Compressed { width, height, bitpix, algorithm, tile, table, data, gzip, raw, quantized, blank, arithmetic })
    }

    /// What it holds, for listings: `a 33x17 image, tile-compressed with RICE_1`.
    pub(super) fn describe(&self) -> String {
        format!("a {}x{} image, tile-compressed with {}", self.width, self.height, self.algorithm.name())
    }

    pub(super) fn shape(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// The image's pixels, row by row, from the table's `data` (all of it, as the header sizes
    /// it). Bands of tiles are decoded in parallel.
    pub(super) fn decode(&self, data: &[u8]) -> Result<Vec<f32>, String> {
        let (width, (tile_width, tile_height)) = (self.width, self.tile);
        let across = width.div_ceil(tile_width);
        let tiles = across * self.height.div_ceil(tile_height);
        let mut pixels = vec![0f32; width * self.height];
        pixels.par_chunks_mut(width * tile_height).enumerate().try_for_each(|(band, out)| {
            let rows = out.len() / width;
            for column in 0..across {
                let (x, row) = (column * tile_width, band * across + column);
                let w = tile_width.min(width - x);
                let tile =
                    self.tile(data, row, w * rows).map_err(|e| format!("tile {} of {}: {}", row + 1, tiles, e))?;
                for (y, values) in tile.chunks_exact(w).enumerate() {
                    out[y * width + x..][..w].copy_from_slice(values);
                }
            }
            Ok::<(), String>(())
        })?;
        Ok(pixels)
    }

    /// The `count` pixels of the tile in table row `row`.
    fn tile(&self, data: &[u8], row: usize, count: usize) -> Result<Vec<f32>, String> {
        let (values, lossless) = self.values(data, row, count)?;
        let blank = match self.blank {
            _ if lossless => None,
            Some(PerTile::Column(c)) => Some(self.table.integer(data, c, row)?),
            Some(PerTile::Constant(b)) => Some(b),
            None => None,
        };
        let per_tile = |value: PerTile<f64>| match value {
            PerTile::Column(c) => self.table.real(data, c, row),
            PerTile::Constant(v) => Ok(v),
        };
        let arithmetic = self.arithmetic;
        let pixels = match values {
            Values::Integers(v) if self.bitpix.is_float() => match self.quantized {
                Some(q) if !lossless => {
                    let (scale, zero) = (per_tile(q.scale)?, per_tile(q.zero)?);
                    dequantize(&v, row, scale, zero, blank, q.dither, arithmetic)
                }
                _ => v.iter().map(|&x| if Some(x) == blank { f32::NAN } else { arithmetic.float(x as f64) }).collect(),
            },
            Values::Integers(v) => {
                let bitpix = self.bitpix;
                v.iter()
                    .map(|&x| if Some(x) == blank { f32::NAN } else { arithmetic.integer(bitpix.wrap(x)) })
                    .collect()
            }
            Values::Floats(v) if self.bitpix.is_float() => v.iter().map(|&x| arithmetic.float(x)).collect(),
            Values::Floats(_) => {
                return Err(format!("holds floats for an integer image (ZBITPIX = {})", self.bitpix.value()))
            }
        };
        Ok(pixels)
    }

    /// The tile in table row `row`, of `count` pixels, as stored; and whether it is a lossless
    /// tile kept where quantizing failed, which is neither dequantized nor blanked.
    fn values(&self, data: &[u8], row: usize, count: usize) -> Result<(Values, bool), String> {
        let (bytes, kind, length) = self.table.array(data, self.data, row)?;
        if length == 0 {
            if let Some(column) = self.gzip {
                let (bytes, ..) = self.table.array(data, column, row)?;
                return Ok((typed(&gunzip(bytes, count)?, count, self.bitpix.is_float())?, true));
            }
            let Some(column) = self.raw else {
                return Err("has no data: COMPRESSED_DATA is empty and there is no column to fall back on".into());
            };
            let (bytes, kind, length) = self.table.array(data, column, row)?;
            if length != count {
                return Err(format!("has {} values in UNCOMPRESSED_DATA for {} pixels", length, count));
            }
            let size = value_size(kind).unwrap_or(1);
            let values = match kind {
                b'E' | b'D' => {
                    Values::Floats(bytes.chunks_exact(size).map(|b| number(kind, b).unwrap_or_default()).collect())
                }
                _ => Values::Integers(bytes.chunks_exact(size).map(|b| whole(kind, b).unwrap_or_default()).collect()),
            };
            return Ok((values, true));
        }
        let floats = self.bitpix.is_float() && self.quantized.is_none();
        let values = match self.algorithm {
            Algorithm::Rice { block, bytepix } => {
                if kind != b'B' {
                    return Err(format!("holds RICE_1 data as {} values, not bytes", kind as char));
                }
                let mut values = Vec::new();
                rice::decode(bytes, count, block, bytepix, &mut values)?;
                Values::Integers(values)
            }
            Algorithm::Plio => {
                if kind != b'I' {
                    return Err(format!("holds PLIO_1 data as {} values, not 16-bit words", kind as char));
                }
                let words = bytes.as_chunks::<2>().0.iter().map(|&w| i16::from_be_bytes(w)).collect::<Vec<_>>();
                let mut values = Vec::new();
                plio::decode(&words, count, &mut values)?;
                Values::Integers(values)
            }
            Algorithm::Gzip1 => typed(&gunzip(bytes, count)?, count, floats)?,
            Algorithm::Gzip2 => typed(&unshuffle(&gunzip(bytes, count)?, count)?, count, floats)?,
            Algorithm::Uncompressed => typed(bytes, count, floats)?,
        };
        Ok((values, false))
    }
}

/// ZQUANTIZ and ZDITHER0: how quantized floats were dithered.
fn dither(header: &Header) -> Result<Dither, String> {
    let method = match header.value("ZQUANTIZ") {
        None => return Ok(Dither::None),
        Some(Value::Text(t)) => t.trim().to_string(),
        Some(other) => return Err(format!("ZQUANTIZ = {} is not a string", other)),
    };
    let keeps_zero = match method.as_str() {
        "NO_DITHER" => return Ok(Dither::None),
        "SUBTRACTIVE_DITHER_1" => false,
        "SUBTRACTIVE_DITHER_2" => true,
        "NONE" => return Err("has ZQUANTIZ = 'NONE' (not quantized), yet a ZSCALE".into()),
        _ => return Err(format!("ZQUANTIZ = '{}' is not a quantization of the FITS standard", method)),
    };
    match header.integer("ZDITHER0")? {
        Some(seed) if (1..=i64::from(i32::MAX)).contains(&seed) => Ok(Dither::Subtractive { keeps_zero, seed }),
        Some(seed) => Err(format!("ZDITHER0 = {} is not a dither seed (1 to 10000)", seed)),
        None => Err(format!("has ZQUANTIZ = '{}' but no ZDITHER0", method)),
    }
}

/// Quantized floats back, as CFITSIO's `unquantize_i4r4` and astropy compute them: in f64,
/// `(q - r + 0.5)·ZSCALE + ZZERO` with `r` the dither sequence from the tile's seed, then
/// rounded; NaN where `q` is ZBLANK (the sequence moves on all the same).
fn dequantize(
    values: &[i64],
    row: usize,
    scale: f64,
    zero: f64,
    blank: Option<i64>,
    dither: Dither,
    arithmetic: Arithmetic,
) -> Vec<f32> {
    let Dither::Subtractive { keeps_zero, seed } = dither else {
        return values
            .iter()
            .map(|&q| if Some(q) == blank { f32::NAN } else { arithmetic.float(q as f64 * scale + zero) })
            .collect();
    };
    // The tile of row r (from 0) starts at seed index (r + ZDITHER0 - 1) mod 10000, and within
    // that seed at offset 500·value (the product in f32, as CFITSIO has it).
    let start = |index: usize| (RANDOMS[index] * 500.0) as usize;
    let mut index = ((seed - 1) as usize % N_RANDOM + row % N_RANDOM) % N_RANDOM;
    let mut next = start(index);
    values
        .iter()
        .map(|&q| {
            let value = if Some(q) == blank {
                f32::NAN
            } else if keeps_zero && q == ZERO_VALUE {
                arithmetic.float(0.0)
            } else {
                arithmetic.float((q as f64 - f64::from(RANDOMS[next]) + 0.5) * scale + zero)
            };
            next += 1;
            if next == N_RANDOM {
                index = (index + 1) % N_RANDOM;
                next = start(index);
            }
            value
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dither_sequence_is_cfitsios() {
        // The first values of the sequence: 16807/(2^31 - 1), then 16807² mod (2^31 - 1).
        assert_eq!(RANDOMS[0], (16807.0f64 / 2147483647.0) as f32);
        assert_eq!(RANDOMS[1], (282475249.0f64 / 2147483647.0) as f32);
        assert!(RANDOMS.iter().all(|&r| r > 0.0 && r < 1.0));
        // Seed indexes wrap at 10000: ZDITHER0 10000 on row 1 is index 0.
        let arithmetic = Arithmetic::new(Bitpix::F64, 1.0, 0.0, false);
        let dither = |seed| Dither::Subtractive { keeps_zero: false, seed };
        let first = dequantize(&[0], 0, 1.0, 0.0, None, dither(1), arithmetic);
        assert_eq!(dequantize(&[0], 1, 1.0, 0.0, None, dither(10000), arithmetic), first);
        assert_eq!(first[0], (0.5 - f64::from(RANDOMS[(RANDOMS[0] * 500.0) as usize])) as f32);
    }

    #[test]
    fn table_formats_are_parsed() {
        assert_eq!(parse_tform("1PB(134)"), Some((b'P', Some(b'B'), 8)));
        assert_eq!(parse_tform("1QD"), Some((b'Q', Some(b'D'), 16)));
        assert_eq!(parse_tform(" 1D "), Some((b'D', None, 8)));
        assert_eq!(parse_tform("J"), Some((b'J', None, 4)));
        assert_eq!(parse_tform("20A"), Some((b'A', None, 20)));
        assert_eq!(parse_tform("12X"), Some((b'X', None, 2)));
        assert_eq!(parse_tform("0E"), Some((b'E', None, 0)));
        assert_eq!(parse_tform("1P"), None);
        assert_eq!(parse_tform("3Z"), None);
        assert_eq!(parse_tform(""), None);
        assert_eq!(parse_tform("99999999999999999999999J"), None);
    }

    #[test]
    fn gzip2_bytes_are_unshuffled_and_sized() {
        // Two 16-bit values 0x0102 and 0x0304, stored high bytes first.
        assert_eq!(unshuffle(&[1, 3, 2, 4], 2).unwrap(), vec![1, 2, 3, 4]);
        assert!(unshuffle(&[1, 2, 3, 4, 5], 2).unwrap_err().contains("5 bytes do not make 2 pixels"));
        assert!(unshuffle(&[1], 2).unwrap_err().contains("do not make 2 pixels"));
        assert!(typed(&[0; 3], 2, false).unwrap_err().contains("3 bytes do not make 2 pixels"));
        assert!(gunzip(b"not gzip", 4).unwrap_err().contains("cannot be decompressed"));
    }
}
