//! The catalog: a [`Row`] per source, with its sky position where the image has a celestial
//! WCS ([`crate::wcs`]), written from the same rows as CSV, as a VOTable 1.4 (what astropy
//! and TOPCAT read) and as a ds9 region file; and the run's settings and sources as JSON.
//!
//! A row holds what a fitted source will have (position, peak, integrated flux and shape,
//! each with its error; the local noise; its island and component; flags), and what the
//! lesson's islands have today: centroid, brightest pixel, summed flux, pixel count and
//! bounding box, with the noise σ they were detected against. What a row lacks is absent in
//! every format (an empty CSV field or table cell, no ellipse), never made up.
//!
//! The VOTable is written here, not with the crate `votable` 0.7: it does not build against
//! the workspace's serde 1.0.229 (it uses serde's private `__private228` module, so it builds
//! only with the serde release of that name), and a table of numbers needs no more than
//! escaped text.

use super::measure::Source;
use crate::io::{file_error, write_text};
use crate::wcs::{Coordinates, Frame};
use cuda_kernels::fit::Flags;
use cuda_kernels::gpu::GpuResult;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::value::RawValue;
use std::fmt::Write;
use std::path::Path;

/// The CSV's first columns, the lesson's measures of each island, in the order they have
/// always had; the sky, shape, flux and flag columns follow.
pub const HEADER: &str = "label,y,x,flux,peak,pixels,y_min,y_max,x_min,x_max";

/// A flag: the source lies where the projection has no sky (its sky columns are empty).
pub const OFF_SKY: u32 = 1;

/// The flags a fit raises take the bits above [`OFF_SKY`], in their order
/// (`cuda_kernels::fit::Flags`, each shifted one bit up): 2 not converged, 4 at the image's
/// edge, 8 NaN pixels left out, 16 more summits than components, 32 singular (no errors), 64 too
/// few pixels to fit (the summit's place and value only), 128 no summit above the seed, 256 a
/// bad island.
pub fn fit_flags(flags: Flags) -> u32 {
    flags.0 << 1
}

/// A value and its 1σ error, where known.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measured {
    pub value: f64,
    pub error: Option<f64>,
}

impl Measured {
    /// A value whose error is not known.
    pub fn bare(value: f64) -> Measured {
        Measured { value, error: None }
    }
}

/// An elliptical shape in pixels: the major and minor axes' full widths at half maximum, and
/// the major axis's angle in degrees from +x towards +y (NaN where a fit that ran away lost it:
/// `interface::fit::LOST_ANGLE`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Shape {
    pub major: Measured,
    pub minor: Measured,
    pub angle: Measured,
}

/// What the lesson measures of an island: its pixels, their sum and its bounding box
/// (inclusive, 0-based rows and columns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Island {
    pub pixels: usize,
    /// The sum of its pixels: the image's unit times pixels.
    pub sum: f64,
    pub y_min: usize,
    pub y_max: usize,
    pub x_min: usize,
    pub x_max: usize,
}

/// A source of the catalog.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Its island's label.
    pub island: u32,
    /// Its number within the island, from 0.
    pub component: u32,
    /// Its position in pixels, 0-based as the image's rows and columns (FITS pixel x + 1).
    pub x: Measured,
    pub y: Measured,
    /// The peak, in the image's unit (Jy/beam for a radio image).
    pub peak: Option<Measured>,
    /// The integrated flux, in Jy for an image in Jy/beam (integrated through the beam), or
    /// the image's unit times pixels where the beam is not known ([`Catalog::in_pixel_sums`]).
    pub integrated: Option<Measured>,
    /// The noise σ at the source, in the image's unit.
    pub rms: Option<f64>,
    pub shape: Option<Shape>,
    /// Its island's measures, where it has them.
    pub measures: Option<Island>,
    /// [`OFF_SKY`] and whatever the steps that found it raise.
    pub flags: u32,
}

