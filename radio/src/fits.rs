//! FITS images as telescopes write them, and f32 images written back. Only what a 2-D image
//! needs: the primary HDU's header (80-character cards in 2880-byte blocks, up to `END`) and
//! its data array: BITPIX 16, 32, -32 or -64, big-endian, scaled by BSCALE and BZERO, with
//! integers equal to BLANK read as NaN. Radio images often carry degenerate frequency and
//! Stokes axes, so NAXIS 3 or more is read when every axis past the second has length 1.
//!
//! Rows are kept in file order, as NumPy (through astropy) reads them: row 0 holds the first
//! NAXIS1 values of the file, which a FITS viewer shows at the bottom. The reader parses bytes
//! in memory ([`read_image_bytes`], which [`read_image`] calls on the file's). Every failure is
//! a [`GpuError::File`](cuda_kernels::gpu::GpuError::File) naming the file; nothing here panics
//! on what a user hands in, and no header makes it allocate more than the file holds.

use crate::image::{file_error, read_file, require_image_shape, Image};
use cuda_kernels::gpu::GpuResult;
use rayon::prelude::*;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Headers and data are padded to whole blocks of this many bytes.
const BLOCK: usize = 2880;
/// A header card: keyword in columns 1-8, `= ` in 9-10, then the value and any comment.
const CARD: usize = 80;

/// A header value, in the standard's fixed or free format.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Logical(bool),
    Integer(i64),
    Real(f64),
    /// A quoted string, `''` read as one quote, trailing blanks dropped (they are not significant).
    Text(String),
    /// `KEY     =` followed by blanks or only a comment.
    Undefined,
    /// Anything else (a complex number, malformed text), kept verbatim for error messages.
    Other(String),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Value::Logical(v) => write!(f, "{}", if *v { "T" } else { "F" }),
            Value::Integer(v) => write!(f, "{}", v),
            Value::Real(v) => write!(f, "{}", v),
            Value::Text(v) => write!(f, "'{}'", v),
            Value::Undefined => write!(f, "(no value)"),
            Value::Other(v) => write!(f, "{}", v),
        }
    }
}

/// A keyword and its value; commentary cards (COMMENT, HISTORY, blank, or no `= `) have none.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub keyword: String,
    pub value: Option<Value>,
}

/// One 80-byte card (a shorter slice is read as if padded with blanks).
pub fn parse_card(card: &[u8]) -> Card {
    let text = |range: std::ops::Range<usize>| String::from_utf8_lossy(card.get(range).unwrap_or(&[])).into_owned();
    let keyword = text(0..8.min(card.len())).trim_end().to_string();
    let commentary = matches!(keyword.as_str(), "COMMENT" | "HISTORY" | "");
    let value = (!commentary && card.get(8..10) == Some(b"= ")).then(|| parse_value(&text(10..card.len())));
    Card { keyword, value }
}

/// The value field (columns 11-80): a value, then optionally `/` and a comment.
fn parse_value(field: &str) -> Value {
    let field = field.trim_start();
    if let Some(rest) = field.strip_prefix('\'') {
        // A string ends at a quote that is not doubled; a `/` inside it is not a comment.
        let mut text = String::new();
        let mut chars = rest.chars().peekable();
        loop {
            match chars.next() {
                None => return Value::Other(field.trim_end().to_string()),
                Some('\'') if chars.peek() == Some(&'\'') => {
                    chars.next();
                    text.push('\'');
                }
                Some('\'') => break,
                Some(c) => text.push(c),
            }
        }
        return Value::Text(text.trim_end().to_string());
    }
    let value = field.split('/').next().unwrap_or_default().trim();
    let numeric = !value.is_empty() && value.chars().all(|c| c.is_ascii_digit() || "+-.EeDd".contains(c));
    match value {
        "" => Value::Undefined,
        "T" => Value::Logical(true),
        "F" => Value::Logical(false),
        _ if numeric => match value.parse::<i64>() {
            Ok(v) => Value::Integer(v),
            // Fortran writes double-precision exponents with D. A header real is a decimal
            // number: one past f64's range is malformed, not infinite.
            Err(_) => match value.replace(['D', 'd'], "E").parse::<f64>() {
                Ok(v) if v.is_finite() => Value::Real(v),
                _ => Value::Other(value.to_string()),
            },
        },
        _ => Value::Other(value.to_string()),
    }
}

