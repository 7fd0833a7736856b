//! Sky coordinates from a FITS header's celestial WCS, as Greisen & Calabretta (2002, "paper
//! I") and Calabretta & Greisen (2002, "paper II") define them and wcslib (through astropy.wcs)
//! computes them.
//!
//! Read: CTYPEi naming the longitude and latitude (`RA---`/`DEC--`, or `GLON`/`GLAT`, in either
//! axis order), CRPIXi, CRVALi, CUNITi (any angle: deg, arcmin, arcsec, mas, rad), then the
//! linear part as wcslib ranks it: PCi_j with CDELTi, else CDi_j, else CDELTi with CROTAi of
//! the latitude axis; LONPOLE and LATPOLE with paper II's defaults; RADESYS and EQUINOX (or
//! EPOCH) for the frame. Projections: SIN (with its PVi_1, PVi_2 slant, and NCP as SIN with
//! slant cot δ₀, as wcslib's celfix turns it), TAN, ARC, ZEA, STG and CAR. Only the first two
//! axes are read: the image is 2-D, and longer headers' other axes have length 1. Pixels are
//! 0-based, as the sources are: pixel (x, y) is FITS pixel (x + 1, y + 1). Errors and shapes
//! go to the sky through the local Jacobian, by central differences.
//!
//! What has no sky position gets [`Coordinates::Pixels`] with a one-line note, never an
//! error: a header without celestial axes, or with one only (a position-velocity slice), a
//! celestial type other than equatorial or galactic, a CTYPE without a projection (`RA`), a
//! projection not listed above, a distortion (`-SIP` and other suffixes, PVi_m on the
//! longitude axis), RADESYS FK4-NO-E or GAPPT. A header whose celestial WCS is broken is an
//! error naming the keyword: a value that is not a number, axes that do not pair, a unit that
//! is not an angle, a singular matrix, a latitude beyond ±90°, a LONPOLE with no celestial pole.
//!
//! Not the crates `wcs` 0.4 and `mapproj` 0.4 (CDS Strasbourg), after trying `wcs` 0.4.2
//! against astropy.wcs: it agreed on equatorial SIN, TAN and CAR with RA first, but it takes
//! the longitude from axis 1 whatever CTYPE1 says (a `DEC--`-first image came out 59° off in
//! RA), returns galactic images in ICRS rather than GLON/GLAT, ignores CUNITi, defaults a
//! missing CDi_j on the diagonal to 1 where the standard (and wcslib) has 0, and panics on a
//! CTYPE1 shorter than 8 characters (it slices `[5..=7]`). `mapproj` alone has the projections
//! in a frame of its own (the fiducial point on the x axis), so the rotation from paper II's
//! native frame, the part that LONPOLE and LATPOLE set, would still be written here, and each
//! projection needed is one line of paper II.

use crate::fits::{Header, Value};

/// Degrees in a radian: paper II's r₀, the radius of the projections' generating sphere.
const R0: f64 = 180.0 / std::f64::consts::PI;
/// wcslib's tolerance on the celestial pole's latitude (degrees).
const TOLERANCE: f64 = 1e-10;
/// Step of the central differences that give the local Jacobian, in pixels: the projection's
/// curvature across it moves a derivative by about 1e-6 at 1° a pixel, and f64 rounding of
/// the positions stays under 1e-7 of the offsets at 0.1″ a pixel.
const STEP: f64 = 0.1;

/// The celestial reference frame of the sky coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Frame {
    Icrs,
    /// FK5 at an equinox (Julian years), J2000 by default.
    Fk5 {
        equinox: f64,
    },
    /// FK4 at an equinox (Besselian years), B1950 by default.
    Fk4 {
        equinox: f64,
    },
    Galactic,
}

impl Frame {
    /// The catalogs' names of the longitude and the latitude.
    pub fn names(&self) -> [&'static str; 2] {
        match self {
            Frame::Galactic => ["glon", "glat"],
            _ => ["ra", "dec"],
        }
    }

    /// True for RA and Dec.
    pub fn is_equatorial(&self) -> bool {
        !matches!(self, Frame::Galactic)
    }

    /// The frame as a ds9 region file names it: ds9's fk5 is J2000 and its fk4 B1950, so an
    /// equinox other than those has none.
    pub fn ds9(&self) -> Option<&'static str> {
        match self {
            Frame::Icrs => Some("icrs"),
            Frame::Fk5 { equinox } if *equinox == 2000.0 => Some("fk5"),
            Frame::Fk4 { equinox } if *equinox == 1950.0 => Some("fk4"),
            Frame::Fk5 { .. } | Frame::Fk4 { .. } => None,
            Frame::Galactic => Some("galactic"),
        }
    }
}

