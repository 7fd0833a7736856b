//! FITS images as telescopes and archives write them, and f32 images written back. Read: the
//! first HDU that holds a 2-D image, wherever it is (an empty primary HDU, tables and cubes
//! before it are skipped by their sizes), or the one [`Hdu`] names; BITPIX 8, 16, 32, 64, -32
//! and -64, big-endian, scaled by BSCALE and BZERO, integers equal to BLANK read as NaN; whole
//! files compressed with gzip (told by their first bytes, not their name); and tile-compressed
//! images (`fits/compressed.rs`). Radio images often carry degenerate frequency and Stokes axes, so
//! NAXIS 3 or more is read when every axis past the second has length 1.
//!
//! The values are astropy's, to the bit, rounded to f32 where astropy's are wider: scaled 8-
//! and 16-bit integers and scaled f32 are computed in f32, the others in f64, as astropy does,
//! and the unsigned conventions (BZERO -128, 2^15, 2^31, 2^63 with BSCALE 1) exactly. Unlike
//! astropy, BLANK is NaN in those unsigned images too (astropy leaves blanks to the caller
//! there, its integers cannot hold NaN). `tests/fits_astropy.rs` checks each layout against
//! files astropy writes (`scripts/fits-fixtures`).
//!
//! Rows are kept in file order, as NumPy (through astropy) reads them: row 0 holds the first
//! NAXIS1 values of the file, which a FITS viewer shows at the bottom. The reader parses bytes
//! in memory ([`read_image_hdu_bytes`], which the file readers call on the file's). Every
//! failure is a [`GpuError::File`](cuda_kernels::gpu::GpuError::File) naming the file (and the
//! HDU past the first); nothing here panics on what a user hands in, and no header makes it
//! allocate more than the file holds (a compressed one, more than any compression gives).

mod compressed;
mod plio;
mod rice;

use crate::image::{file_error, require_image_shape, with_file, Image};
use compressed::Compressed;
use cuda_kernels::gpu::GpuResult;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use rayon::prelude::*;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::str::FromStr;

/// Headers and data are padded to whole blocks of this many bytes.
const BLOCK: usize = 2880;
/// A header card: keyword in columns 1-8, `= ` in 9-10, then the value and any comment.
const CARD: usize = 80;
/// The first bytes of a gzip stream.
const GZIP: [u8; 2] = [0x1F, 0x8B];

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

    /// A string keyword's value without its leading blanks, `None` when absent or not a string.
    fn text(&self, keyword: &str) -> Option<&str> {
        match self.value(keyword) {
            Some(Value::Text(t)) => Some(t.trim_start()),
            _ => None,
        }
    }

    /// The cards that place a 2-D image made from this one's on the sky and say what its
    /// pixels hold: the WCS of axes 1 and 2 (CTYPE, CRPIX, CRVAL, CDELT, CUNIT, CROTA, CD, PC,
    /// PV), its frame (RADESYS, EQUINOX, LONPOLE, LATPOLE, the date), the beam, the unit and the
    /// frequency. What [`write_image_with`] cannot write is left out. Maps and residuals carry
    /// them, as BANE's do, so that a viewer overlays them on the image.
    ///
    /// ```
    /// use radio::fits::{parse_card, Header};
    ///
    /// let cards = ["CTYPE1  = 'RA---SIN'", "CTYPE3  = 'FREQ'", "BMAJ    = 0.001", "OBJECT  = 'M87'"];
    /// let header = Header { cards: cards.iter().map(|c| parse_card(c.as_bytes())).collect() };
    /// let kept: Vec<String> = header.celestial_cards().into_iter().map(|c| c.keyword).collect();
    /// assert_eq!(kept, ["CTYPE1", "BMAJ"]);
    /// ```
    pub fn celestial_cards(&self) -> Vec<Card> {
        const WHOLE: [&str; 15] = [
            "RADESYS", "RADECSYS", "EQUINOX", "EPOCH", "LONPOLE", "LATPOLE", "MJD-OBS", "DATE-OBS", "BMAJ", "BMIN",
            "BPA", "BUNIT", "RESTFRQ", "RESTFREQ", "SPECSYS",
        ];
        let axis = |keyword: &str, prefixes: &[&str]| {
            prefixes.iter().any(|p| keyword.strip_prefix(p).is_some_and(|axis| axis == "1" || axis == "2"))
        };
        let matrix = |keyword: &str| {
            ["CD", "PC"]
                .iter()
                .any(|p| keyword.strip_prefix(p).is_some_and(|ij| ["1_1", "1_2", "2_1", "2_2"].contains(&ij)))
        };
        let projection =
            |keyword: &str| keyword.strip_prefix("PV").is_some_and(|r| r.starts_with("1_") || r.starts_with("2_"));
        self.cards
            .iter()
            .filter(|c| {
                let k = c.keyword.as_str();
                WHOLE.contains(&k)
                    || axis(k, &["CTYPE", "CRPIX", "CRVAL", "CDELT", "CUNIT", "CROTA"])
                    || matrix(k)
                    || projection(k)
            })
            .filter(|c| c.value.as_ref().and_then(value_text).is_some())
            .cloned()
            .collect()
    }
}

/// The header at the start of `bytes` and its length in bytes (whole blocks, so the data
/// starts there).
fn read_header(bytes: &[u8]) -> Result<(Header, usize), String> {
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

/// Which HDU of a file to read: its index (0 is the primary HDU) or its EXTNAME (any case;
/// PRIMARY names HDU 0 when it has none), as astropy's `hdul[1]` and `hdul['SCI']` name them.
/// Parsed from a command line's `1` or `SCI`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hdu {
    Index(usize),
    Name(String),
}

impl FromStr for Hdu {
    type Err = String;

    fn from_str(text: &str) -> Result<Hdu, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an HDU is named by its index (0 is the primary HDU) or its EXTNAME".into());
        }
        if text.bytes().all(|b| b.is_ascii_digit()) {
            return text.parse().map(Hdu::Index).map_err(|_| format!("HDU {} is past any file's", text));
        }
        Ok(Hdu::Name(text.to_string()))
    }
}

impl std::fmt::Display for Hdu {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Hdu::Index(index) => write!(f, "{}", index),
            Hdu::Name(name) => write!(f, "'{}'", name),
        }
    }
}

/// The pixel types of FITS: BITPIX 8 (unsigned), 16, 32, 64, -32 and -64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bitpix {
    U8,
    I16,
    I32,
    I64,
    F32,
    F64,
}

impl Bitpix {
    fn of(bitpix: i64) -> Result<Bitpix, String> {
        match bitpix {
            8 => Ok(Bitpix::U8),
            16 => Ok(Bitpix::I16),
            32 => Ok(Bitpix::I32),
            64 => Ok(Bitpix::I64),
            -32 => Ok(Bitpix::F32),
            -64 => Ok(Bitpix::F64),
            _ => Err(format!("BITPIX {} is not valid FITS (8, 16, 32, 64, -32 or -64)", bitpix)),
        }
    }