/// The cards of a header, up to (not including) `END`.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub cards: Vec<Card>,
}

impl Header {
    /// The value of the first card with `keyword`.
    pub fn value(&self, keyword: &str) -> Option<&Value> {
        self.cards.iter().find(|c| c.keyword == keyword).and_then(|c| c.value.as_ref())
    }

    /// An integer keyword's value, `None` when absent.
    pub fn integer(&self, keyword: &str) -> Result<Option<i64>, String> {
        match self.value(keyword) {
            None => Ok(None),
            Some(Value::Integer(v)) => Ok(Some(*v)),
            Some(other) => Err(format!("{} = {} is not an integer", keyword, other)),
        }
    }

    /// A real keyword's value (an integer is a real too), `None` when absent.
    pub fn real(&self, keyword: &str) -> Result<Option<f64>, String> {
        match self.value(keyword) {
            None => Ok(None),
            Some(Value::Integer(v)) => Ok(Some(*v as f64)),
            Some(Value::Real(v)) => Ok(Some(*v)),
            Some(other) => Err(format!("{} = {} is not a number", keyword, other)),
        }
    }
}

/// The primary header of the FITS file `bytes` and its length in bytes (whole blocks, so the
/// data starts there).
fn read_header(bytes: &[u8]) -> Result<(Header, usize), String> {
    if !bytes.starts_with(b"SIMPLE  =") {
        return Err("not a FITS file (it does not start with `SIMPLE  =`)".into());
    }
    let mut cards = Vec::new();
    for (blocks, block) in bytes.as_chunks::<BLOCK>().0.iter().enumerate() {
        for card in block.as_chunks::<CARD>().0.iter().map(|card| parse_card(card)) {
            if card.keyword == "END" {
                return Ok((Header { cards }, (blocks + 1) * BLOCK));
            }
            cards.push(card);
        }
    }
    Err(format!("is truncated: its header ends after {} bytes, without an END card", bytes.len()))
}

/// The pixel types read: those telescopes and imagers write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bitpix {
    I16,
    I32,
    F32,
    F64,
}

impl Bitpix {
    fn of(bitpix: i64) -> Result<Bitpix, String> {
        let unsupported =
            |what| format!("BITPIX {} ({}) is not supported: images are read as 16, 32, -32 or -64", bitpix, what);
        match bitpix {
            16 => Ok(Bitpix::I16),
            32 => Ok(Bitpix::I32),
            -32 => Ok(Bitpix::F32),
            -64 => Ok(Bitpix::F64),
            8 => Err(unsupported("unsigned bytes")),
            64 => Err(unsupported("64-bit integers")),
            _ => Err(format!("BITPIX {} is not valid FITS (8, 16, 32, 64, -32 or -64)", bitpix)),
        }
    }

    fn bytes(self) -> usize {
        match self {
            Bitpix::I16 => 2,
            Bitpix::I32 | Bitpix::F32 => 4,
            Bitpix::F64 => 8,
        }
    }

    /// Integer pixels: the ones BLANK applies to.
    fn is_integer(self) -> bool {
        matches!(self, Bitpix::I16 | Bitpix::I32)
    }
}

/// What the header says about the data array.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Layout {
    bitpix: Bitpix,
    width: usize,
    height: usize,
    scale: f64,
    zero: f64,
    blank: Option<i64>,
}

/// Axes as `512x512x1`, NAXIS1 first.
fn axes_text(axes: &[usize]) -> String {
    axes.iter().map(usize::to_string).collect::<Vec<_>>().join("x")
}