impl std::fmt::Display for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Frame::Icrs => write!(f, "ICRS"),
            Frame::Fk5 { equinox } => write!(f, "FK5 J{}", equinox),
            Frame::Fk4 { equinox } => write!(f, "FK4 B{}", equinox),
            Frame::Galactic => write!(f, "galactic"),
        }
    }
}

/// A projection of paper II, from the plane (x, y, degrees) to native spherical coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Projection {
    /// Orthographic, with paper II's slant (ξ, η): zero for plain SIN.
    Sin {
        xi: f64,
        eta: f64,
    },
    Tan,
    Arc,
    Zea,
    Stg,
    Car,
}

/// A native position (φ, θ), as the sines and cosines that the rotation needs.
#[derive(Debug, Clone, Copy)]
struct Native {
    sin_phi: f64,
    cos_phi: f64,
    sin_theta: f64,
    cos_theta: f64,
}

impl Native {
    fn of_angles(phi: f64, theta: f64) -> Native {
        let ((sin_phi, cos_phi), (sin_theta, cos_theta)) = (sin_cos_deg(phi), sin_cos_deg(theta));
        Native { sin_phi, cos_phi, sin_theta, cos_theta }
    }

    /// A zenithal projection's point at radius `r` (degrees) in the plane: φ = arg(−y, x)
    /// (0 at the pole, as wcslib), θ from its sine and cosine.
    fn zenithal(x: f64, y: f64, r: f64, sin_theta: f64, cos_theta: f64) -> Native {
        let (sin_phi, cos_phi) = if r == 0.0 { (0.0, 1.0) } else { (x / r, -y / r) };
        Native { sin_phi, cos_phi, sin_theta, cos_theta }
    }
}

impl Projection {
    /// Native latitude θ₀ of the fiducial point (its longitude φ₀ is 0 for all of these).
    fn theta0(self) -> f64 {
        match self {
            Projection::Car => 0.0,
            _ => 90.0,
        }
    }

    /// The native position of plane point (x, y) in degrees; `None` outside the projection.
    fn native(self, x: f64, y: f64) -> Option<Native> {
        let r = x.hypot(y);
        let zenithal = |sin_theta: f64, cos_theta: f64| Some(Native::zenithal(x, y, r, sin_theta, cos_theta));
        match self {
            Projection::Sin { xi, eta } if xi == 0.0 && eta == 0.0 => {
                // R = r₀ cos θ.
                let c = r / R0;
                (c <= 1.0).then(|| Native::zenithal(x, y, r, ((1.0 - c) * (1.0 + c)).sqrt(), c))
            }
            Projection::Sin { xi, eta } => slant_sin(x / R0, y / R0, xi, eta),
            // R = r₀ cot θ.
            Projection::Tan => {
                let h = R0.hypot(r);
                zenithal(R0 / h, r / h)
            }
            // R = 90° − θ.
            Projection::Arc => (r <= 180.0).then(|| {
                let (sin_r, cos_r) = sin_cos_deg(r);
                Native::zenithal(x, y, r, cos_r, sin_r)
            }),
            // R = 2 r₀ sin((90° − θ)/2): with s that sine, sin θ = 1 − 2s², cos θ = 2s√(1 − s²).
            Projection::Zea => {
                let s = r / (2.0 * R0);
                (s <= 1.0)
                    .then(|| Native::zenithal(x, y, r, 1.0 - 2.0 * s * s, 2.0 * s * ((1.0 - s) * (1.0 + s)).sqrt()))
            }
            // R = 2 r₀ tan((90° − θ)/2): with t that tangent, sin θ = (1 − t²)/(1 + t²) and
            // cos θ = 2t/(1 + t²).
            Projection::Stg => {
                let t = r / (2.0 * R0);
                zenithal((1.0 - t * t) / (1.0 + t * t), 2.0 * t / (1.0 + t * t))
            }
            // φ = x, θ = y.
            Projection::Car => (y.abs() <= 90.0).then(|| Native::of_angles(x, y)),
        }
    }
}