impl Row {
    /// An island of the lesson's pipeline: one source at its centroid, its brightest pixel as
    /// the peak; `noise` the σ it was detected against, where known.
    pub fn of_island(source: &Source, noise: Option<f64>) -> Row {
        Row {
            island: source.label,
            component: 0,
            x: Measured::bare(source.x),
            y: Measured::bare(source.y),
            peak: Some(Measured::bare(source.peak)),
            integrated: None,
            rms: noise,
            shape: None,
            measures: Some(Island {
                pixels: source.pixels,
                sum: source.flux,
                y_min: source.y_min,
                y_max: source.y_max,
                x_min: source.x_min,
                x_max: source.x_max,
            }),
            flags: 0,
        }
    }

    /// Peak over noise.
    pub fn snr(&self) -> Option<f64> {
        Some(self.peak?.value / self.rms?)
    }
}

/// The rows of the lesson's islands, detected against noise σ `noise`.
pub fn rows(sources: &[Source], noise: f64) -> Vec<Row> {
    sources.iter().map(|s| Row::of_island(s, Some(noise))).collect()
}

/// A row's position and shape on the sky.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OnSky {
    /// Longitude and latitude, degrees.
    pub lon: f64,
    pub lat: f64,
    /// Position errors east–west (σ_lon·cos lat) and north–south, degrees on the sky.
    pub lon_error: Option<f64>,
    pub lat_error: Option<f64>,
    /// Axes in arcseconds (full width at half maximum), position angle in degrees east of north.
    pub shape: Option<Shape>,
}

/// The rows of one image, with their sky positions where its WCS gives them.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    /// The image, as the catalogs name it.
    pub image: String,
    pub coordinates: Coordinates,
    /// The image's unit (BUNIT), where its header has one.
    pub unit: Option<String>,
    pub rows: Vec<Row>,
    /// Each row's place on the sky: empty without a WCS, `None` for a row off the projection.
    pub sky: Vec<Option<OnSky>>,
    /// Whether integrated fluxes are through the beam (Jy for an image in Jy/beam); else they
    /// are sums of pixels, the image's unit times pixels.
    pub through_beam: bool,
}

impl Catalog {
    /// The catalog of `rows` in `image`: each row's sky position, errors and shape through
    /// `coordinates`, and [`OFF_SKY`] raised for a row it has no sky for.
    pub fn new(image: &str, coordinates: Coordinates, unit: Option<&str>, mut rows: Vec<Row>) -> Catalog {
        let sky = match &coordinates {
            Coordinates::Pixels(_) => Vec::new(),
            // Row by row in parallel: each row's place, errors and shape take a dozen
            // projections, and a survey image's catalog holds tens of thousands of rows.
            Coordinates::Sky(wcs) => rows
                .par_iter_mut()
                .map(|row| {
                    let (x, y) = (row.x.value, row.y.value);
                    let Some((lon, lat)) = wcs.pixel_to_sky(x, y) else {
                        row.flags |= OFF_SKY;
                        return None;
                    };
                    let errors = match (row.x.error, row.y.error) {
                        (Some(sx), Some(sy)) => wcs.position_error(x, y, sx, sy),
                        _ => None,
                    };
                    let shape = row.shape.and_then(|s| {
                        let (major, minor, pa) = if s.angle.value.is_nan() {
                            // No angle to turn the axes by: each scales as the pixel does.
                            let scale = wcs.pixel_scale(x, y)?;
                            (s.major.value * scale, s.minor.value * scale, f64::NAN)
                        } else {
                            wcs.ellipse_to_sky(x, y, s.major.value, s.minor.value, s.angle.value)?
                        };
                        // An axis's error scales as the axis; the angle's stays (as for a conformal map).
                        let scaled = |m: Measured, arcsec: f64| Measured {
                            value: arcsec,
                            error: m.error.map(|e| e * arcsec / m.value),
                        };
                        Some(Shape {
                            major: scaled(s.major, major),
                            minor: scaled(s.minor, minor),
                            angle: Measured { value: pa, error: s.angle.error },
                        })
                    });
                    Some(OnSky { lon, lat, lon_error: errors.map(|e| e.0), lat_error: errors.map(|e| e.1), shape })
                })
                .collect(),
        };
        Catalog { image: image.to_string(), coordinates, unit: unit.map(str::to_string), rows, sky, through_beam: true }
    }