    fn value(self) -> i64 {
        match self {
            Bitpix::U8 => 8,
            Bitpix::I16 => 16,
            Bitpix::I32 => 32,
            Bitpix::I64 => 64,
            Bitpix::F32 => -32,
            Bitpix::F64 => -64,
        }
    }

    fn bytes(self) -> usize {
        self.value().unsigned_abs() as usize / 8
    }

    fn is_float(self) -> bool {
        matches!(self, Bitpix::F32 | Bitpix::F64)
    }

    /// `value` as this type holds it: wrapped to its width, as NumPy casts a wider integer.
    fn wrap(self, value: i64) -> i64 {
        match self {
            Bitpix::U8 => (value as u8).into(),
            Bitpix::I16 => (value as i16).into(),
            Bitpix::I32 => (value as i32).into(),
            _ => value,
        }
    }
}

/// How a stored value becomes the physical one, BZERO + BSCALE·stored, in astropy's arithmetic,
/// so that the values agree to the bit.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Arithmetic {
    /// An integer plus an exact offset (0 unscaled, or BZERO of an unsigned convention), rounded
    /// once to f32: astropy keeps these as integers.
    Exact(i128),
    /// In f32, as astropy scales 8- and 16-bit integers and f32: times BSCALE unless it is 1,
    /// plus BZERO unless it is 0 (so that an unscaled -0 keeps its sign).
    Single { scale: Option<f32>, zero: Option<f32> },
    /// The same in f64, as astropy scales 32- and 64-bit integers and f64, then rounded to f32.
    Double { scale: Option<f64>, zero: Option<f64> },
}

impl Arithmetic {
    /// The arithmetic astropy uses for `bitpix` with BSCALE `scale` and BZERO `zero`, and BLANK
    /// present or not (an unscaled integer image with BLANK becomes floats there, without it
    /// integers).
    fn new(bitpix: Bitpix, scale: f64, zero: f64, blank: bool) -> Arithmetic {
        let unsigned = match bitpix {
            Bitpix::U8 => -128.0,
            Bitpix::I16 => 32768.0,
            Bitpix::I32 => 2147483648.0,
            Bitpix::I64 => 9223372036854775808.0,
            Bitpix::F32 | Bitpix::F64 => f64::NAN,
        };
        if !bitpix.is_float() && scale == 1.0 && (zero == unsigned || (zero == 0.0 && !blank)) {
            return Arithmetic::Exact(zero as i128);
        }
        let (scale, zero) = ((scale != 1.0).then_some(scale), (zero != 0.0).then_some(zero));
        match bitpix {
            Bitpix::U8 | Bitpix::I16 | Bitpix::F32 => {
                Arithmetic::Single { scale: scale.map(|s| s as f32), zero: zero.map(|z| z as f32) }
            }
            Bitpix::I32 | Bitpix::I64 | Bitpix::F64 => Arithmetic::Double { scale, zero },
        }
    }

    /// The physical value of the stored integer `raw`.
    fn integer(self, raw: i64) -> f32 {
        match self {
            Arithmetic::Exact(0) => raw as f32,
            Arithmetic::Exact(offset) => (i128::from(raw) + offset) as f32,
            Arithmetic::Single { .. } => self.float(raw as f32 as f64),
            Arithmetic::Double { .. } => self.float(raw as f64),
        }
    }

    /// The physical value of the stored float `raw` (an f32 widened, for `Single`).
    fn float(self, raw: f64) -> f32 {
        match self {
            Arithmetic::Single { scale, zero } => {
                let scaled = scale.map_or(raw as f32, |s| raw as f32 * s);
                zero.map_or(scaled, |z| scaled + z)
            }
            Arithmetic::Double { scale, zero } => {
                let scaled = scale.map_or(raw, |s| raw * s);
                zero.map_or(scaled, |z| scaled + z) as f32
            }
            Arithmetic::Exact(offset) => (raw + offset as f64) as f32,
        }
    }
}

/// An uncompressed image's data array, as its header describes it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Layout {
    bitpix: Bitpix,
    width: usize,
    height: usize,
    arithmetic: Arithmetic,
    blank: Option<i64>,
}

/// Axes as `512x512x1`, NAXIS1 first.
fn axes_text(axes: &[usize]) -> String {
    axes.iter().map(usize::to_string).collect::<Vec<_>>().join("x")
}

/// NAXIS and NAXISn, or (`prefix` Z) the ZNAXIS and ZNAXISn of a compressed image.
fn axes(header: &Header, prefix: &str) -> Result<Vec<usize>, String> {
    let count = format!("{}NAXIS", prefix);
    let naxis = header.integer(&count)?.ok_or_else(|| format!("has no {} card", count))?;
    if !(0..=999).contains(&naxis) {
        return Err(format!("{} = {} is not 0 to 999", count, naxis));
    }
    let mut axes = Vec::new();
    for n in 1..=naxis {
        let keyword = format!("{}{}", count, n);
        let length =
            header.integer(&keyword)?.ok_or_else(|| format!("has {} = {} but no {} card", count, naxis, keyword))?;
        axes.push(usize::try_from(length).map_err(|_| format!("{} = {} is negative", keyword, length))?);
    }
    Ok(axes)
}

/// The width and height of `axes` when they make a 2-D image, else what they are instead
/// (`is …`, in the words of `count`, NAXIS or ZNAXIS).
fn image_shape(axes: &[usize], count: &str) -> Result<Result<(usize, usize), String>, String> {
    let not = |what: String| Ok(Err(what));
    match axes.len() {
        0 => return not(format!("is empty ({} = 0)", count)),
        1 => return not(format!("is 1-D ({}1 = {})", count, axes[0])),
        _ => {}
    }
    if axes[2..].iter().any(|&length| length != 1) {
        return not(format!("is a {}-D cube (axes {}, NAXIS1 first)", axes.len(), axes_text(axes)));
    }
    if axes.contains(&0) {
        return not(format!("is empty (axes {})", axes_text(axes)));
    }
    match axes[0].checked_mul(axes[1]).and_then(|n| n.checked_mul(8)) {
        Some(_) => Ok(Ok((axes[0], axes[1]))),
        None => Err(format!("has an impossible size ({}x{})", axes[0], axes[1])),
    }
}

/// An image an HDU holds, ready to decode.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    Plain(Layout),
    Tiled(Box<Compressed>),
}

/// What an HDU holds: an image, or what it is instead (`is …`).
#[derive(Debug, Clone, PartialEq)]
enum Content {
    Image(Source),
    Other(String),
}