/// SIN with slant (ξ, η), plane point (x, y) in units of r₀, as wcslib's sinx2s: sin θ is the
/// root of a quadratic nearer the pole.
fn slant_sin(x: f64, y: f64, xi: f64, eta: f64) -> Option<Native> {
    let r2 = x * x + y * y;
    let xy = x * xi + y * eta;
    let (theta, z) = if r2 < 1e-10 {
        // Small-angle form, where the quadratic loses precision.
        (90.0 - R0 * (r2 / (1.0 + xy)).sqrt(), r2 / 2.0)
    } else {
        let w1 = xi * xi + eta * eta;
        let (a, b, c) = (w1 + 1.0, xy - w1, r2 - xy - xy + w1 - 1.0);
        let d = b * b - a * c;
        if d < 0.0 {
            return None;
        }
        let d = d.sqrt();
        let (s1, s2) = ((-b + d) / a, (-b - d) / a);
        let mut sin_theta = s1.max(s2);
        if sin_theta > 1.0 {
            sin_theta = if sin_theta - 1.0 < TOLERANCE { 1.0 } else { s1.min(s2) };
        }
        if sin_theta < -1.0 && sin_theta + 1.0 > -TOLERANCE {
            sin_theta = -1.0;
        }
        if !(-1.0..=1.0).contains(&sin_theta) {
            return None;
        }
        (R0 * sin_theta.asin(), 1.0 - sin_theta)
    };
    let (x1, y1) = (-y + eta * z, x - xi * z);
    let phi = if x1 == 0.0 && y1 == 0.0 { 0.0 } else { R0 * y1.atan2(x1) };
    Some(Native::of_angles(phi, theta))
}

/// sin and cos of an angle in degrees, exact at multiples of 90° (as wcslib's sincosd), so
/// that a reference point maps exactly onto its CRVAL.
fn sin_cos_deg(degrees: f64) -> (f64, f64) {
    if degrees % 90.0 == 0.0 {
        match (degrees / 90.0).rem_euclid(4.0) as u8 {
            0 => (0.0, 1.0),
            1 => (1.0, 0.0),
            2 => (0.0, -1.0),
            _ => (-1.0, 0.0),
        }
    } else {
        (degrees / R0).sin_cos()
    }
}

/// Where positions come from: a celestial WCS, or pixels and why.
#[derive(Debug, Clone, PartialEq)]
pub enum Coordinates {
    Sky(Wcs),
    /// No sky position: the one-line reason, for the user and the catalogs.
    Pixels(String),
}

impl Coordinates {
    /// The coordinates `header` describes: its celestial WCS, or pixels with the reason when it
    /// has none that is read here; an error (naming the keyword) when its WCS is broken.
    pub fn from_header(header: &Header) -> Result<Coordinates, String> {
        Wcs::from_header(header)
    }

    /// One line for the user: the frame and projection, or why positions are in pixels.
    pub fn describe(&self) -> String {
        match self {
            Coordinates::Sky(wcs) => format!("{}, {} projection", wcs.frame, wcs.code),
            Coordinates::Pixels(note) => format!("positions in pixels: {}", note),
        }
    }
}

/// One axis of CTYPE1 and CTYPE2.
#[derive(Debug, Clone, PartialEq)]
enum Axis {
    /// Not celestial (absent, FREQ, STOKES, …): its card, for the note.
    Other(String),
    Celestial(Celestial),
}

/// A celestial CTYPE, `RA---SIN` or `GLAT-CAR-SIP`: a type of up to 4 characters padded with
/// `-`, a `-`, a projection code, and any suffix.
#[derive(Debug, Clone, PartialEq)]
struct Celestial {
    /// `RA`, `DEC`, `GLON`, …
    kind: String,
    projection: String,
    suffix: String,
    /// Its card, for messages: `CTYPE1 = 'RA---SIN'`.
    card: String,
}

/// The longitude types read, each with its latitude.
const PAIRS: [(&str, &str); 2] = [("RA", "DEC"), ("GLON", "GLAT")];
/// The projections read.
const PROJECTIONS: [&str; 7] = ["SIN", "NCP", "TAN", "ARC", "ZEA", "STG", "CAR"];

impl Axis {
    fn parse(header: &Header, keyword: &str) -> Result<Axis, String> {
        let text = match text_value(header, keyword)? {
            None => return Ok(Axis::Other(format!("{} absent", keyword))),
            Some(text) => text,
        };
        let kind = text.get(..4.min(text.len())).unwrap_or_default().trim_end_matches('-').to_string();
        let celestial = PAIRS.iter().any(|(lon, lat)| kind == *lon || kind == *lat)
            || kind.ends_with("LON")
            || kind.ends_with("LAT")
            || kind.ends_with("LN")
            || kind.ends_with("LT");
        if !celestial || kind.is_empty() {
            return Ok(Axis::Other(format!("{} = '{}'", keyword, text)));
        }
        let projection = text.get(5..8).unwrap_or_default().trim_end_matches(['-', ' ']).to_string();
        let suffix = text.get(8..).unwrap_or_default().to_string();
        Ok(Axis::Celestial(Celestial { kind, projection, suffix, card: format!("{} = '{}'", keyword, text) }))
    }
}