    /// The same catalog, its integrated fluxes sums of pixels (no beam to integrate through).
    pub fn in_pixel_sums(self) -> Catalog {
        Catalog { through_beam: false, ..self }
    }

    /// The sky frame, when there is one.
    pub fn frame(&self) -> Option<Frame> {
        match &self.coordinates {
            Coordinates::Sky(wcs) => Some(wcs.frame()),
            Coordinates::Pixels(_) => None,
        }
    }

    /// Each row with its sky place (`None` without one).
    fn entries(&self) -> impl Iterator<Item = (&Row, Option<&OnSky>)> {
        self.rows.iter().enumerate().map(|(i, row)| (row, self.sky.get(i).and_then(Option::as_ref)))
    }

    /// As CSV: a header, then a line per row; an absent value is an empty field. Numbers are
    /// written in full: the shortest text that reads back to the same f64 (`zmij`'s, as
    /// serde_json writes them: a real keeps its point, and takes an exponent below 1e-5 or
    /// from 1e16). The rows are formatted in parallel, a few hundred to a thread: a survey
    /// image's catalog holds tens of thousands.
    pub fn csv(&self) -> String {
        let columns = columns(self.frame(), self.unit.as_deref(), self.through_beam);
        let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
        let entries: Vec<(&Row, Option<&OnSky>)> = self.entries().collect();
        let pieces: Vec<String> = entries
            .par_chunks(ROWS_A_PIECE)
            .map(|rows| {
                let mut piece = String::with_capacity(rows.len() * columns.len() * 20);
                let mut numbers = Numbers::default();
                for &(row, sky) in rows {
                    for (i, column) in columns.iter().enumerate() {
                        if i > 0 {
                            piece.push(',');
                        }
                        if let Some(value) = (column.get)(row, sky) {
                            piece += numbers.text(value);
                        }
                    }
                    piece.push('\n');
                }
                piece
            })
            .collect();
        let mut text = names.join(",") + "\n";
        text.extend(pieces);
        text
    }