/// One header and data unit, as the file lays it out.
struct Unit<'a> {
    index: usize,
    header: Header,
    /// Its data, as the header sizes it, or what the file holds of it when it ends first.
    data: &'a [u8],
    /// The size its header gives its data.
    size: usize,
}

impl Unit<'_> {
    /// How listings and errors name it: `HDU 2 ('SCI')`.
    fn name(&self) -> String {
        match self.header.text("EXTNAME") {
            Some(name) => format!("HDU {} ('{}')", self.index, name),
            None => format!("HDU {}", self.index),
        }
    }

    /// `reason` about this HDU: as it is for the primary HDU (the file's own), else prefixed
    /// with the HDU's name.
    fn context(&self, reason: String) -> String {
        if self.index == 0 {
            reason
        } else {
            format!("{}: {}", self.name(), reason)
        }
    }

    fn is(&self, hdu: &Hdu) -> bool {
        match hdu {
            Hdu::Index(index) => *index == self.index,
            Hdu::Name(name) => match self.header.text("EXTNAME") {
                Some(extname) => extname.eq_ignore_ascii_case(name.trim()),
                None => self.index == 0 && name.trim().eq_ignore_ascii_case("PRIMARY"),
            },
        }
    }

    /// What it holds. The primary HDU must conform to the standard; an extension is an image,
    /// a compressed image in a binary table, or something else, described.
    fn content(&self) -> Result<Content, String> {
        let header = &self.header;
        let image = |axes: &[usize]| -> Result<Content, String> {
            let (width, height) = match image_shape(axes, "NAXIS")? {
                Ok(shape) => shape,
                Err(what) => return Ok(Content::Other(what)),
            };
            let bitpix = Bitpix::of(header.integer("BITPIX")?.ok_or("has no BITPIX card")?)?;
            let blank = if bitpix.is_float() { None } else { header.integer("BLANK")? };
            let scale = header.real("BSCALE")?.unwrap_or(1.0);
            let zero = header.real("BZERO")?.unwrap_or(0.0);
            let arithmetic = Arithmetic::new(bitpix, scale, zero, blank.is_some());
            Ok(Content::Image(Source::Plain(Layout { bitpix, width, height, arithmetic, blank })))
        };
        let axes = axes(header, "")?;
        if self.index == 0 {
            if let Some(simple) = header.value("SIMPLE").filter(|v| **v != Value::Logical(true)) {
                return Err(format!("does not conform to the FITS standard (SIMPLE = {})", simple));
            }
            if header.value("GROUPS") == Some(&Value::Logical(true)) && axes.first() == Some(&0) {
                return Ok(Content::Other("holds random groups, not an image".into()));
            }
            return image(&axes);
        }
        let rows = || header.integer("NAXIS2").ok().flatten().unwrap_or(0);
        let columns = || header.integer("TFIELDS").ok().flatten().unwrap_or(0);
        match header.text("XTENSION").map(str::trim_end) {
            Some("IMAGE") => image(&axes),
            Some("BINTABLE") if header.value("ZIMAGE") == Some(&Value::Logical(true)) => {
                match image_shape(&self::axes(header, "Z")?, "ZNAXIS")? {
                    Ok((width, height)) => {
                        Ok(Content::Image(Source::Tiled(Box::new(Compressed::new(header, width, height)?))))
                    }
                    Err(what) => Ok(Content::Other(format!("{}, tile-compressed", what))),
                }
            }
            Some("BINTABLE") => {
                Ok(Content::Other(format!("is a binary table ({} columns, {} rows)", columns(), rows())))
            }
            Some("TABLE") => Ok(Content::Other(format!("is an ASCII table ({} columns, {} rows)", columns(), rows()))),
            Some(other) => Ok(Content::Other(format!("is an extension of type '{}'", other))),
            None => Ok(Content::Other("is an extension without XTENSION".into())),
        }
    }

    /// What it holds, for a listing of the file's HDUs.
    fn describe(&self) -> String {
        let what = match self.content() {
            Ok(Content::Image(Source::Plain(l))) => {
                format!("is a {}x{} image (BITPIX {})", l.width, l.height, l.bitpix.value())
            }
            Ok(Content::Image(Source::Tiled(c))) => format!("is {}", c.describe()),
            Ok(Content::Other(what)) => what,
            Err(reason) => format!("cannot be read: {}", reason),
        };
        format!("{} {}", self.name(), what)
    }

    /// All of its data, or why the file does not hold it (`what` names the data).
    fn whole_data(&self, what: &str) -> Result<&[u8], String> {
        if self.data.len() < self.size {
            let reason =
                format!("is truncated: {} needs {} bytes of data, the file holds {}", what, self.size, self.data.len());
            return Err(self.context(reason));
        }
        Ok(self.data)
    }
}

/// The size in bytes of the data of an HDU with `header` (the primary HDU's when `primary`):
/// |BITPIX|/8 · GCOUNT · (PCOUNT + the product of the axes, NAXIS1 left out for random groups).
fn data_size(header: &Header, primary: bool) -> Result<usize, String> {
    let bitpix = Bitpix::of(header.integer("BITPIX")?.ok_or("has no BITPIX card")?)?;
    let axes = axes(header, "")?;
    if axes.is_empty() {
        return Ok(0);
    }
    let groups = primary && header.value("GROUPS") == Some(&Value::Logical(true)) && axes[0] == 0;
    let count = |keyword: &str, default: i64| -> Result<usize, String> {
        if primary && !groups {
            return Ok(default as usize);
        }
        let value = header.integer(keyword)?.unwrap_or(default);
        usize::try_from(value).map_err(|_| format!("{} = {} is negative", keyword, value))
    };
    let (pcount, gcount) = (count("PCOUNT", 0)?, count("GCOUNT", 1)?);
    let values = axes[usize::from(groups)..].iter().try_fold(1usize, |n, &length| n.checked_mul(length));
    values
        .and_then(|n| n.checked_add(pcount))
        .and_then(|n| n.checked_mul(gcount))
        .and_then(|n| n.checked_mul(bitpix.bytes()))
        .ok_or_else(|| format!("has an impossible size (axes {})", axes_text(&axes)))
}

/// The HDUs of a file, in order: each header read and its data sized, until the file ends or
/// what follows the last is not an extension (astropy, too, ignores such trailing bytes).
struct Units<'a> {
    bytes: &'a [u8],
    /// Where the next HDU starts, `None` after the last.
    next: Option<usize>,
    index: usize,
}