/// A string keyword's value, `None` when absent.
fn text_value(header: &Header, keyword: &str) -> Result<Option<String>, String> {
    match header.value(keyword) {
        None => Ok(None),
        Some(Value::Text(text)) => Ok(Some(text.trim().to_string())),
        Some(other) => Err(format!("{} = {} is not a string", keyword, other)),
    }
}

/// Degrees in one `unit` of CUNITi; an error for a unit that is not an angle.
fn degrees_per(unit: &str, keyword: &str) -> Result<f64, String> {
    match unit.to_ascii_lowercase().as_str() {
        "" | "deg" | "degree" | "degrees" => Ok(1.0),
        "arcmin" => Ok(1.0 / 60.0),
        "arcsec" => Ok(1.0 / 3600.0),
        "mas" => Ok(1.0 / 3_600_000.0),
        "rad" => Ok(R0),
        _ => Err(format!("{} = '{}' is not an angle (deg, arcmin, arcsec, mas or rad)", keyword, unit)),
    }
}

/// A celestial WCS: FITS pixel → intermediate coordinates (linear) → native sphere
/// (projection) → celestial sphere (rotation).
#[derive(Debug, Clone, PartialEq)]
pub struct Wcs {
    frame: Frame,
    /// The projection's code as CTYPE gives it (NCP stays NCP here).
    code: String,
    projection: Projection,
    /// CRPIX1, CRPIX2: the reference pixel, 1-based as FITS counts.
    crpix: [f64; 2],
    /// Degrees of (longitude, latitude) in the plane per pixel along axes 1 and 2.
    matrix: [[f64; 2]; 2],
    /// Celestial longitude and latitude of the native pole (α_p, δ_p), and the native
    /// longitude of the celestial pole (φ_p, LONPOLE), degrees: paper II's Euler angles.
    alpha_p: f64,
    delta_p: f64,
    phi_p: f64,
}