    /// As a VOTable 1.4 document: one table, a FIELD per column with its unit, UCD and
    /// description, the sky columns referring to a COOSYS, the rows as TABLEDATA.
    pub fn votable(&self) -> String {
        let columns = columns(self.frame(), self.unit.as_deref(), self.through_beam);
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        // VOTable 1.4 keeps 1.3's namespace; its schema has a name of its own.
        let namespace = "http://www.ivoa.net/xml/VOTable/v1.3";
        let _ = writeln!(
            xml,
            "<VOTABLE version=\"1.4\" xmlns=\"{0}\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
             xsi:schemaLocation=\"{0} http://www.ivoa.net/xml/VOTable/VOTable-1.4.xsd\">",
            namespace
        );
        xml += "  <RESOURCE name=\"sources\" type=\"results\">\n";
        let _ = writeln!(xml, "    <DESCRIPTION>Sources found in {}</DESCRIPTION>", escape(&self.image));
        let _ = writeln!(xml, "    <INFO name=\"coordinates\" value=\"{}\"/>", escape(&self.coordinates.describe()));
        if let Some(frame) = self.frame() {
            let (system, equinox) = match frame {
                Frame::Icrs => ("ICRS", None),
                Frame::Fk5 { equinox } => ("eq_FK5", Some(format!("J{}", equinox))),
                Frame::Fk4 { equinox } => ("eq_FK4", Some(format!("B{}", equinox))),
                Frame::Galactic => ("galactic", None),
            };
            let equinox = equinox.map(|e| format!(" equinox=\"{}\"", e)).unwrap_or_default();
            let _ = writeln!(xml, "    <COOSYS ID=\"{}\" system=\"{}\"{}/>", COOSYS, system, equinox);
        }
        let _ = writeln!(xml, "    <TABLE name=\"sources\" nrows=\"{}\">", self.rows.len());
        for c in &columns {
            let unit = c.unit.as_ref().map(|u| format!(" unit=\"{}\"", escape(u))).unwrap_or_default();
            let reference = if c.sky_position { format!(" ref=\"{}\"", COOSYS) } else { String::new() };
            let _ = writeln!(
                xml,
                "      <FIELD name=\"{}\" datatype=\"{}\"{} ucd=\"{}\"{}><DESCRIPTION>{}</DESCRIPTION></FIELD>",
                c.name,
                c.kind.datatype(),
                unit,
                c.ucd,
                reference,
                escape(&c.description)
            );
        }
        xml += "      <DATA><TABLEDATA>\n";
        let mut numbers = Numbers::default();
        for (row, sky) in self.entries() {
            xml += "        <TR>";
            for c in &columns {
                match (c.get)(row, sky) {
                    Some(v) => {
                        xml += "<TD>";
                        xml += numbers.text(v);
                        xml += "</TD>";
                    }
                    None => xml += "<TD/>",
                }
            }
            xml += "</TR>\n";
        }
        xml += "      </TABLEDATA></DATA>\n    </TABLE>\n  </RESOURCE>\n</VOTABLE>\n";
        xml
    }

    /// As a ds9 region file: with a WCS, in its frame (fk5, fk4, icrs, galactic), ellipses of
    /// half the axes' FWHM where a row has a shape and circles otherwise, in arcseconds; without
    /// one (or in a frame ds9 lacks, an equinox other than J2000 or B1950), the same in image
    /// coordinates (1-based, as ds9 counts pixels). A circle's radius is
    /// half its island's bounding box's larger side; a row with neither is a point. Each is
    /// labelled with its island. A row with no sky position is left out, with a comment.
    pub fn regions(&self) -> String {
        let mut text = String::from("# Region file format: DS9 version 4.1\n");
        // ds9 (and astropy's regions) split lines at `;`, comments included.
        let comment = format!("{} sources in {} ({})", self.rows.len(), self.image, self.coordinates.describe());
        let _ = writeln!(text, "# {}", comment.replace(|c: char| c == ';' || c.is_control(), " "));
        text += "global color=green width=1 font=\"helvetica 10 normal roman\"\n";
        let wcs = match &self.coordinates {
            Coordinates::Sky(wcs) if wcs.frame().ds9().is_none() => {
                let _ = writeln!(text, "# ds9 has no {} frame: image coordinates", wcs.frame());
                None
            }
            Coordinates::Sky(wcs) => Some(wcs),
            Coordinates::Pixels(_) => None,
        };
        text += wcs.and_then(|w| w.frame().ds9()).unwrap_or("image");
        text.push('\n');
        for (row, sky) in self.entries() {
            let (x, y) = (row.x.value, row.y.value);
            // The centre; the size unit (″ on the sky) with the pixel's size in it; an ellipse's
            // FWHM axes in that unit and its angle as ds9 measures it.
            let (centre, unit, scale, ellipse) = match (wcs, sky) {
                (Some(wcs), Some(sky)) => (
                    format!("{:.8},{:.8}", sky.lon, sky.lat),
                    "\"",
                    wcs.pixel_scale(x, y),
                    // From the longitude axis, north of east being 90: the position angle plus 90.
                    sky.shape.map(|s| (s.major.value, s.minor.value, s.angle.value + 90.0)),
                ),
                (Some(_), None) => {
                    let _ = writeln!(text, "# island {}: outside the projection, not drawn", row.island);
                    continue;
                }
                // ds9's image pixels are FITS's, from 1; its angle is from +x, as the row's.
                (None, _) => (
                    format!("{:.4},{:.4}", x + 1.0, y + 1.0),
                    "",
                    Some(1.0),
                    row.shape.map(|s| (s.major.value, s.minor.value, s.angle.value)),
                ),
            };
            let radius = row.measures.map(|m| (m.x_max - m.x_min + 1).max(m.y_max - m.y_min + 1) as f64 / 2.0);
            let label = row.island;
            let _ = match (ellipse, radius.zip(scale)) {
                // An ellipse whose angle is lost: the circle of its major axis.
                (Some((major, _, angle)), _) if angle.is_nan() => {
                    writeln!(text, "circle({},{:.4}{}) # text={{{}}}", centre, major / 2.0, unit, label)
                }
                (Some((major, minor, angle)), _) => writeln!(
                    text,
                    "ellipse({},{:.4}{u},{:.4}{u},{:.4}) # text={{{}}}",
                    centre,
                    major / 2.0,
                    minor / 2.0,
                    angle,
                    label,
                    u = unit
                ),
                (None, Some((r, scale))) => {
                    writeln!(text, "circle({},{:.4}{}) # text={{{}}}", centre, r * scale, unit, label)
                }
                (None, None) => writeln!(text, "point({}) # point=x text={{{}}}", centre, label),
            };
        }
        text
    }