fn layout(header: &Header) -> Result<Layout, String> {
    if let Some(simple) = header.value("SIMPLE").filter(|v| **v != Value::Logical(true)) {
        return Err(format!("does not conform to the FITS standard (SIMPLE = {})", simple));
    }
    let bitpix = Bitpix::of(header.integer("BITPIX")?.ok_or("has no BITPIX card")?)?;
    let naxis = header.integer("NAXIS")?.ok_or("has no NAXIS card")?;
    if !(0..=999).contains(&naxis) {
        return Err(format!("NAXIS = {} is not 0 to 999", naxis));
    }
    let mut axes = Vec::new();
    for n in 1..=naxis {
        let keyword = format!("NAXIS{}", n);
        let length =
            header.integer(&keyword)?.ok_or_else(|| format!("has NAXIS = {} but no {} card", naxis, keyword))?;
        axes.push(usize::try_from(length).map_err(|_| format!("{} = {} is negative", keyword, length))?);
    }
    if header.value("GROUPS") == Some(&Value::Logical(true)) {
        return Err("holds random groups, not an image".into());
    }
    match axes.len() {
        0 => return Err("holds no image in its primary HDU (NAXIS = 0); images in extensions are not read".into()),
        1 => return Err(format!("is 1-D (NAXIS1 = {}): expected a 2-D image", axes[0])),
        _ => {}
    }
    if axes[2..].iter().any(|&length| length != 1) {
        let reason = format!(
            "is a {}-D cube (axes {}, NAXIS1 first): only 2-D images are read, and axes past the second must have length 1",
            axes.len(),
            axes_text(&axes)
        );
        return Err(reason);
    }
    if axes.contains(&0) {
        return Err(format!("is empty (axes {})", axes_text(&axes)));
    }
    let blank = if bitpix.is_integer() { header.integer("BLANK")? } else { None };
    let scale = header.real("BSCALE")?.unwrap_or(1.0);
    let zero = header.real("BZERO")?.unwrap_or(0.0);
    Ok(Layout { bitpix, width: axes[0], height: axes[1], scale, zero, blank })
}

/// Decodes each `N`-byte big-endian value, in parallel (an 8192² image is 256 MiB or more).
fn convert<const N: usize>(data: &[u8], value: impl Fn([u8; N]) -> f32 + Sync) -> Vec<f32> {
    data.as_chunks::<N>().0.par_iter().map(|&bytes| value(bytes)).collect()
}

/// The physical values `BZERO + BSCALE·raw` of the data array, NaN where an integer is BLANK.
fn decode(data: &[u8], layout: &Layout) -> Vec<f32> {
    let Layout { scale, zero, blank, .. } = *layout;
    let identity = scale == 1.0 && zero == 0.0;
    // In f64, so that BZERO 32768 or 2^31 (unsigned integers stored signed) and any BSCALE
    // keep every integer exact up to the one rounding to f32. Unscaled values are passed
    // through unchanged (0 + -0.0 would lose the sign of zero).
    let physical = move |raw: f64| if identity { raw as f32 } else { (zero + scale * raw) as f32 };
    let integer = move |raw: i64| if Some(raw) == blank { f32::NAN } else { physical(raw as f64) };
    match layout.bitpix {
        Bitpix::I16 => convert(data, |b| integer(i16::from_be_bytes(b).into())),
        Bitpix::I32 => convert(data, |b| integer(i32::from_be_bytes(b).into())),
        Bitpix::F32 => convert(data, |b| physical(f32::from_be_bytes(b).into())),
        Bitpix::F64 => convert(data, |b| physical(f64::from_be_bytes(b))),
    }
}

/// The image in the primary HDU of the FITS file `bytes`, as f32 (`path` names the file in
/// errors). A file may end without the zero padding of its last block (some writers omit it),
/// but not short of the data.
pub fn read_image_bytes(path: &Path, bytes: &[u8]) -> GpuResult<Image> {
    let (header, start) = read_header(bytes).map_err(|reason| file_error(path, reason))?;
    let layout = layout(&header).map_err(|reason| file_error(path, reason))?;
    let (width, height) = (layout.width, layout.height);
    let Some(size) = width.checked_mul(height).and_then(|n| n.checked_mul(layout.bitpix.bytes())) else {
        return Err(file_error(path, format!("has an impossible size ({}x{})", width, height)));
    };
    // The header lies within `bytes`; the data must too, checked before anything its size is
    // allocated.
    let rest = &bytes[start..];
    let Some(data) = rest.get(..size) else {
        let reason = format!(
            "is truncated: a {}x{} image of {}-byte pixels needs {} bytes of data, the file holds {}",
            width,
            height,
            layout.bitpix.bytes(),
            size,
            rest.len()
        );
        return Err(file_error(path, reason));
    };
    Ok(Image { width, height, pixels: decode(data, &layout) })
}