impl Wcs {
    fn from_header(header: &Header) -> Result<Coordinates, String> {
        let pixels = |note: String| Ok(Coordinates::Pixels(note));
        let (first, second) = match (Axis::parse(header, "CTYPE1")?, Axis::parse(header, "CTYPE2")?) {
            (Axis::Other(a), Axis::Other(b)) => return pixels(format!("no celestial WCS ({}, {})", a, b)),
            (Axis::Celestial(c), Axis::Other(other)) | (Axis::Other(other), Axis::Celestial(c)) => {
                return pixels(format!("{} is celestial but {} is not: not a sky image", c.card, other));
            }
            (Axis::Celestial(a), Axis::Celestial(b)) => (a, b),
        };
        let both = format!("{} and {}", first.card, second.card);
        // Which pair, and which axis (0-based) holds its longitude.
        let pair =
            PAIRS.iter().enumerate().find_map(|(i, &(lon, lat))| match (first.kind.as_str(), second.kind.as_str()) {
                (a, b) if (a, b) == (lon, lat) => Some((i, 0)),
                (a, b) if (a, b) == (lat, lon) => Some((i, 1)),
                _ => None,
            });
        let Some((pair, lon)) = pair else {
            let known = |kind: &str| PAIRS.iter().any(|&(lon, lat)| kind == lon || kind == lat);
            if known(&first.kind) && known(&second.kind) {
                return Err(format!("{} are not a longitude and its latitude", both));
            }
            return pixels(format!("{}: only RA/DEC and GLON/GLAT are read", both));
        };
        if first.projection != second.projection {
            return Err(format!("{} name different projections", both));
        }
        if let Some(suffix) = [&first.suffix, &second.suffix].into_iter().find(|s| !s.is_empty()) {
            return pixels(format!("{}: distortions ({}) are not read", first.card, suffix));
        }
        if !PROJECTIONS.contains(&first.projection.as_str()) {
            return pixels(match first.projection.as_str() {
                "" => format!("{} names no projection", first.card),
                other => format!("the {} projection is not read ({} are)", other, PROJECTIONS.join(", ")),
            });
        }
        let lat = 1 - lon;
        // Keywords of the longitude's and the latitude's axis: `CRVAL1` or `CRVAL2`.
        let key = |prefix: &str, axis: usize| format!("{}{}", prefix, axis + 1);
        let real = |keyword: &str| header.real(keyword);

        let frame = match pair {
            1 => Frame::Galactic,
            _ => match equatorial_frame(header)? {
                Ok(frame) => frame,
                Err(note) => return pixels(note),
            },
        };
        if let Some(card) = header
            .cards
            .iter()
            .find(|c| c.keyword.strip_prefix(&format!("PV{}_", lon + 1)).is_some_and(|m| m.parse::<u32>().is_ok()))
        {
            return pixels(format!("{} (fiducial point offsets or a distortion) is not read", card.keyword));
        }

        let crval = [real(&key("CRVAL", lon))?.unwrap_or(0.0), real(&key("CRVAL", lat))?.unwrap_or(0.0)];
        let units = [
            degrees_per(&text_value(header, &key("CUNIT", lon))?.unwrap_or_default(), &key("CUNIT", lon))?,
            degrees_per(&text_value(header, &key("CUNIT", lat))?.unwrap_or_default(), &key("CUNIT", lat))?,
        ];
        let (alpha0, delta0) = (crval[0] * units[0], crval[1] * units[1]);
        if !(-90.0..=90.0).contains(&delta0) {
            return Err(format!("{} = {} is beyond ±90° of latitude", key("CRVAL", lat), crval[1]));
        }

        let code = first.projection;
        let pv = |m: u32| real(&format!("PV{}_{}", lat + 1, m));
        let projection = match code.as_str() {
            "SIN" => Projection::Sin { xi: pv(1)?.unwrap_or(0.0), eta: pv(2)?.unwrap_or(0.0) },
            "NCP" => {
                let (sin, cos) = sin_cos_deg(delta0);
                if sin == 0.0 {
                    return Err(format!("NCP is undefined at {} = {}", key("CRVAL", lat), crval[1]));
                }
                Projection::Sin { xi: 0.0, eta: cos / sin }
            }
            "TAN" => Projection::Tan,
            "ARC" => Projection::Arc,
            "ZEA" => Projection::Zea,
            "STG" => Projection::Stg,
            // CAR, the last of PROJECTIONS.
            _ => Projection::Car,
        };

        let matrix = linear(header, [lon, lat], units)?;
        let crpix = [real("CRPIX1")?.unwrap_or(0.0), real("CRPIX2")?.unwrap_or(0.0)];
        let (lonpole, latpole) = (real("LONPOLE")?, real("LATPOLE")?.unwrap_or(90.0));
        let (alpha_p, delta_p, phi_p) =
            celestial_pole(alpha0, delta0, projection.theta0(), lonpole, latpole).map_err(|reason| {
                format!("{} = {}, {} = {}: {}", key("CRVAL", lon), crval[0], key("CRVAL", lat), crval[1], reason)
            })?;
        Ok(Coordinates::Sky(Wcs { frame, code, projection, crpix, matrix, alpha_p, delta_p, phi_p }))
    }

    /// The frame of the sky positions.
    pub fn frame(&self) -> Frame {
        self.frame
    }

    /// The projection's three-letter code, as CTYPE names it.
    pub fn projection(&self) -> &str {
        &self.code
    }

    /// The sky position (longitude in [0°, 360°), latitude; degrees) of pixel (x, y), 0-based
    /// as the sources are (FITS pixel (x + 1, y + 1)); `None` outside the projection.
    pub fn pixel_to_sky(&self, x: f64, y: f64) -> Option<(f64, f64)> {
        let (p1, p2) = (x + 1.0 - self.crpix[0], y + 1.0 - self.crpix[1]);
        let m = &self.matrix;
        let native = self.projection.native(m[0][0] * p1 + m[0][1] * p2, m[1][0] * p1 + m[1][1] * p2)?;
        Some(self.celestial(native))
    }