    pub fn write_csv(&self, path: &Path) -> GpuResult<()> {
        write_text(path, &self.csv())
    }

    pub fn write_votable(&self, path: &Path) -> GpuResult<()> {
        write_text(path, &self.votable())
    }

    pub fn write_regions(&self, path: &Path) -> GpuResult<()> {
        write_text(path, &self.regions())
    }
}

/// The id of the VOTable's COOSYS, which the position columns refer to.
const COOSYS: &str = "sky";

/// A cell's value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Cell {
    Integer(i64),
    Real(f64),
}

/// Rows of the CSV or JSON a thread writes at a time: a row is some 35 numbers, and a piece of
/// a few hundred rows is worth handing to a thread (a thread a row costs more than it saves).
const ROWS_A_PIECE: usize = 256;

/// The text of cells: integers by `itoa`, reals by `zmij` (NaN and ±∞ as Rust writes them):
/// through `std::fmt`, formatting the rows was most of the catalog's time.
#[derive(Default)]
struct Numbers {
    integer: itoa::Buffer,
    real: zmij::Buffer,
}

impl Numbers {
    fn text(&mut self, cell: Cell) -> &str {
        match cell {
            Cell::Integer(v) => self.integer.format(v),
            Cell::Real(v) => self.real.format(v),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Integer,
    Real,
}

impl Kind {
    fn datatype(self) -> &'static str {
        match self {
            Kind::Integer => "long",
            Kind::Real => "double",
        }
    }
}

/// How a column reads a row and its sky place.
type Get = fn(&Row, Option<&OnSky>) -> Option<Cell>;

/// A column of every format: its name, VOTable metadata and how a row fills it.
struct Column {
    name: String,
    kind: Kind,
    unit: Option<String>,
    ucd: &'static str,
    description: String,
    /// Whether it is a sky position, in the COOSYS's frame.
    sky_position: bool,
    get: Get,
}

fn real(value: Option<f64>) -> Option<Cell> {
    value.map(Cell::Real)
}

fn integer(value: Option<impl Into<i64>>) -> Option<Cell> {
    value.map(|v| Cell::Integer(v.into()))
}

/// A count or index of a row as a cell (they are far below i64's range).
fn count(value: Option<usize>) -> Option<Cell> {
    value.map(|v| Cell::Integer(v as i64))
}

/// The BUNIT of a radio image as a VOUnit, where it is one of the usual ones.
fn vo_unit(bunit: &str) -> Option<&'static str> {
    Some(match bunit.trim().to_ascii_lowercase().as_str() {
        "jy/beam" => "Jy/beam",
        "mjy/beam" => "mJy/beam",
        "ujy/beam" => "uJy/beam",
        "jy" => "Jy",
        "k" => "K",
        _ => return None,
    })
}