impl<'a> Iterator for Units<'a> {
    type Item = Result<Unit<'a>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        let start = self.next.take()?;
        let rest = self.bytes.get(start..).unwrap_or_default();
        let index = self.index;
        if index > 0 && !rest.starts_with(b"XTENSION=") {
            return None;
        }
        let name = |reason: String| if index == 0 { reason } else { format!("HDU {}: {}", index, reason) };
        let (header, header_len) = match read_header(rest) {
            Ok(found) => found,
            Err(reason) => return Some(Err(name(reason))),
        };
        let size = match data_size(&header, index == 0) {
            Ok(size) => size,
            Err(reason) => return Some(Err(name(reason))),
        };
        let data = &rest[header_len..];
        let data = &data[..size.min(data.len())];
        self.next = size.checked_next_multiple_of(BLOCK).and_then(|padded| start.checked_add(header_len + padded));
        self.index += 1;
        Some(Ok(Unit { index, header, data, size }))
    }
}

/// The unit to read and its image: the HDU `hdu` names, or the first that holds a 2-D image.
fn select<'a>(bytes: &'a [u8], hdu: Option<&Hdu>) -> Result<(Unit<'a>, Source), String> {
    if !bytes.starts_with(b"SIMPLE  =") {
        return Err("not a FITS file (it does not start with `SIMPLE  =`)".into());
    }
    // The HDUs passed over, named, and what each is, for the error when none is read.
    let mut passed = Vec::new();
    for unit in (Units { bytes, next: Some(0), index: 0 }) {
        let unit = unit?;
        match hdu {
            Some(wanted) if !unit.is(wanted) => passed.push(unit.describe()),
            _ => match unit.content().map_err(|reason| unit.context(reason))? {
                Content::Image(source) => return Ok((unit, source)),
                Content::Other(what) if hdu.is_some() => {
                    return Err(format!(
                        "{} {}: only 2-D images are read (axes past the second of length 1)",
                        unit.name(),
                        what
                    ))
                }
                Content::Other(what) => passed.push(format!("{} {}", unit.name(), what)),
            },
        }
    }
    Err(match (hdu, passed.as_slice()) {
        // A file of one HDU: what it is, in the words of the file itself.
        (None, [only]) => {
            let what = only.strip_prefix("HDU 0 ").unwrap_or(only);
            format!("{}: only 2-D images are read (axes past the second of length 1)", what)
        }
        (None, _) => format!("holds no 2-D image: {}", passed.join("; ")),
        (Some(hdu), _) => format!("has no HDU {}: its HDUs are {}", hdu, passed.join("; ")),
    })
}

/// The bytes of a huge page, 2 MiB on x86-64 and on aarch64 with 4 KiB pages.
#[cfg(target_os = "linux")]
const HUGE_PAGE: usize = 2 << 20;

/// An empty Vec with room for `len` pixels, its memory (not yet touched) backed by huge pages
/// where Linux has them. Fresh memory is faulted in, and zeroed, on first write: 4 KiB at a
/// time, that costs several times the decode itself; 2 MiB at a time, a fraction of it.
fn room_for(len: usize) -> Vec<f32> {
    let pixels = Vec::<f32>::with_capacity(len);
    #[cfg(target_os = "linux")]
    {
        let start = pixels.as_ptr().addr();
        let first = start.next_multiple_of(HUGE_PAGE);
        let end = (start + pixels.capacity() * size_of::<f32>()) / HUGE_PAGE * HUGE_PAGE;
        if first < end {
            // madvise writes nothing through the pointer: it names the range.
            let advised = pixels.as_ptr().cast::<u8>().wrapping_add(first - start).cast_mut().cast();
            // SAFETY: [first, end) is page-aligned and inside the Vec's own allocation, which
            // nothing has touched; MADV_HUGEPAGE only chooses the size of the pages that will
            // back it, never their contents. It is a hint: refused (a kernel without
            // transparent huge pages), the memory comes 4 KiB at a time, as before.
            unsafe { libc::madvise(advised, end - first, libc::MADV_HUGEPAGE) };
        }
    }
    pixels
}

/// Decodes each `N`-byte big-endian value, in parallel (an 8192² image is 256 MiB or more),
/// straight into the image's memory.
fn convert<const N: usize>(data: &[u8], value: impl Fn([u8; N]) -> f32 + Sync) -> Vec<f32> {
    let values = data.as_chunks::<N>().0;
    let mut pixels = room_for(values.len());
    values.par_iter().map(|&bytes| value(bytes)).collect_into_vec(&mut pixels);
    pixels
}

/// The physical values of the data array, NaN where an integer is BLANK.
fn decode(data: &[u8], layout: &Layout) -> Vec<f32> {
    let Layout { bitpix, arithmetic, blank, .. } = *layout;
    // Unscaled images, most of those read, get a loop of their own: one conversion a pixel
    // (choosing the arithmetic for each costs half as much again).
    let unscaled = arithmetic == Arithmetic::Exact(0) && blank.is_none();
    match bitpix {
        Bitpix::F32 if arithmetic == Arithmetic::Single { scale: None, zero: None } => {
            return convert(data, f32::from_be_bytes)
        }
        Bitpix::F64 if arithmetic == Arithmetic::Double { scale: None, zero: None } => {
            return convert(data, |b| f64::from_be_bytes(b) as f32)
        }
        Bitpix::I16 if unscaled => return convert(data, |b| i16::from_be_bytes(b).into()),
        Bitpix::I32 if unscaled => return convert(data, |b| i32::from_be_bytes(b) as f32),
        _ => {}
    }
    let integer = move |raw: i64| if Some(raw) == blank { f32::NAN } else { arithmetic.integer(raw) };
    match bitpix {
        Bitpix::U8 => convert(data, |[b]| integer(b.into())),
        Bitpix::I16 => convert(data, |b| integer(i16::from_be_bytes(b).into())),
        Bitpix::I32 => convert(data, |b| integer(i32::from_be_bytes(b).into())),
        Bitpix::I64 => convert(data, |b| integer(i64::from_be_bytes(b))),
        Bitpix::F32 => convert(data, |b| arithmetic.float(f32::from_be_bytes(b).into())),
        Bitpix::F64 => convert(data, |b| arithmetic.float(f64::from_be_bytes(b))),
    }
}

/// The image of the FITS file `bytes`, decompressed if need be.
/// The image of the HDU that `hdu` names (or of the first 2-D image), with that HDU's header.
fn read(bytes: &[u8], hdu: Option<&Hdu>) -> Result<(Image, Header), String> {
    if bytes.starts_with(&GZIP) {
        let mut inflated = Vec::new();
        MultiGzDecoder::new(bytes)
            .read_to_end(&mut inflated)
            .map_err(|e| format!("is gzip-compressed, but cannot be decompressed: {}", e))?;
        if !inflated.starts_with(b"SIMPLE  =") {
            return Err("is gzip-compressed, but what it holds is not a FITS file".into());
        }
        return read(&inflated, hdu);
    }
    if bytes.starts_with(b"BZh") || bytes.starts_with(b"PK\x03\x04") {
        return Err("is compressed with bzip2 or zip: FITS files are read plain or gzip-compressed".into());
    }
    let (unit, source) = select(bytes, hdu)?;
    match source {
        Source::Plain(layout) => {
            let (width, height, size) = (layout.width, layout.height, layout.bitpix.bytes());
            // Within the file's size: image_shape checked width·height·8.
            let needed = width * height * size;
            let Some(data) = unit.data.get(..needed) else {
                let reason = format!(
                    "is truncated: a {}x{} image of {}-byte pixels needs {} bytes of data, the file holds {}",
                    width,
                    height,
                    size,
                    needed,
                    unit.data.len()
                );
                return Err(unit.context(reason));
            };
            let image = Image { width, height, pixels: decode(data, &layout) };
            Ok((image, unit.header))
        }
        Source::Tiled(compressed) => {
            let data = unit.whole_data(&format!("its compressed {}", compressed.describe()))?;
            let pixels = compressed.decode(data).map_err(|reason| unit.context(reason))?;
            let (width, height) = compressed.shape();
            Ok((Image { width, height, pixels }, unit.header))
        }
    }
}