    /// Paper II's eq. 2: native (φ, θ) to celestial (α, δ), through the Euler angles.
    fn celestial(&self, n: Native) -> (f64, f64) {
        let (sin_pp, cos_pp) = sin_cos_deg(self.phi_p);
        let (sin_dp, cos_dp) = sin_cos_deg(self.delta_p);
        // φ − φ_p.
        let cos_d = n.cos_phi * cos_pp + n.sin_phi * sin_pp;
        let sin_d = n.sin_phi * cos_pp - n.cos_phi * sin_pp;
        let x = n.sin_theta * cos_dp - n.cos_theta * sin_dp * cos_d;
        let y = -n.cos_theta * sin_d;
        let z = n.sin_theta * sin_dp + n.cos_theta * cos_dp * cos_d;
        let alpha = (self.alpha_p + R0 * y.atan2(x)).rem_euclid(360.0);
        // rem_euclid of a value just under 0 can round to 360 itself.
        let alpha = if alpha == 360.0 { 0.0 } else { alpha };
        (alpha, R0 * z.atan2(x.hypot(y)))
    }

    /// The local Jacobian at pixel (x, y): degrees on the sky towards the east (increasing
    /// longitude) and the north per pixel along x and along y, `[[∂e/∂x, ∂e/∂y], [∂n/∂x,
    /// ∂n/∂y]]`, by central differences; `None` where a step leaves the projection.
    pub fn jacobian(&self, x: f64, y: f64) -> Option<[[f64; 2]; 2]> {
        let centre = self.pixel_to_sky(x, y)?;
        let offset = |dx: f64, dy: f64| self.pixel_to_sky(x + dx, y + dy).map(|p| offsets(centre, p));
        let (east_x, north_x) = difference(offset(STEP, 0.0)?, offset(-STEP, 0.0)?);
        let (east_y, north_y) = difference(offset(0.0, STEP)?, offset(0.0, -STEP)?);
        Some([[east_x, east_y], [north_x, north_y]])
    }

    /// The 1σ errors of the position (degrees on the sky: east–west, as σ_α·cos δ, and
    /// north–south) from uncorrelated pixel errors `sigma_x`, `sigma_y` at pixel (x, y).
    pub fn position_error(&self, x: f64, y: f64, sigma_x: f64, sigma_y: f64) -> Option<(f64, f64)> {
        let j = self.jacobian(x, y)?;
        Some(((j[0][0] * sigma_x).hypot(j[0][1] * sigma_y), (j[1][0] * sigma_x).hypot(j[1][1] * sigma_y)))
    }

    /// An ellipse at pixel (x, y) with axes `major` and `minor` (pixels) and its major axis
    /// `angle` degrees from +x towards +y, on the sky: its axes in arcseconds and the position
    /// angle of its major axis in degrees east of north, in [0°, 180°). The ellipse is mapped
    /// through the local Jacobian, which is exact for ellipses as small as sources are.
    pub fn ellipse_to_sky(&self, x: f64, y: f64, major: f64, minor: f64, angle: f64) -> Option<(f64, f64, f64)> {
        let j = self.jacobian(x, y)?;
        let (sin, cos) = sin_cos_deg(angle);
        // Columns: the axes' vectors in pixels, mapped to (east, north) degrees.
        let axes = [[major * cos, -minor * sin], [major * sin, minor * cos]];
        let m = [
            [j[0][0] * axes[0][0] + j[0][1] * axes[1][0], j[0][0] * axes[0][1] + j[0][1] * axes[1][1]],
            [j[1][0] * axes[0][0] + j[1][1] * axes[1][0], j[1][0] * axes[0][1] + j[1][1] * axes[1][1]],
        ];
        // M·Mᵀ = [[p, q], [q, r]]: its eigenvalues are the squared semi-axes' ratios.
        let p = m[0][0] * m[0][0] + m[0][1] * m[0][1];
        let q = m[0][0] * m[1][0] + m[0][1] * m[1][1];
        let r = m[1][0] * m[1][0] + m[1][1] * m[1][1];
        let (mean, half) = ((p + r) / 2.0, ((p - r) / 2.0).hypot(q));
        let (big, small) = ((mean + half).sqrt(), (mean - half).max(0.0).sqrt());
        // The major axis's direction from east towards north; east of north is 90° less.
        let from_east = R0 * 0.5 * (2.0 * q).atan2(p - r);
        Some((big * 3600.0, small * 3600.0, (90.0 - from_east).rem_euclid(180.0)))
    }

    /// Arcseconds on the sky per pixel at (x, y): the square root of the Jacobian's area.
    pub fn pixel_scale(&self, x: f64, y: f64) -> Option<f64> {
        let j = self.jacobian(x, y)?;
        Some((j[0][0] * j[1][1] - j[0][1] * j[1][0]).abs().sqrt() * 3600.0)
    }
}