/// The columns, in order: [`HEADER`]'s, then the component, errors, integrated flux, noise,
/// S/N, shape and flags, then, with a `frame`, the sky's. `bunit` is the image's unit;
/// `through_beam`, whether integrated fluxes are in Jy (else sums of pixels).
fn columns(frame: Option<Frame>, bunit: Option<&str>, through_beam: bool) -> Vec<Column> {
    let unit = bunit.and_then(vo_unit);
    // A unit that is not a VOUnit goes into the description instead.
    let in_unit = |what: &str| match bunit {
        Some(b) if vo_unit(b).is_none() => format!("{}, in the image's unit ({})", what, b),
        _ => what.to_string(),
    };
    let mut columns = Vec::new();
    let mut add = |name: &str, kind, unit: Option<&str>, ucd, description: String, get: Get| {
        let unit = unit.map(str::to_string);
        columns.push(Column { name: name.into(), kind, unit, ucd, description, sky_position: false, get });
    };
    use Kind::{Integer, Real};
    let pix = Some("pix");
    add(
        "label",
        Integer,
        None,
        "meta.id;meta.main",
        "The island's label (its number in the label image)".into(),
        |r, _| integer(Some(r.island)),
    );
    add("y", Real, pix, "pos.cartesian.y", "Row of the position, 0-based (FITS pixel y + 1)".into(), |r, _| {
        real(Some(r.y.value))
    });
    add("x", Real, pix, "pos.cartesian.x", "Column of the position, 0-based (FITS pixel x + 1)".into(), |r, _| {
        real(Some(r.x.value))
    });
    add(
        "flux",
        Real,
        None,
        "phot.flux",
        in_unit("Sum of the island's pixels (the image's unit times pixels)"),
        |r, _| real(r.measures.map(|m| m.sum)),
    );
    add("peak", Real, unit, "phot.flux.density;stat.max", in_unit("Peak"), |r, _| real(r.peak.map(|m| m.value)));
    add("pixels", Integer, pix, "phys.area", "The island's pixels".into(), |r, _| count(r.measures.map(|m| m.pixels)));
    add("y_min", Integer, pix, "pos.cartesian.y;stat.min", "The island's first row".into(), |r, _| {
        count(r.measures.map(|m| m.y_min))
    });
    add("y_max", Integer, pix, "pos.cartesian.y;stat.max", "The island's last row".into(), |r, _| {
        count(r.measures.map(|m| m.y_max))
    });
    add("x_min", Integer, pix, "pos.cartesian.x;stat.min", "The island's first column".into(), |r, _| {
        count(r.measures.map(|m| m.x_min))
    });
    add("x_max", Integer, pix, "pos.cartesian.x;stat.max", "The island's last column".into(), |r, _| {
        count(r.measures.map(|m| m.x_max))
    });
    add("component", Integer, None, "meta.id.part", "The source's number within its island, from 0".into(), |r, _| {
        integer(Some(r.component))
    });
    add("x_err", Real, pix, "stat.error;pos.cartesian.x", "1σ error of x".into(), |r, _| real(r.x.error));
    add("y_err", Real, pix, "stat.error;pos.cartesian.y", "1σ error of y".into(), |r, _| real(r.y.error));
    add("peak_err", Real, unit, "stat.error;phot.flux.density", in_unit("1σ error of the peak"), |r, _| {
        real(r.peak.and_then(|m| m.error))
    });
    let (integrated_unit, integrated) = if through_beam {
        (Some("Jy"), "Integrated flux, through the beam (Jy for an image in Jy/beam)".to_string())
    } else {
        let what = "Integrated flux, the sum of the source's pixels (no beam in the header)";
        (
            None,
            match bunit {
                Some(b) => format!("{}, in the image's unit ({}) times pixels", what, b),
                None => format!("{}, in the image's unit times pixels", what),
            },
        )
    };
    add("integrated", Real, integrated_unit, "phot.flux.density", integrated, |r, _| {
        real(r.integrated.map(|m| m.value))
    });
    add(
        "integrated_err",
        Real,
        integrated_unit,
        "stat.error;phot.flux.density",
        "1σ error of the integrated flux".into(),
        |r, _| real(r.integrated.and_then(|m| m.error)),
    );
    add("rms", Real, unit, "stat.stdev;phot.flux.density", in_unit("Noise σ at the source"), |r, _| real(r.rms));
    add("snr", Real, None, "stat.snr", "Peak over rms".into(), |r, _| real(r.snr()));
    add("major_px", Real, pix, "phys.size.smajAxis", "Major axis, full width at half maximum".into(), |r, _| {
        real(r.shape.map(|s| s.major.value))
    });
    add("major_px_err", Real, pix, "stat.error;phys.size.smajAxis", "1σ error of major_px".into(), |r, _| {
        real(r.shape.and_then(|s| s.major.error))
    });
    add("minor_px", Real, pix, "phys.size.sminAxis", "Minor axis, full width at half maximum".into(), |r, _| {
        real(r.shape.map(|s| s.minor.value))
    });
    add("minor_px_err", Real, pix, "stat.error;phys.size.sminAxis", "1σ error of minor_px".into(), |r, _| {
        real(r.shape.and_then(|s| s.minor.error))
    });
    add("angle_px", Real, Some("deg"), "pos.posAng", "Angle of the major axis from +x towards +y".into(), |r, _| {
        real(r.shape.map(|s| s.angle.value))
    });
    add("angle_px_err", Real, Some("deg"), "stat.error;pos.posAng", "1σ error of angle_px".into(), |r, _| {
        real(r.shape.and_then(|s| s.angle.error))
    });
    add(
        "flags",
        Integer,
        None,
        "meta.code",
        format!(
            "Bits: {} the position is off the projection's sky; the fit's, from 2 up: {}",
            OFF_SKY,
            Flags::NAMED
                .iter()
                .map(|&(flag, name)| format!("{} {}", fit_flags(flag), name))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        |r, _| integer(Some(r.flags)),
    );
    let Some(frame) = frame else { return columns };
    let [lon, lat] = frame.names();
    let (lon_ucd, lat_ucd) = if frame.is_equatorial() {
        ("pos.eq.ra;meta.main", "pos.eq.dec;meta.main")
    } else {
        ("pos.galactic.lon;meta.main", "pos.galactic.lat;meta.main")
    };
    let (lon_error_ucd, lat_error_ucd) = if frame.is_equatorial() {
        ("stat.error;pos.eq.ra", "stat.error;pos.eq.dec")
    } else {
        ("stat.error;pos.galactic.lon", "stat.error;pos.galactic.lat")
    };
    let deg = Some("deg");
    let arcsec = Some("arcsec");
    add(lon, Real, deg, lon_ucd, format!("Longitude ({})", frame), |_, s| real(s.map(|s| s.lon)));
    add(lat, Real, deg, lat_ucd, format!("Latitude ({})", frame), |_, s| real(s.map(|s| s.lat)));
    add(
        &format!("{}_err", lon),
        Real,
        deg,
        lon_error_ucd,
        "1σ error east–west, an angle on the sky (the longitude's error times cos latitude)".into(),
        |_, s| real(s.and_then(|s| s.lon_error)),
    );
    add(&format!("{}_err", lat), Real, deg, lat_error_ucd, "1σ error north–south".into(), |_, s| {
        real(s.and_then(|s| s.lat_error))
    });
    add(
        "major",
        Real,
        arcsec,
        "phys.angSize.smajAxis",
        "Major axis on the sky, full width at half maximum".into(),
        |_, s| real(s.and_then(|s| s.shape).map(|s| s.major.value)),
    );
    add("major_err", Real, arcsec, "stat.error;phys.angSize.smajAxis", "1σ error of major".into(), |_, s| {
        real(s.and_then(|s| s.shape).and_then(|s| s.major.error))
    });
    add(
        "minor",
        Real,
        arcsec,
        "phys.angSize.sminAxis",
        "Minor axis on the sky, full width at half maximum".into(),
        |_, s| real(s.and_then(|s| s.shape).map(|s| s.minor.value)),
    );
    add("minor_err", Real, arcsec, "stat.error;phys.angSize.sminAxis", "1σ error of minor".into(), |_, s| {
        real(s.and_then(|s| s.shape).and_then(|s| s.minor.error))
    });
    add("pa", Real, deg, "pos.posAng", "Position angle of the major axis, east of north".into(), |_, s| {
        real(s.and_then(|s| s.shape).map(|s| s.angle.value))
    });
    add("pa_err", Real, deg, "stat.error;pos.posAng", "1σ error of pa".into(), |_, s| {
        real(s.and_then(|s| s.shape).and_then(|s| s.angle.error))
    });
    for column in &mut columns {
        column.sky_position = column.name == lon || column.name == lat;
    }
    columns
}

/// `text` for XML: the five characters with a meaning there escaped.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped += "&amp;",
            '<' => escaped += "&lt;",
            '>' => escaped += "&gt;",
            '"' => escaped += "&quot;",
            '\'' => escaped += "&apos;",
            c => escaped.push(c),
        }
    }
    escaped
}