/// The image in HDU `hdu` of the FITS file `bytes`, or in the first HDU that holds a 2-D
/// image when `hdu` is `None`, as f32 (`path` names the file in errors). A gzip-compressed
/// file is decompressed first. A file may end without the zero padding of its last block (some
/// writers omit it), but not short of the image's data.
pub fn read_image_hdu_bytes(path: &Path, bytes: &[u8], hdu: Option<&Hdu>) -> GpuResult<Image> {
    Ok(read(bytes, hdu).map_err(|reason| file_error(path, reason))?.0)
}

/// [`read_image_hdu`], with the header of the HDU the image came from (its WCS, its unit): for
/// a tile-compressed image, the header of its table, which keeps the image's keywords.
pub fn read_image_and_header(path: &Path, hdu: Option<&Hdu>) -> GpuResult<(Image, Header)> {
    with_file(path, |bytes| read(bytes, hdu).map_err(|reason| file_error(path, reason)))
}

/// The first 2-D image of the FITS file `bytes`: [`read_image_hdu_bytes`] with no HDU named.
pub fn read_image_bytes(path: &Path, bytes: &[u8]) -> GpuResult<Image> {
    read_image_hdu_bytes(path, bytes, None)
}

/// The image in HDU `hdu` of the FITS file at `path` (or the first 2-D image): see
/// [`read_image_hdu_bytes`].
pub fn read_image_hdu(path: &Path, hdu: Option<&Hdu>) -> GpuResult<Image> {
    with_file(path, |bytes| read_image_hdu_bytes(path, bytes, hdu))
}

/// The first 2-D image of the FITS file at `path`, as f32: see [`read_image_hdu_bytes`].
pub fn read_image(path: &Path) -> GpuResult<Image> {
    read_image_hdu(path, None)
}

/// One header card: keyword, a value right-aligned in columns 11-30 (the fixed format every
/// reader accepts), a comment.
fn card(keyword: &str, value: &str, comment: &str) -> String {
    let mut card = format!("{:<8}= {:>20} / {}", keyword, value, comment);
    card.truncate(CARD);
    format!("{:<80}", card)
}

/// Whether the file name of `path` ends in `suffix` (any case).
fn name_ends(path: &Path, suffix: &str) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.to_ascii_lowercase().ends_with(suffix))
}

/// `value` as a header card's value: a string quoted, left-aligned from column 11 and at
/// least 8 characters inside its quotes, anything else right-aligned in columns 11-30 (the
/// fixed format); a real always with its decimal point, in the fewest digits that read back
/// the same f64, in an exponent form where the plain one takes more than 20 characters.
/// `None` for a value that cannot be written (`Undefined`, `Other`, a string that is not
/// printable ASCII or, its quotes doubled, does not fit a card).
fn value_text(value: &Value) -> Option<String> {
    Some(match value {
        Value::Logical(v) => format!("{:>20}", if *v { "T" } else { "F" }),
        Value::Integer(v) => format!("{:>20}", v),
        Value::Real(v) if v.is_finite() => {
            let plain = format!("{}", v);
            let plain = if plain.contains('.') { plain } else { plain + ".0" };
            let text = if plain.len() <= 20 {
                plain
            } else {
                let scientific = format!("{:E}", v);
                let (mantissa, exponent) = scientific.split_once('E')?;
                let point = if mantissa.contains('.') { "" } else { ".0" };
                format!("{}{}E{}", mantissa, point, exponent)
            };
            format!("{:>20}", text)
        }
        Value::Text(t) if t.bytes().all(|b| (b' '..=b'~').contains(&b)) => {
            let quoted = format!("'{:<8}'", t.replace('\'', "''"));
            if quoted.len() > CARD - 10 {
                return None;
            }
            format!("{:<20}", quoted)
        }
        _ => return None,
    })
}

/// Writes `pixels` (row by row, `width` a row) as a 2-D FITS image of BITPIX -32, gzipped when
/// the name ends in `.gz` (as astropy writes it). NaN stays NaN, FITS's blank for floats.
pub fn write_image(path: &Path, width: usize, height: usize, pixels: &[f32]) -> GpuResult<()> {
    write_image_with(path, width, height, pixels, &[])
}