/// Offsets (east, north) of `point` from `centre`, degrees, on the plane tangent at `centre`
/// (orthographic: exact to first order, and the steps are tiny).
fn offsets(centre: (f64, f64), point: (f64, f64)) -> (f64, f64) {
    let (sin_d0, cos_d0) = (centre.1 / R0).sin_cos();
    let (sin_d, cos_d) = (point.1 / R0).sin_cos();
    let (sin_a, cos_a) = ((point.0 - centre.0) / R0).sin_cos();
    (R0 * cos_d * sin_a, R0 * (sin_d * cos_d0 - cos_d * sin_d0 * cos_a))
}

/// The central difference of two offsets one [`STEP`] either side.
fn difference(plus: (f64, f64), minus: (f64, f64)) -> (f64, f64) {
    ((plus.0 - minus.0) / (2.0 * STEP), (plus.1 - minus.1) / (2.0 * STEP))
}

/// The equatorial frame from RADESYS and EQUINOX (or EPOCH), with paper II's defaults: FK4
/// before 1984, FK5 after, ICRS with neither. An `Err` inside is a frame not read here.
fn equatorial_frame(header: &Header) -> Result<Result<Frame, String>, String> {
    let equinox = match header.real("EQUINOX")? {
        Some(equinox) => Some(equinox),
        None => header.real("EPOCH")?,
    };
    // RADECSYS is the keyword's name before paper II.
    let system = match text_value(header, "RADESYS")? {
        Some(system) => Some(system),
        None => text_value(header, "RADECSYS")?,
    };
    let system = match system {
        Some(system) => system.to_ascii_uppercase(),
        None => match equinox {
            None => "ICRS".into(),
            Some(e) if e < 1984.0 => "FK4".into(),
            Some(_) => "FK5".into(),
        },
    };
    Ok(match system.as_str() {
        "ICRS" => Ok(Frame::Icrs),
        "FK5" => Ok(Frame::Fk5 { equinox: equinox.unwrap_or(2000.0) }),
        "FK4" => Ok(Frame::Fk4 { equinox: equinox.unwrap_or(1950.0) }),
        "FK4-NO-E" | "GAPPT" => Err(format!("RADESYS = '{}' is not read (ICRS, FK5 and FK4 are)", system)),
        _ => {
            return Err(format!("RADESYS = '{}' is not a reference system (ICRS, FK5, FK4, FK4-NO-E or GAPPT)", system))
        }
    })
}

/// Degrees of (longitude, latitude) per pixel along axes 1 and 2. `world` gives the world
/// axes (0-based) of the longitude and the latitude, `units` their degrees per CUNIT.
fn linear(header: &Header, world: [usize; 2], units: [f64; 2]) -> Result<[[f64; 2]; 2], String> {
    let real = |keyword: String| header.real(&keyword);
    // Rows are world axes, columns pixel axes, as the header numbers them.
    let read = |prefix: &str| -> Result<[[Option<f64>; 2]; 2], String> {
        let element = |i: usize, j: usize| real(format!("{}{}_{}", prefix, i + 1, j + 1));
        Ok([[element(0, 0)?, element(0, 1)?], [element(1, 0)?, element(1, 1)?]])
    };
    let (pc, cd) = (read("PC")?, read("CD")?);
    let present = |m: &[[Option<f64>; 2]; 2]| m.iter().flatten().any(Option::is_some);
    let cdelt = [real("CDELT1".into())?.unwrap_or(1.0), real("CDELT2".into())?.unwrap_or(1.0)];
    let crota = real(format!("CROTA{}", world[1] + 1))?;
    let (matrix, form) = if present(&cd) && !present(&pc) {
        (cd.map(|row| row.map(|v| v.unwrap_or(0.0))), "CDi_j")
    } else {
        if cdelt.contains(&0.0) {
            return Err(format!("CDELT1 = {}, CDELT2 = {}: a pixel cannot span 0°", cdelt[0], cdelt[1]));
        }
        let mut matrix = [[0.0; 2]; 2];
        for (i, row) in matrix.iter_mut().enumerate() {
            for (j, value) in row.iter_mut().enumerate() {
                *value = cdelt[i] * pc[i][j].unwrap_or(f64::from(i == j));
            }
        }
        let (lon, lat) = (world[0], world[1]);
        match crota {
            // Paper II's eq. 186: CROTA of the latitude axis rotates the CDELTi.
            Some(rho) if !present(&pc) => {
                let (sin, cos) = sin_cos_deg(rho);
                matrix[lon][lon] = cdelt[lon] * cos;
                matrix[lat][lat] = cdelt[lat] * cos;
                matrix[lon][lat] = -cdelt[lat] * sin;
                matrix[lat][lon] = cdelt[lon] * sin;
                (matrix, "CDELTi with CROTAi")
            }
            _ if present(&pc) => (matrix, "PCi_j with CDELTi"),
            _ => (matrix, "CDELTi"),
        }
    };
    let determinant = matrix[0][0] * matrix[1][1] - matrix[0][1] * matrix[1][0];
    if determinant == 0.0 || !determinant.is_finite() {
        return Err(format!("the linear transformation ({}) is singular: {:?}", form, matrix));
    }
    Ok([
        [matrix[world[0]][0] * units[0], matrix[world[0]][1] * units[0]],
        [matrix[world[1]][0] * units[1], matrix[world[1]][1] * units[1]],
    ])
}