/// The image in the primary HDU of the FITS file at `path`, as f32: [`read_image_bytes`] on
/// the whole file (extensions after the image included).
pub fn read_image(path: &Path) -> GpuResult<Image> {
    read_image_bytes(path, &read_file(path)?)
}

/// One header card: keyword, a value right-aligned in columns 11-30 (the fixed format every
/// reader accepts), a comment.
fn card(keyword: &str, value: &str, comment: &str) -> String {
    let mut card = format!("{:<8}= {:>20} / {}", keyword, value, comment);
    card.truncate(CARD);
    format!("{:<80}", card)
}

/// Writes `pixels` (row by row, `width` a row) as a 2-D FITS image of BITPIX -32. NaN stays
/// NaN, FITS's blank for floating-point data.
pub fn write_image(path: &Path, width: usize, height: usize, pixels: &[f32]) -> GpuResult<()> {
    require_image_shape(path, width, height, pixels)?;
    let cannot = |reason: String| file_error(path, format!("cannot write: {}", reason));
    let mut header = [
        card("SIMPLE", "T", "conforms to the FITS standard"),
        card("BITPIX", "-32", "IEEE single-precision floating point"),
        card("NAXIS", "2", "a 2-D image"),
        card("NAXIS1", &width.to_string(), "columns"),
        card("NAXIS2", &height.to_string(), "rows"),
        format!("{:<80}", "END"),
    ]
    .concat();
    header.extend(std::iter::repeat_n(' ', header.len().next_multiple_of(BLOCK) - header.len()));
    let used = 4 * pixels.len();
    let mut data = vec![0u8; used.next_multiple_of(BLOCK)];
    data[..used].par_chunks_exact_mut(4).zip(pixels.par_iter()).for_each(|(bytes, v)| {
        bytes.copy_from_slice(&v.to_be_bytes());
    });
    let mut writer = BufWriter::new(File::create(path).map_err(|e| cannot(e.to_string()))?);
    writer.write_all(header.as_bytes()).map_err(|e| cannot(e.to_string()))?;
    writer.write_all(&data).map_err(|e| cannot(e.to_string()))?;
    writer.flush().map_err(|e| cannot(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_support::{error_of, scratch};

    /// A FITS file made by hand: each card's text padded to 80 bytes, the header to whole
    /// blocks with blanks, then `data` as given (no padding unless the test adds it).
    fn fits_bytes(cards: &[&str], data: &[u8]) -> Vec<u8> {
        let mut bytes: Vec<u8> = cards.iter().chain(&["END"]).flat_map(|c| format!("{:<80}", c).into_bytes()).collect();
        bytes.resize(bytes.len().div_ceil(BLOCK) * BLOCK, b' ');
        bytes.extend_from_slice(data);
        bytes
    }

    /// The mandatory cards of a `width`×`height` image of `bitpix`, then `extra`.
    fn image_cards(bitpix: i32, width: usize, height: usize, extra: &[&str]) -> Vec<String> {
        let mut cards = vec![
            "SIMPLE  =                    T".to_string(),
            format!("BITPIX  = {:>20}", bitpix),
            "NAXIS   =                    2".to_string(),
            format!("NAXIS1  = {:>20}", width),
            format!("NAXIS2  = {:>20}", height),
        ];
        cards.extend(extra.iter().map(|c| c.to_string()));
        cards
    }

    fn read_bytes(dir: &Path, name: &str, bytes: &[u8]) -> GpuResult<Image> {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        read_image(&path)
    }

    fn read_cards(dir: &Path, name: &str, cards: &[String], data: &[u8]) -> GpuResult<Image> {
        read_bytes(dir, name, &fits_bytes(&cards.iter().map(String::as_str).collect::<Vec<_>>(), data))
    }

    #[test]
    fn cards_are_parsed_as_the_standard_writes_them() {
        let card = |text: &str| parse_card(format!("{:<80}", text).as_bytes());
        assert_eq!(card("SIMPLE  =                    T / conforms").value, Some(Value::Logical(true)));
        assert_eq!(card("EXTEND  = F").value, Some(Value::Logical(false)));
        assert_eq!(card("BITPIX  =                  -32 / floats").value, Some(Value::Integer(-32)));
        assert_eq!(card("NAXIS1  = +2048").value, Some(Value::Integer(2048)));
        assert_eq!(card("BSCALE  =   1.5E-03 / scale").value, Some(Value::Real(1.5e-3)));
        assert_eq!(card("BZERO   = 3.2768D+04").value, Some(Value::Real(32768.0)));
        assert_eq!(card("CDELT1  = -.25").value, Some(Value::Real(-0.25)));
        assert_eq!(card("BUNIT   = 'JY/BEAM '           / a / in a string").value, Some(Value::Text("JY/BEAM".into())));
        assert_eq!(card("OBJECT  = 'O''Neil / Sgr A*'").value, Some(Value::Text("O'Neil / Sgr A*".into())));
        assert_eq!(card("ORIGIN  = '  lead'").value, Some(Value::Text("  lead".into())));
        assert_eq!(card("EMPTY   = ''").value, Some(Value::Text(String::new())));
        assert_eq!(card("UNDEF   =                      / nothing").value, Some(Value::Undefined));
        assert_eq!(card("OPEN    = 'no closing quote").value, Some(Value::Other("'no closing quote".into())));
        assert_eq!(card("CPLX    = (1.0, 2.0)").value, Some(Value::Other("(1.0, 2.0)".into())));
        assert_eq!(card("WORD    = inf").value, Some(Value::Other("inf".into())), "not a FITS number");
        assert_eq!(card("BSCALE  = 1E999").value, Some(Value::Other("1E999".into())), "past f64, not infinite");
        // Commentary: no value even where `= ` appears.
        assert_eq!(card("COMMENT = not a value").value, None);
        assert_eq!(card("HISTORY   made by hand").value, None);
        assert_eq!(card("        blank keyword").value, None);
        assert_eq!(card("CONTINUE  'more'").value, None);
        assert_eq!(card("END").keyword, "END");
    }

    #[test]
    fn each_bitpix_is_read_big_endian_and_scaled() {
        let dir = scratch("fits", "bitpix");
        // BITPIX 16: -2, 0, 1, 32767, with BSCALE 0.5 and BZERO 10: 9, 10, 10.5, 16393.5.
        let data = [0xFF, 0xFE, 0x00, 0x00, 0x00, 0x01, 0x7F, 0xFF];
        let cards = image_cards(16, 2, 2, &["BSCALE  =                  0.5", "BZERO   =                 10.0"]);
        let image = read_cards(&dir, "i16.fits", &cards, &data).unwrap();
        assert_eq!((image.width, image.height), (2, 2));
        assert_eq!(image.pixels, vec![9.0, 10.0, 10.5, 16393.5]);

        // BITPIX 16 without scaling, 3 wide and 1 high: -32768, 256, -1.
        let data = [0x80, 0x00, 0x01, 0x00, 0xFF, 0xFF];
        let image = read_cards(&dir, "plain.fits", &image_cards(16, 3, 1, &[]), &data).unwrap();
        assert_eq!((image.width, image.height, image.pixels), (3, 1, vec![-32768.0, 256.0, -1.0]));

        // BITPIX 32 with BZERO 2^31, the unsigned convention: raw -2^31, -1, 100 are 0, 2^31 - 1, 2^31 + 100.
        let data = [0x80, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x64];
        let cards = image_cards(32, 3, 1, &["BZERO   =           2147483648"]);
        let image = read_cards(&dir, "i32.fits", &cards, &data).unwrap();
        assert_eq!(image.pixels, vec![0.0, 2147483647.0f64 as f32, 2147483748.0f64 as f32]);
        // BITPIX 32 with BSCALE 0.25 and BZERO -1000: raw 100 and -4 are -975 and -1001.
        let data = [0x00, 0x00, 0x00, 0x64, 0xFF, 0xFF, 0xFF, 0xFC];
        let cards = image_cards(32, 1, 2, &["BSCALE  = 0.25", "BZERO   = -1000"]);
        assert_eq!(read_cards(&dir, "i32s.fits", &cards, &data).unwrap().pixels, vec![-975.0, -1001.0]);

        // BITPIX -32: 1.0 (3F800000), -2.5 (C0200000), 0.15625 (3E200000), -0.0 (80000000),
        // unscaled, so the sign of zero survives.
        let data = [0x3F, 0x80, 0, 0, 0xC0, 0x20, 0, 0, 0x3E, 0x20, 0, 0, 0x80, 0, 0, 0];
        let image = read_cards(&dir, "f32.fits", &image_cards(-32, 2, 2, &[]), &data).unwrap();
        assert_eq!(image.pixels, vec![1.0, -2.5, 0.15625, -0.0]);
        assert!(image.pixels[3].is_sign_negative());
        // Scaled floats: 2·x + 1.
        let cards = image_cards(-32, 2, 2, &["BSCALE  = 2", "BZERO   = 1"]);
        assert_eq!(read_cards(&dir, "f32s.fits", &cards, &data).unwrap().pixels, vec![3.0, -4.0, 1.3125, 1.0]);

        // BITPIX -64: 1.0 (3FF0...), -0.5 (BFE0...), 3.0 (4008...), with BZERO 0.5.
        let data = [0x3F, 0xF0, 0, 0, 0, 0, 0, 0, 0xBF, 0xE0, 0, 0, 0, 0, 0, 0, 0x40, 0x08, 0, 0, 0, 0, 0, 0];
        let cards = image_cards(-64, 3, 1, &["BZERO   =                  0.5 / shift"]);
        assert_eq!(read_cards(&dir, "f64.fits", &cards, &data).unwrap().pixels, vec![1.5, 0.0, 3.5]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn blank_integers_and_nan_floats_are_nan() {
        let dir = scratch("fits", "blank");
        // BITPIX 16, BLANK -32768 (8000), scaled by 2: -32768, 5, -32768, 7.
        let data = [0x80, 0x00, 0x00, 0x05, 0x80, 0x00, 0x00, 0x07];
        let cards = image_cards(16, 2, 2, &["BLANK   =               -32768", "BSCALE  = 2.0"]);
        let pixels = read_cards(&dir, "blank16.fits", &cards, &data).unwrap().pixels;
        assert!(pixels[0].is_nan() && pixels[2].is_nan(), "{:?}", pixels);
        assert_eq!((pixels[1], pixels[3]), (10.0, 14.0));
        // BITPIX 32, BLANK -1.
        let data = [0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x02];
        let pixels = read_cards(&dir, "blank32.fits", &image_cards(32, 2, 1, &["BLANK   = -1"]), &data).unwrap().pixels;
        assert!(pixels[0].is_nan() && pixels[1] == 2.0, "{:?}", pixels);
        // Floats blank with NaN (7FC00000); a BLANK card does not apply to them.
        let data = [0x7F, 0xC0, 0, 0, 0x3F, 0x80, 0, 0];
        let cards = image_cards(-32, 2, 1, &["BLANK   = 1"]);
        let pixels = read_cards(&dir, "nan.fits", &cards, &data).unwrap().pixels;
        assert!(pixels[0].is_nan() && pixels[1] == 1.0, "{:?}", pixels);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn degenerate_axes_are_accepted_and_padding_is_optional() {
        let dir = scratch("fits", "axes");
        // A radio image: 2x1 pixels with frequency and Stokes axes of length 1.
        let cards = [
            "SIMPLE  =                    T",
            "BITPIX  =                  -32",
            "NAXIS   =                    4",
            "NAXIS1  =                    2",
            "NAXIS2  =                    1",
            "NAXIS3  =                    1",
            "NAXIS4  =                    1",
            "COMMENT degenerate FREQ and STOKES axes",
            "CTYPE3  = 'FREQ    '",
        ];
        let data = [0x3F, 0x80, 0, 0, 0x40, 0x00, 0, 0];
        let mut padded = fits_bytes(&cards, &data);
        padded.resize(padded.len().next_multiple_of(BLOCK), 0);
        let image = read_bytes(&dir, "radio.fits", &padded).unwrap();
        assert_eq!((image.width, image.height, image.pixels), (2, 1, vec![1.0, 2.0]));
        // The same without the last block's padding, and with an extension after the data.
        assert_eq!(read_bytes(&dir, "unpadded.fits", &fits_bytes(&cards, &data)).unwrap().pixels, vec![1.0, 2.0]);
        padded.extend(fits_bytes(&["XTENSION= 'IMAGE   '"], &[]));
        assert_eq!(read_bytes(&dir, "extended.fits", &padded).unwrap().pixels, vec![1.0, 2.0]);
        // A header over two blocks: 40 cards before END.
        let mut cards = image_cards(-32, 1, 1, &[]);
        cards.extend((0..35).map(|i| format!("HISTORY line {}", i)));
        assert_eq!(read_cards(&dir, "long.fits", &cards, &[0x3F, 0x80, 0, 0]).unwrap().pixels, vec![1.0]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_files_are_errors_naming_the_file() {
        let dir = scratch("fits", "bad");
        let error = |name: &str, cards: &[String], data: &[u8]| error_of(read_cards(&dir, name, cards, data));
        let four = [0u8; 16];
        let contains = |error: String, needle: &str| assert!(error.contains(needle), "{:?} not in {:?}", needle, error);

        contains(error_of(read_image(&dir.join("absent.fits"))), "absent.fits: no such file");
        contains(error_of(read_bytes(&dir, "text.fits", b"just some text")), "text.fits: not a FITS file");
        contains(error_of(read_bytes(&dir, "empty.fits", b"")), "not a FITS file");
        contains(error_of(read_bytes(&dir, "npy.fits", b"\x93NUMPY\x01\x00")), "not a FITS file");
        let whole = fits_bytes(&image_cards(-32, 2, 2, &[]).iter().map(String::as_str).collect::<Vec<_>>(), &four);
        contains(error_of(read_bytes(&dir, "cut.fits", &whole[..1000])), "cut.fits: is truncated: its header ends");
        let no_end: Vec<u8> = format!("{:<2880}", "SIMPLE  =                    T").into_bytes();
        contains(error_of(read_bytes(&dir, "no-end.fits", &no_end)), "without an END card");
        contains(error_of(read_bytes(&dir, "short.fits", &whole[..whole.len() - 1])), "short.fits: is truncated");
        contains(
            error("short2.fits", &image_cards(-64, 2, 2, &[]), &four),
            "needs 32 bytes of data, the file holds 16",
        );

        contains(
            error("u8.fits", &image_cards(8, 2, 2, &[]), &four),
            "u8.fits: BITPIX 8 (unsigned bytes) is not supported",
        );
        contains(error("i64.fits", &image_cards(64, 2, 2, &[]), &four), "BITPIX 64 (64-bit integers) is not supported");
        contains(error("b12.fits", &image_cards(12, 2, 2, &[]), &four), "BITPIX 12 is not valid FITS");
        let mut cube = image_cards(-32, 2, 2, &[]);
        cube[2] = "NAXIS   =                    3".into();
        cube.push("NAXIS3  =                    4".into());
        contains(error("cube.fits", &cube, &[0; 64]), "cube.fits: is a 3-D cube (axes 2x2x4, NAXIS1 first)");
        let mut missing = image_cards(-32, 2, 2, &[]);
        missing.remove(4);
        contains(error("missing.fits", &missing, &four), "has NAXIS = 2 but no NAXIS2 card");
        let mut no_bitpix = image_cards(-32, 2, 2, &[]);
        no_bitpix.remove(1);
        contains(error("no-bitpix.fits", &no_bitpix, &four), "has no BITPIX card");
        let mut text_bitpix = image_cards(-32, 2, 2, &[]);
        text_bitpix[1] = "BITPIX  = '-32'".into();
        contains(error("text-bitpix.fits", &text_bitpix, &four), "BITPIX = '-32' is not an integer");
        let mut one = image_cards(-32, 2, 2, &[]);
        one[2] = "NAXIS   =                    1".into();
        contains(error("one.fits", &one, &four), "is 1-D (NAXIS1 = 2)");
        let none = vec!["SIMPLE  =                    T".into(), "BITPIX  = 16".into(), "NAXIS   = 0".into()];
        contains(error("none.fits", &none, &[]), "holds no image in its primary HDU");
        contains(error("zero.fits", &image_cards(-32, 0, 2, &[]), &[]), "is empty (axes 0x2)");
        let mut negative = image_cards(-32, 2, 2, &[]);
        negative[3] = "NAXIS1  = -2".into();
        contains(error("negative.fits", &negative, &four), "NAXIS1 = -2 is negative");
        let mut simple_f = image_cards(-32, 2, 2, &[]);
        simple_f[0] = "SIMPLE  =                    F".into();
        contains(error("simple-f.fits", &simple_f, &four), "does not conform to the FITS standard (SIMPLE = F)");
        contains(
            error("scale.fits", &image_cards(16, 2, 1, &["BSCALE  = 'two'"]), &four),
            "BSCALE = 'two' is not a number",
        );
        // Past f64's range: not read as an infinite scale, which makes every pixel inf or NaN.
        contains(
            error("inf.fits", &image_cards(16, 2, 1, &["BSCALE  = 1E999"]), &four),
            "BSCALE = 1E999 is not a number",
        );
        // A header that promises far more than the file holds is an error, not an allocation.
        contains(error("huge.fits", &image_cards(-64, 4_000_000, 4_000_000, &[]), &four), "is truncated");
        contains(error("overflow.fits", &image_cards(-64, usize::MAX / 2, 4, &[]), &four), "impossible size");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn images_are_read_from_memory_and_sized_by_the_bytes_present() {
        let path = Path::new("memory.fits");
        let read = |cards: &[String], data: &[u8]| {
            read_image_bytes(path, &fits_bytes(&cards.iter().map(String::as_str).collect::<Vec<_>>(), data))
        };
        let image = read(&image_cards(16, 2, 1, &[]), &[0x00, 0x01, 0xFF, 0xFF]).unwrap();
        assert_eq!((image.width, image.height, image.pixels), (2, 1, vec![1.0, -1.0]));
        // NAXIS1 = 10^12: refused by the 16 bytes present, before 4 TB are allocated.
        let huge = error_of(read(&image_cards(-32, 1_000_000_000_000, 1, &[]), &[0; 16]));
        assert!(huge.contains("memory.fits: is truncated: a 1000000000000x1 image"), "{}", huge);
        assert!(huge.contains("needs 4000000000000 bytes of data, the file holds 16"), "{}", huge);
        assert!(error_of(read_image_bytes(path, b"")).contains("memory.fits: not a FITS file"));
    }

    #[test]
    fn written_images_have_the_standard_layout_and_read_back() {
        let dir = scratch("fits", "write");
        let path = dir.join("out.fits");
        let pixels = [1.0f32, -2.5, f32::NAN, 0.15625, -0.0, f32::MAX];
        write_image(&path, 3, 2, &pixels).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        // One header block and one data block, each padded: blanks in the header, zeros after the data.
        assert_eq!(bytes.len(), 2 * BLOCK);
        assert_eq!(
            &bytes[..CARD],
            format!("{:<80}", "SIMPLE  =                    T / conforms to the FITS standard").as_bytes()
        );
        assert_eq!(&bytes[CARD..CARD + 30], b"BITPIX  =                  -32");
        assert_eq!(&bytes[3 * CARD..3 * CARD + 30], b"NAXIS1  =                    3");
        assert_eq!(&bytes[4 * CARD..4 * CARD + 30], b"NAXIS2  =                    2");
        assert_eq!(&bytes[5 * CARD..6 * CARD], format!("{:<80}", "END").as_bytes());
        assert!(bytes[6 * CARD..BLOCK].iter().all(|&b| b == b' '));
        assert_eq!(&bytes[BLOCK..BLOCK + 8], &[0x3F, 0x80, 0, 0, 0xC0, 0x20, 0, 0]);
        assert!(bytes[BLOCK + 24..].iter().all(|&b| b == 0));

        let image = read_image(&path).unwrap();
        assert_eq!((image.width, image.height), (3, 2));
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&image.pixels), bits(&pixels), "bit for bit, NaN and -0 included");

        // Exactly one block of data: no padding block after it.
        write_image(&path, 720, 1, &[0.5; 720]).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 2 * BLOCK as u64);
        assert_eq!(read_image(&path).unwrap().pixels, vec![0.5; 720]);

        let mismatch = error_of(write_image(&path, 4, 2, &pixels));
        assert!(mismatch.contains("cannot write: 6 pixels do not make a 4x2 image"), "{}", mismatch);
        let unwritable = error_of(write_image(&dir.join("no-such-dir").join("x.fits"), 1, 1, &[1.0]));
        assert!(unwritable.contains("cannot write"), "{}", unwritable);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