/// [`write_image`], with `cards` after the image's structural ones: its WCS, its beam, its
/// unit. Each card needs a value that can be written and a keyword of at most 8 upper-case
/// letters, digits, `-` or `_` that neither shapes the file (SIMPLE, BITPIX, NAXIS…, EXTEND,
/// XTENSION, PCOUNT, GCOUNT, GROUPS, END) nor changes how its pixels read (BSCALE, BZERO,
/// BLANK).
///
/// ```
/// use radio::fits::{read_image_and_header, write_image_with, Card, Value};
///
/// let path = std::env::temp_dir().join("write_image_with-doctest.fits");
/// let beam = Card { keyword: "BMAJ".into(), value: Some(Value::Real(0.001)) };
/// write_image_with(&path, 2, 1, &[1.0, 2.0], &[beam]).unwrap();
/// let (image, header) = read_image_and_header(&path, None).unwrap();
/// assert_eq!((image.pixels, header.real("BMAJ")), (vec![1.0, 2.0], Ok(Some(0.001))));
/// let bzero = Card { keyword: "BZERO".into(), value: Some(Value::Real(1.0)) };
/// assert!(write_image_with(&path, 2, 1, &[1.0, 2.0], &[bzero]).is_err(), "it would change the pixels");
/// ```
pub fn write_image_with(path: &Path, width: usize, height: usize, pixels: &[f32], cards: &[Card]) -> GpuResult<()> {
    require_image_shape(path, width, height, pixels)?;
    let cannot = |reason: String| file_error(path, format!("cannot write: {}", reason));
    if name_ends(path, ".fz") {
        return Err(cannot("tile-compressed FITS (.fz) is read, not written: name it .fits or .fits.gz".into()));
    }
    let mut extra = Vec::with_capacity(cards.len());
    for Card { keyword, value } in cards {
        let allowed = |c: char| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-' || c == '_';
        const RESERVED: [&str; 11] =
            ["SIMPLE", "BITPIX", "EXTEND", "XTENSION", "PCOUNT", "GCOUNT", "GROUPS", "END", "BSCALE", "BZERO", "BLANK"];
        let structural = RESERVED.contains(&keyword.as_str()) || keyword.starts_with("NAXIS");
        let text = value.as_ref().and_then(value_text);
        match text {
            Some(text) if !keyword.is_empty() && keyword.len() <= 8 && keyword.chars().all(allowed) && !structural => {
                extra.push(format!("{:<80}", format!("{:<8}= {}", keyword, text)));
            }
            _ => return Err(cannot(format!("the header card {} = {:?} cannot be written", keyword, value))),
        }
    }
    let mut header = [
        card("SIMPLE", "T", "conforms to the FITS standard"),
        card("BITPIX", "-32", "IEEE single-precision floating point"),
        card("NAXIS", "2", "a 2-D image"),
        card("NAXIS1", &width.to_string(), "columns"),
        card("NAXIS2", &height.to_string(), "rows"),
    ]
    .concat();
    header.extend(extra);
    header.push_str(&format!("{:<80}", "END"));
    header.extend(std::iter::repeat_n(' ', header.len().next_multiple_of(BLOCK) - header.len()));
    let used = 4 * pixels.len();
    let mut data = vec![0u8; used.next_multiple_of(BLOCK)];
    data[..used].par_chunks_exact_mut(4).zip(pixels.par_iter()).for_each(|(bytes, v)| {
        bytes.copy_from_slice(&v.to_be_bytes());
    });
    let file = BufWriter::new(File::create(path).map_err(|e| cannot(e.to_string()))?);
    let write = |mut writer: Box<dyn Write>| -> std::io::Result<()> {
        writer.write_all(header.as_bytes())?;
        writer.write_all(&data)?;
        writer.flush()
    };
    if name_ends(path, ".gz") {
        let mut gzip = GzEncoder::new(file, flate2::Compression::default());
        let mut result = write(Box::new(&mut gzip));
        if result.is_ok() {
            result = gzip.finish().and_then(|mut file| file.flush());
        }
        result.map_err(|e| cannot(e.to_string()))
    } else {
        write(Box::new(file)).map_err(|e| cannot(e.to_string()))
    }
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

    /// `values` in the byte order `bytes` gives them, one after another.
    fn encode<const N: usize, T: Copy>(values: &[T], bytes: fn(T) -> [u8; N]) -> Vec<u8> {
        values.iter().flat_map(|&v| bytes(v)).collect()
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

        // BITPIX 8, unsigned: 0, 1, 128, 255; with BZERO -128 (astropy's int8), -128 to 127.
        let data = [0, 1, 128, 255];
        let image = read_cards(&dir, "u8.fits", &image_cards(8, 2, 2, &[]), &data).unwrap();
        assert_eq!(image.pixels, vec![0.0, 1.0, 128.0, 255.0]);
        let cards = image_cards(8, 4, 1, &["BZERO   =                 -128"]);
        assert_eq!(read_cards(&dir, "i8.fits", &cards, &data).unwrap().pixels, vec![-128.0, -127.0, 0.0, 127.0]);

        // BITPIX 64: 1, -1 and 2^53 + 1, which rounds once to f32 (2^53); with BZERO 2^63 (the
        // unsigned convention), -2^63 and 2^63 - 1 are 0 and 2^64 - 1, which rounds to 2^64.
        let data = encode(&[1, -1, (1 << 53) + 1], i64::to_be_bytes);
        let image = read_cards(&dir, "i64.fits", &image_cards(64, 3, 1, &[]), &data).unwrap();
        assert_eq!(image.pixels, vec![1.0, -1.0, 9007199254740992.0]);
        let data = encode(&[i64::MIN, i64::MAX], i64::to_be_bytes);
        let cards = image_cards(64, 2, 1, &["BZERO   =  9223372036854775808"]);
        assert_eq!(read_cards(&dir, "u64.fits", &cards, &data).unwrap().pixels, vec![0.0, 18446744073709551616.0]);

        // Scaled 16-bit integers are computed in f32, as astropy does: 24·0.1 + 3.7 is
        // 6.1000004, where f64 and one rounding would give 6.1.
        let cards = image_cards(16, 1, 1, &["BSCALE  = 0.1", "BZERO   = 3.7"]);
        let pixels = read_cards(&dir, "f32-arithmetic.fits", &cards, &[0, 24]).unwrap().pixels;
        assert_eq!(pixels[0].to_bits(), 1086534452);
        assert_ne!(pixels[0], (24.0 * 0.1 + 3.7f64) as f32);

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
        contains(error("none.fits", &none, &[]), "none.fits: is empty (NAXIS = 0): only 2-D images are read");
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

    #[test]
    fn written_cards_read_back_as_given_and_unwritable_ones_are_refused() {
        let dir = scratch("fits", "cards");
        let path = dir.join("cards.fits");
        let card = |keyword: &str, value: Value| Card { keyword: keyword.into(), value: Some(value) };
        let cards = [
            card("CTYPE1", Value::Text("RA---SIN".into())),
            card("OBJECT", Value::Text("it's".into())),
            card("CRPIX1", Value::Real(2048.5)),
            card("CDELT1", Value::Real(-1.0 / 3600.0)),
            card("RESTFRQ", Value::Real(1.4e9)),
            card("BPA", Value::Real(0.0)),
            card("TINY", Value::Real(-f64::MIN_POSITIVE)),
            card("WCSAXES", Value::Integer(2)),
            card("LOGICAL", Value::Logical(false)),
        ];
        write_image_with(&path, 2, 1, &[1.0, 2.0], &cards).unwrap();
        let (image, header) = read_image_and_header(&path, None).unwrap();
        assert_eq!(image.pixels, [1.0, 2.0]);
        assert_eq!(&header.cards[5..], &cards, "every value read back as written, f64 for f64");
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[5 * CARD..5 * CARD + 20], b"CTYPE1  = 'RA---SIN'", "a string from column 11");
        assert_eq!(&bytes[7 * CARD..7 * CARD + 30], b"CRPIX1  =               2048.5", "a real in the fixed format");

        for (bad, why) in [
            (card("NAXIS3", Value::Integer(1)), "structural"),
            (card("ctype1", Value::Text("x".into())), "lower case"),
            (card("TOOLONGKEY", Value::Integer(1)), "nine letters"),
            (card("OBJECT", Value::Text("Ω".into())), "not ASCII"),
            (card("OBJECT", Value::Text("x".repeat(69))), "past the card"),
            (card("OBJECT", Value::Text("'".repeat(35))), "past the card, its quotes doubled"),
            (card("BZERO", Value::Real(1.0)), "changes the pixels"),
            (card("CRVAL1", Value::Real(f64::NAN)), "not finite"),
            (card("CRVAL1", Value::Other("1 2".into())), "kept verbatim"),
            (Card { keyword: "CRVAL1".into(), value: None }, "no value"),
        ] {
            let error = error_of(write_image_with(&path, 2, 1, &[1.0, 2.0], &[bad]));
            assert!(error.contains("cannot be written"), "{}: {}", why, error);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn celestial_cards_are_the_two_axes_wcs_the_frame_the_beam_and_the_unit() {
        let header = Header {
            cards: [
                "NAXIS   = 3",
                "CTYPE1  = 'RA---ZPN'",
                "CTYPE3  = 'FREQ'",
                "CRVAL2  = -30.0",
                "CD1_2   = 0.0",
                "PC3_3   = 1.0",
                "PV2_1   = 0.5",
                "CROTA2  = 10",
                "BSCALE  = 2.0",
                "EQUINOX = 2000.0",
                "BMAJ    = 0.001",
                "BUNIT   = 'JY/BEAM'",
                "OBJECT  = 'M87'",
                "RESTFRQ = 1 2",
                "HISTORY made by hand",
            ]
            .map(|card| parse_card(format!("{:<80}", card).as_bytes()))
            .to_vec(),
        };
        let kept: Vec<String> = header.celestial_cards().into_iter().map(|c| c.keyword).collect();
        // A third axis, the scaling, other keywords and a value that cannot be written stay out.
        assert_eq!(kept, ["CTYPE1", "CRVAL2", "CD1_2", "PV2_1", "CROTA2", "EQUINOX", "BMAJ", "BUNIT"]);
    }

    #[test]
    fn images_past_a_huge_page_are_read_bit_for_bit() {
        // 1500x1000 pixels, 6 MB of f32: room_for advises whole 2 MiB pages of them, which
        // each decode writes across. The values spread over all f32 bit patterns: NaNs with
        // payloads and subnormals of either sign among them.
        let dir = scratch("fits", "large");
        let (width, height) = (1500, 1000);
        let count = width * height;
        let floats: Vec<f32> = (0..count as u32).map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761))).collect();
        write_image(&dir.join("f32.fits"), width, height, &floats).unwrap();
        let image = read_image(&dir.join("f32.fits")).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!((image.width, image.height), (width, height));
        assert!(bits(&image.pixels) == bits(&floats), "bit for bit");

        let shorts: Vec<i16> = (0..count).map(|i| (i as i16).wrapping_mul(7919)).collect();
        let image =
            read_cards(&dir, "i16.fits", &image_cards(16, width, height, &[]), &encode(&shorts, i16::to_be_bytes));
        assert!(image.unwrap().pixels.iter().zip(&shorts).all(|(&p, &s)| p == f32::from(s)));
        let bytes: Vec<u8> = (0..count).map(|i| (i % 251) as u8).collect();
        let image = read_cards(&dir, "u8.fits", &image_cards(8, width, height, &["BLANK   = 250"]), &bytes).unwrap();
        let expected = |&b: &u8| if b == 250 { f32::NAN } else { f32::from(b) };
        assert!(bits(&image.pixels) == bits(&bytes.iter().map(expected).collect::<Vec<_>>()));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn files_that_cannot_be_mapped_are_read_and_empty_ones_are_errors() {
        use std::os::unix::ffi::OsStrExt;
        let dir = scratch("fits", "fifo");
        let (file, fifo) = (dir.join("sky.fits"), dir.join("sky.pipe"));
        let pixels = [1.0f32, -2.5, f32::NAN, 0.25];
        write_image(&file, 2, 2, &pixels).unwrap();
        let name = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: `name` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let bytes = std::fs::read(&file).unwrap();
        let writer = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::fs::write(fifo, bytes)
        });
        let image = read_image(&fifo).unwrap();
        writer.join().unwrap().unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!((image.width, image.height, bits(&image.pixels)), (2, 2, bits(&pixels)));

        std::fs::write(dir.join("empty.fits"), b"").unwrap();
        let empty = error_of(read_image(&dir.join("empty.fits")));
        assert!(empty.contains("empty.fits: not a FITS file"), "{}", empty);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// One HDU of `cards` and `data`, its data padded with zeros to whole blocks.
    fn unit(cards: &[&str], data: &[u8]) -> Vec<u8> {
        let mut bytes = fits_bytes(cards, data);
        bytes.resize(bytes.len().next_multiple_of(BLOCK), 0);
        bytes
    }

    /// A file of an empty primary HDU, a binary table with a heap, a 3-D cube, then two images
    /// 'SCI' (2x1, BITPIX 16) and 'ERR' (1x2, BITPIX -32).
    fn extensions() -> Vec<u8> {
        let table = [
            "XTENSION= 'BINTABLE'",
            "BITPIX  =                    8",
            "NAXIS   =                    2",
            "NAXIS1  =                    8",
            "NAXIS2  =                    2",
            "PCOUNT  =                 3000",
            "GCOUNT  =                    1",
            "TFIELDS =                    1",
            "TFORM1  = '1PJ(2)  '",
            "EXTNAME = 'EVENTS'",
        ];
        let image = |name: &str, bitpix: i32, width: usize, height: usize| {
            let mut cards = vec![
                "XTENSION= 'IMAGE   '".to_string(),
                format!("BITPIX  = {:>20}", bitpix),
                "NAXIS   =                    2".to_string(),
                format!("NAXIS1  = {:>20}", width),
                format!("NAXIS2  = {:>20}", height),
                "PCOUNT  =                    0".to_string(),
                "GCOUNT  =                    1".to_string(),
            ];
            if !name.is_empty() {
                cards.push(format!("EXTNAME = '{}'", name));
            }
            cards
        };
        let strs = |cards: &[String]| cards.iter().map(String::as_str).collect::<Vec<_>>().join("\n");
        let mut cube = image("CUBE", -32, 1, 1);
        cube[2] = "NAXIS   =                    3".into();
        cube.push("NAXIS3  =                    2".into());
        [
            unit(
                &["SIMPLE  =                    T", "BITPIX  =                    8", "NAXIS   =                    0"],
                &[],
            ),
            unit(&table, &[0xAA; 3016]),
            unit(&strs(&cube).split('\n').collect::<Vec<_>>(), &[0; 8]),
            unit(&strs(&image("SCI", 16, 2, 1)).split('\n').collect::<Vec<_>>(), &[0, 7, 0xFF, 0xFE]),
            unit(
                &strs(&image("ERR", -32, 1, 2)).split('\n').collect::<Vec<_>>(),
                &encode(&[0.5f32, -1.0], f32::to_be_bytes),
            ),
        ]
        .concat()
    }

    #[test]
    fn the_first_image_or_the_named_hdu_is_read() {
        let path = Path::new("mef.fits");
        let bytes = extensions();
        let read = |hdu: Option<Hdu>| read_image_hdu_bytes(path, &bytes, hdu.as_ref());
        let sci = Image { width: 2, height: 1, pixels: vec![7.0, -2.0] };
        let err = Image { width: 1, height: 2, pixels: vec![0.5, -1.0] };
        assert_eq!(read(None).unwrap(), sci, "past the empty primary HDU, the table and the cube");
        assert_eq!(read(Some(Hdu::Index(3))).unwrap(), sci);
        assert_eq!(read(Some("4".parse().unwrap())).unwrap(), err);
        assert_eq!(read(Some("err".parse().unwrap())).unwrap(), err, "EXTNAME in any case");
        assert_eq!(read(Some(Hdu::Name(" SCI ".into()))).unwrap(), sci);

        let error = |hdu: Hdu| error_of(read(Some(hdu)));
        let primary = error(Hdu::Name("primary".into()));
        assert!(primary.contains("mef.fits: HDU 0 is empty (NAXIS = 0): only 2-D images are read"), "{}", primary);
        let cube = error(Hdu::Index(2));
        assert!(cube.contains("HDU 2 ('CUBE') is a 3-D cube (axes 1x1x2, NAXIS1 first)"), "{}", cube);
        let table = error(Hdu::Name("EVENTS".into()));
        assert!(table.contains("HDU 1 ('EVENTS') is a binary table (1 columns, 2 rows)"), "{}", table);
        let absent = error(Hdu::Index(5));
        assert!(
            absent.contains(
                "mef.fits: has no HDU 5: its HDUs are HDU 0 is empty (NAXIS = 0); HDU 1 ('EVENTS') is a binary table"
            ),
            "{}",
            absent
        );
        assert!(
            absent.contains("HDU 3 ('SCI') is a 2x1 image (BITPIX 16); HDU 4 ('ERR') is a 1x2 image (BITPIX -32)"),
            "{}",
            absent
        );
        assert!(error(Hdu::Name("DQ".into())).contains("has no HDU 'DQ': its HDUs are"));

        // Without the images, nothing is read, and the error says what each HDU is.
        // The primary HDU takes a block, the table three, the cube two.
        let cut = 6 * BLOCK;
        let none = error_of(read_image_bytes(path, &bytes[..cut]));
        assert!(
            none.contains(
                "mef.fits: holds no 2-D image: HDU 0 is empty (NAXIS = 0); HDU 1 ('EVENTS') is a binary table"
            ),
            "{}",
            none
        );
        assert!(none.contains("; HDU 2 ('CUBE') is a 3-D cube (axes 1x1x2, NAXIS1 first)"), "{}", none);
        // A truncated table ends the walk; a truncated image is an error.
        let short = error_of(read_image_bytes(path, &bytes[..BLOCK + BLOCK + 100]));
        assert!(short.contains("holds no 2-D image: HDU 0 is empty (NAXIS = 0); HDU 1 ('EVENTS')"), "{}", short);
        let image = error_of(read_image_hdu_bytes(path, &bytes[..bytes.len() - BLOCK + 2], Some(&Hdu::Index(4))));
        assert!(
            image.contains(
                "HDU 4 ('ERR'): is truncated: a 1x2 image of 4-byte pixels needs 8 bytes of data, the file holds 2"
            ),
            "{}",
            image
        );
        // Trailing bytes that are not an extension end the file, as astropy reads it.
        let mut trailing = bytes[..cut].to_vec();
        trailing.extend([0u8; 100]);
        assert!(error_of(read_image_bytes(path, &trailing)).contains("holds no 2-D image"));
        let mut bad = bytes.clone();
        bad[BLOCK + CARD..BLOCK + 2 * CARD].copy_from_slice(format!("{:<80}", "BITPIX  = 7").as_bytes());
        assert!(error_of(read_image_bytes(path, &bad)).contains("mef.fits: HDU 1: BITPIX 7 is not valid FITS"));
    }

    #[test]
    fn hdus_are_named_by_index_or_extname() {
        assert_eq!("0".parse::<Hdu>(), Ok(Hdu::Index(0)));
        assert_eq!(" 12 ".parse::<Hdu>(), Ok(Hdu::Index(12)));
        assert_eq!("SCI".parse::<Hdu>(), Ok(Hdu::Name("SCI".into())));
        assert_eq!("-1".parse::<Hdu>(), Ok(Hdu::Name("-1".into())), "a name: no EXTNAME matches it");
        assert!("".parse::<Hdu>().unwrap_err().contains("its index (0 is the primary HDU) or its EXTNAME"));
        assert!("99999999999999999999999".parse::<Hdu>().unwrap_err().contains("past any file's"));
        assert_eq!(Hdu::Name("SCI".into()).to_string(), "'SCI'");
    }

    #[test]
    fn gzipped_files_are_read_by_their_first_bytes() {
        let dir = scratch("fits", "gzip");
        let pixels = [1.0f32, -2.5, f32::NAN, 0.25];
        let gz = dir.join("sky.fits.gz");
        write_image(&gz, 2, 2, &pixels).unwrap();
        let bytes = std::fs::read(&gz).unwrap();
        assert!(bytes.starts_with(&GZIP), "written gzipped by its name");
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&read_image(&gz).unwrap().pixels), bits(&pixels));
        // By content, whatever the name; the extensions of a gzipped file are read too.
        std::fs::write(dir.join("plain-name.fits"), &bytes).unwrap();
        assert_eq!(read_image(&dir.join("plain-name.fits")).unwrap().width, 2);
        let mut gzip = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gzip.write_all(&extensions()).unwrap();
        let mef = gzip.finish().unwrap();
        let ext = read_image_hdu_bytes(Path::new("m.fits.gz"), &mef, Some(&Hdu::Index(4))).unwrap();
        assert_eq!(ext.pixels, vec![0.5, -1.0]);

        let cut = error_of(read_image_bytes(Path::new("cut.fits.gz"), &mef[..mef.len() / 2]));
        assert!(cut.contains("cut.fits.gz: is gzip-compressed, but cannot be decompressed"), "{}", cut);
        let mut text = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        text.write_all(b"hello").unwrap();
        let text = error_of(read_image_bytes(Path::new("t.gz"), &text.finish().unwrap()));
        assert!(text.contains("is gzip-compressed, but what it holds is not a FITS file"), "{}", text);
        assert!(error_of(read_image_bytes(Path::new("b.bz2"), b"BZh91AY")).contains("compressed with bzip2 or zip"));
        let fz = error_of(write_image(&dir.join("out.fz"), 2, 2, &pixels));
        assert!(fz.contains("out.fz: cannot write: tile-compressed FITS (.fz) is read, not written"), "{}", fz);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