/// The Euler angles (α_p, δ_p, φ_p) of paper II's section 2.4, as wcslib's celset computes
/// them: the fiducial point (α₀, δ₀) at native (0, θ₀), LONPOLE φ_p defaulting to 0 when
/// δ₀ ≥ θ₀ and to 180° otherwise, LATPOLE choosing between two solutions.
fn celestial_pole(
    alpha0: f64,
    delta0: f64,
    theta0: f64,
    lonpole: Option<f64>,
    latpole: f64,
) -> Result<(f64, f64, f64), String> {
    let phi_p = lonpole.unwrap_or(if delta0 < theta0 { 180.0 } else { 0.0 });
    if theta0 == 90.0 {
        return Ok((alpha0, delta0, phi_p));
    }
    let (sin_d0, cos_d0) = sin_cos_deg(delta0);
    let (sin_t0, cos_t0) = sin_cos_deg(theta0);
    let (sin_pp, cos_pp) = sin_cos_deg(phi_p);
    let mut latp = latpole;
    let (x, y) = (cos_t0 * cos_pp, sin_t0);
    let z = x.hypot(y);
    if z == 0.0 {
        if sin_d0 != 0.0 {
            return Err(format!("LONPOLE = {} has no celestial pole unless the latitude is 0", phi_p));
        }
        latp = latp.clamp(-90.0, 90.0);
    } else {
        let mut ratio = sin_d0 / z;
        if ratio.abs() > 1.0 {
            if ratio.abs() - 1.0 >= TOLERANCE {
                return Err(format!(
                    "LONPOLE = {} has no celestial pole unless |latitude| is at most {:.3}°",
                    phi_p,
                    R0 * z.asin()
                ));
            }
            ratio = ratio.signum();
        }
        let (u, v) = (R0 * y.atan2(x), R0 * ratio.acos());
        let mut latp1 = u + v;
        if latp1 > 180.0 {
            latp1 -= 360.0;
        }
        let mut latp2 = u - v;
        if latp2 < -180.0 {
            latp2 += 360.0;
        }
        let valid = |l: f64| l.abs() < 90.0 + TOLERANCE;
        latp = if (latp - latp1).abs() < (latp - latp2).abs() {
            if valid(latp1) {
                latp1
            } else {
                latp2
            }
        } else if valid(latp2) {
            latp2
        } else {
            latp1
        };
        if valid(latp) {
            latp = latp.clamp(-90.0, 90.0);
        }
    }
    if latp.abs() > 90.0 + TOLERANCE {
        return Err("the celestial pole is ill-conditioned".into());
    }
    let z = sin_cos_deg(latp).1 * cos_d0;
    let mut alpha_p = if z.abs() < TOLERANCE {
        if cos_d0.abs() < TOLERANCE {
            alpha0
        } else if latp > 0.0 {
            alpha0 + phi_p - 180.0
        } else {
            alpha0 - phi_p
        }
    } else {
        let x = (sin_t0 - sin_cos_deg(latp).0 * sin_d0) / z;
        let y = sin_pp * cos_t0 / cos_d0;
        alpha0 - R0 * y.atan2(x)
    };
    // The same sign as α₀, as wcslib keeps it (only the sum matters: α is reduced to [0, 360°)).
    if alpha0 >= 0.0 {
        if alpha_p < 0.0 {
            alpha_p += 360.0;
        } else if alpha_p > 360.0 {
            alpha_p -= 360.0;
        }
    } else if alpha_p > 0.0 {
        alpha_p -= 360.0;
    } else if alpha_p < -360.0 {
        alpha_p += 360.0;
    }
    Ok((alpha_p, latp, phi_p))
}