/// Writes `sources` as a CSV catalog in pixels: what a caller with only the sources has (no
/// header for a WCS, no noise).
pub fn write_csv(path: &Path, sources: &[Source]) -> GpuResult<()> {
    let rows = sources.iter().map(|s| Row::of_island(s, None)).collect();
    Catalog::new("", Coordinates::Pixels("no image header".into()), None, rows).write_csv(path)
}

/// An item of a JSON catalog's list, already written ([`json_items`]).
pub type JsonItem = Box<RawValue>;

/// `items` (a catalog's sources) written as JSON each on its own, in parallel, for a document
/// that [`write_json`] writes (`path` names its file in errors): each is then a line of it. A
/// survey image's catalog holds tens of thousands of sources, and written in one piece by the
/// pretty printer they took most of the catalog's time.
pub fn json_items<T: Serialize + Sync>(path: &Path, items: &[T]) -> GpuResult<Vec<JsonItem>> {
    items
        .par_chunks(ROWS_A_PIECE)
        .flat_map_iter(|piece| piece.iter().map(serde_json::value::to_raw_value))
        .collect::<Result<_, _>>()
        .map_err(|e| file_error(path, format!("cannot write: {}", e)))
}

/// Writes `catalog` (anything serializable, its sources as [`json_items`]) as pretty-printed
/// JSON.
pub fn write_json(path: &Path, catalog: &impl Serialize) -> GpuResult<()> {
    let mut text =
        serde_json::to_string_pretty(catalog).map_err(|e| file_error(path, format!("cannot write: {}", e)))?;
    text.push('\n');
    write_text(path, &text)
}

/// Writes the label image as SciPy returns it: a 2-D int32 array, `height` rows of `width`.
pub fn write_labels(path: &Path, width: usize, height: usize, labels: &[u32]) -> GpuResult<()> {
    let labels: Vec<i32> = labels
        .iter()
        .map(|&l| i32::try_from(l))
        .collect::<Result<_, _>>()
        .map_err(|_| file_error(path, "more labels than an int32 array can hold"))?;
    crate::io::write_matrix(path, (height, width), &labels)
}
