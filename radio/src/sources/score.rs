//! Scoring a catalog against the truth `host sky` wrote: completeness, reliability, position
//! and flux errors, per bin of S/N.
//!
//! - **Sources to find** are the compact components: point sources, ellipses and the members
//!   of pairs. The core and the shell are extended emission, not sources to match.
//! - **Matching.** First, each detection is matched to the nearest source within
//!   [`ScoreOptions::radius`] (3 pixels), one to one, greedily by distance: of every (detection,
//!   source) pair within the radius, the closest is matched first, then the closest of those
//!   whose detection and source are both still free, and so on (equal distances by detection,
//!   then source, in input order). A detection nearest to a source already taken can so match a
//!   farther one within the radius, as in a close pair.
//! - **On the core and on the shell.** A detection that matches no source is on the core (or
//!   the shell) where that one's noise-free brightness is at least [`ScoreOptions::zone_level`]
//!   (half) of its peak, inside the core's half-maximum disc or on the shell's ridge within its
//!   half-maximum width, or within the match radius of its centre, where a detection of the
//!   whole ring lies. Those detections are counted apart and left out of the reliability. One on
//!   the faint wings, outside that, is false like any other that matches nothing: a noise peak
//!   on diffuse emission, not a source.
//! - **S/N** of a true source: its peak over the noise σ at its centre (the truth's `noise`
//!   column, or one σ given for a truth of constant noise that has none).
//! - **Completeness**: found sources over injected ones, per bin of their true S/N, over all,
//!   above [`ScoreOptions::complete_above`] (10σ) and by kind.
//! - **Reliability**: matched detections over those scored (all but those on the core and the
//!   shell); per bin of the detection's own S/N where the catalog gives one.
//! - **Errors** of the matched sources, per bin of true S/N and above
//!   [`ScoreOptions::errors_above`] (20σ): the median distance (pixels), and the medians of
//!   |Δpeak| / peak and |Δflux| / flux. A detection's flux must be in the truth's units, the sum
//!   of the noise-free pixels (Jy/beam × pixels): a flux in Jy times the beam's area in pixels
//!   (2π σx σy) is. Non-finite peaks or fluxes are left out of their medians.

use crate::io::file_error;
use crate::sky::{Component, Kind, FWHM, SURVEY_COLUMNS, TRUTH_COLUMNS};
use cuda_kernels::gpu::{require, GpuError, GpuResult};
use cuda_kernels::Named;
use serde::Serialize;
use std::fmt;
use std::path::Path;

/// A detection matches a source within this many pixels.
pub const MATCH_RADIUS: f64 = 3.0;
/// A detection that matches no source is on the core or the shell where that one's brightness is
/// at least this of its peak (or within the match radius of its centre).
pub const ZONE_LEVEL: f64 = 0.5;
/// The S/N bins' edges: below 5, 5 to 10, …, 100 and above.
pub const SNR_EDGES: [f64; 5] = [5.0, 10.0, 20.0, 50.0, 100.0];
/// The summary's completeness is of sources above this S/N…
pub const COMPLETE_ABOVE: f64 = 10.0;
/// …and its errors of those above this one.
pub const ERRORS_ABOVE: f64 = 20.0;

/// A true component and the noise σ at its centre.
#[derive(Debug, Clone, PartialEq)]
pub struct Truth {
    pub component: Component,
    pub noise: f64,
}

impl Truth {
    /// Its peak over the local noise.
    pub fn snr(&self) -> f64 {
        self.component.peak / self.noise
    }

    /// Whether it is a source to find (not the core or the shell).
    pub fn is_source(&self) -> bool {
        matches!(self.component.kind, Kind::Point | Kind::Ellipse | Kind::Pair)
    }
}

/// A source as a catalog gives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Detection {
    pub x: f64,
    pub y: f64,
    /// Jy/beam.
    pub peak: f64,
    /// Integrated, in the truth's units (see the module's documentation).
    pub flux: f64,
    /// Its S/N, where the catalog gives one.
    pub snr: Option<f64>,
}

/// How to score (the defaults are the constants above).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreOptions {
    pub radius: f64,
    pub zone_level: f64,
    pub edges: Vec<f64>,
    pub complete_above: f64,
    pub errors_above: f64,
}

impl Default for ScoreOptions {
    fn default() -> Self {
        Self {
            radius: MATCH_RADIUS,
            zone_level: ZONE_LEVEL,
            edges: SNR_EDGES.to_vec(),
            complete_above: COMPLETE_ABOVE,
            errors_above: ERRORS_ABOVE,
        }
    }
}

impl ScoreOptions {
    fn check(&self) -> GpuResult<()> {
        require(self.radius.is_finite() && self.radius > 0.0, || {
            format!("the match radius must be a positive number of pixels (got {})", self.radius)
        })?;
        require(self.zone_level > 0.0 && self.zone_level <= 1.0, || {
            format!(
                "the core's and shell's level must be above 0 and at most 1 of their peak (got {})",
                self.zone_level
            )
        })?;
        require(self.edges.iter().all(|e| e.is_finite()) && self.edges.windows(2).all(|w| w[0] < w[1]), || {
            format!("the S/N bins' edges must be finite and increasing (got {:?})", self.edges)
        })?;
        require(self.complete_above.is_finite() && self.errors_above.is_finite(), || {
            format!("the S/N cuts must be finite (got {} and {})", self.complete_above, self.errors_above)
        })
    }
}

fn invalid(why: String) -> GpuError {
    GpuError::InvalidInput(why)
}

/// Where each source's noise σ comes from.
enum LocalNoise {
    Column(usize),
    Given(f64),
}

/// The truth from the text of a CSV that `host sky` wrote: the lesson's columns, and `minor`,
/// `pa` and `noise` where it has them, in any order (`major` is `sigma`'s FWHM, so it is not
/// read). A truth without a `noise` column (the lesson's sky, of constant noise) takes `noise`
/// as every source's σ.
pub fn parse_truth(text: &str, noise: Option<f64>) -> GpuResult<Vec<Truth>> {
    let csv = Csv::parse(text, "truth")?;
    let [x, y, peak, flux, sigma, radius, kind] = csv.required(TRUTH_COLUMNS)?;
    let [_, minor, pa, local] = SURVEY_COLUMNS.map(|name| csv.column(name));
    let local = match (local, noise.filter(|&n| n.is_finite() && n > 0.0)) {
        (Some(column), _) => LocalNoise::Column(column),
        (None, Some(given)) => LocalNoise::Given(given),
        (None, None) => {
            return Err(invalid(
                "the truth has no `noise` column: give the image's noise σ (a positive number of Jy/beam)".into(),
            ))
        }
    };
    csv.rows()
        .map(|row| {
            let (line_number, fields) = row?;
            let names = &csv.names;
            let number = |column: usize| {
                fields[column].parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| {
                    invalid(format!(
                        "line {}: {} `{}` is not a finite number",
                        line_number, names[column], fields[column]
                    ))
                })
            };
            let positive = |column: usize| {
                let value = number(column)?;
                require(value > 0.0, || {
                    format!("line {}: {} must be positive (got {})", line_number, names[column], value)
                })
                .map(|_| value)
            };
            let kind = Kind::from_name(fields[kind]).ok_or_else(|| {
                let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                invalid(format!("line {}: kind `{}` is none of {}", line_number, fields[kind], kinds.join(", ")))
            })?;
            let sigma = positive(sigma)?;
            let sigma_minor = match minor {
                Some(column) => positive(column)? / FWHM,
                None => sigma,
            };
            let component = Component {
                kind,
                x: number(x)?,
                y: number(y)?,
                peak: positive(peak)?,
                sigma,
                sigma_minor,
                pa: pa.map(number).transpose()?.unwrap_or(0.0),
                radius: number(radius)?,
                flux: number(flux)?,
            };
            let noise = match local {
                LocalNoise::Column(column) => positive(column)?,
                LocalNoise::Given(given) => given,
            };
            Ok(Truth { component, noise })
        })
        .collect()
}

/// [`parse_truth`] of the file at `path`; an error names it.
pub fn read_truth(path: &Path, noise: Option<f64>) -> GpuResult<Vec<Truth>> {
    read_csv(path, |text| parse_truth(text, noise))
}

/// `parse` of the text of the file at `path`; an error names the file.
fn read_csv<T>(path: &Path, parse: impl FnOnce(&str) -> GpuResult<T>) -> GpuResult<T> {
    let text = std::fs::read_to_string(path).map_err(|e| file_error(path, format!("cannot read: {}", e)))?;
    parse(&text).map_err(|e| match e {
        GpuError::InvalidInput(why) => file_error(path, why),
        other => other,
    })
}

/// A CSV's header, its column names trimmed, and the text after it: what the truth and another
/// finder's catalog are read from. Blank lines are skipped; `what` names the file in errors.
struct Csv<'a> {
    what: &'a str,
    names: Vec<&'a str>,
    /// The lines after the header, each with its 1-based number.
    lines: Vec<(usize, &'a str)>,
}

impl<'a> Csv<'a> {
    fn parse(text: &'a str, what: &'a str) -> GpuResult<Self> {
        let mut lines = text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty());
        let (_, header) = lines.next().ok_or_else(|| invalid(format!("the {} is empty: no header line", what)))?;
        let names = header.split(',').map(str::trim).collect();
        Ok(Self { what, names, lines: lines.map(|(index, line)| (index + 1, line)).collect() })
    }

    fn column(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|&n| n == name)
    }

    /// The columns of `names`, each an error where the header lacks it.
    fn required<const N: usize>(&self, names: [&str; N]) -> GpuResult<[usize; N]> {
        let mut columns = [0; N];
        for (column, name) in columns.iter_mut().zip(names) {
            *column = self
                .column(name)
                .ok_or_else(|| invalid(format!("the {}'s header has no `{}` column", self.what, name)))?;
        }
        Ok(columns)
    }

    /// Each line's number and fields (trimmed); a line of another count than the header's is
    /// an error.
    fn rows(&self) -> impl Iterator<Item = GpuResult<(usize, Vec<&'a str>)>> + '_ {
        self.lines.iter().map(|&(number, line)| {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            require(fields.len() == self.names.len(), || {
                format!("line {}: {} fields, but the header names {}", number, fields.len(), self.names.len())
            })?;
            Ok((number, fields))
        })
    }
}

/// The columns of another finder's catalog to score: pixel position (0-based, as the truth's),
/// peak (Jy/beam) and integrated flux as a sum of pixels; `snr` too where it has one.
pub const DETECTION_COLUMNS: [&str; 4] = ["x", "y", "peak", "flux"];

/// Detections from the text of a CSV with [`DETECTION_COLUMNS`] and an optional `snr`, in any
/// order, as `bench/peers/finders.py` writes Aegean's and PyBDSF's catalogs. A position must be
/// finite; a peak, flux or S/N may be `nan`, which leaves it out of its medians.
pub fn parse_detections(text: &str) -> GpuResult<Vec<Detection>> {
    let csv = Csv::parse(text, "catalog")?;
    let [x, y, peak, flux] = csv.required(DETECTION_COLUMNS)?;
    let snr = csv.column("snr");
    csv.rows()
        .map(|row| {
            let (line_number, fields) = row?;
            let number = |column: usize| {
                fields[column].parse::<f64>().map_err(|_| {
                    let (name, field) = (csv.names[column], fields[column]);
                    invalid(format!("line {}: {} `{}` is not a number", line_number, name, field))
                })
            };
            let (x, y) = (number(x)?, number(y)?);
            require(x.is_finite() && y.is_finite(), || {
                format!("line {}: the position ({}, {}) is not finite", line_number, x, y)
            })?;
            Ok(Detection { x, y, peak: number(peak)?, flux: number(flux)?, snr: snr.map(number).transpose()? })
        })
        .collect()
}

/// [`parse_detections`] of the file at `path`; an error names it.
pub fn read_detections(path: &Path) -> GpuResult<Vec<Detection>> {
    read_csv(path, parse_detections)
}

/// `count` of `of`, and their ratio when `of` is not 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Fraction {
    pub count: usize,
    pub of: usize,
    pub value: Option<f64>,
}

impl Fraction {
    fn new(count: usize, of: usize) -> Self {
        Self { count, of, value: (of > 0).then(|| count as f64 / of as f64) }
    }
}

impl fmt::Display for Fraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(value) => write!(f, "{:.4} ({} of {})", value, self.count, self.of),
            None => write!(f, "– (none)"),
        }
    }
}

/// The errors of matched sources: medians, `None` when there are none to take.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Errors {
    pub matched: usize,
    /// Pixels.
    pub position: Option<f64>,
    /// |Δpeak| / peak.
    pub peak: Option<f64>,
    /// |Δflux| / flux.
    pub flux: Option<f64>,
}

impl Errors {
    fn of<'a>(pairs: impl Iterator<Item = (&'a Truth, &'a Detection)>) -> Self {
        let (mut position, mut peak, mut flux) = (Vec::new(), Vec::new(), Vec::new());
        for (t, d) in pairs {
            let c = &t.component;
            position.push((d.x - c.x).hypot(d.y - c.y));
            peak.push(((d.peak - c.peak) / c.peak).abs());
            flux.push(((d.flux - c.flux) / c.flux).abs());
        }
        Self { matched: position.len(), position: median(position), peak: median(peak), flux: median(flux) }
    }
}

/// The median of the finite `values` (the mean of the middle two of an even count).
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    (n > 0).then(|| if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 })
}

/// One S/N bin, `low` <= S/N < `high`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bin {
    pub low: f64,
    pub high: f64,
    /// Of the sources whose true S/N is in the bin.
    pub completeness: Fraction,
    /// Of the scored detections whose own S/N is in the bin.
    pub reliability: Fraction,
    /// Of the found sources whose true S/N is in the bin.
    pub errors: Errors,
}

impl Bin {
    fn label(&self) -> String {
        match (self.low.is_finite(), self.high.is_finite()) {
            (false, true) => format!("< {}", self.high),
            (true, false) => format!("≥ {}", self.low),
            (true, true) => format!("{}–{}", self.low, self.high),
            (false, false) => "all".into(),
        }
    }
}

/// The completeness of one kind of source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ByKind {
    pub kind: &'static str,
    pub completeness: Fraction,
}

/// A catalog's score against the truth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    pub options: ScoreOptions,
    pub detections: usize,
    pub on_core: usize,
    pub on_shell: usize,
    /// Scored detections that have no S/N: in the reliability, in no bin's.
    pub unknown_snr: usize,
    /// Of every source.
    pub completeness: Fraction,
    /// Of the sources above `options.complete_above`.
    pub completeness_above: Fraction,
    /// Matched detections of those off the core and the shell.
    pub reliability: Fraction,
    /// Of the found sources above `options.errors_above`.
    pub errors_above: Errors,
    pub kinds: Vec<ByKind>,
    pub bins: Vec<Bin>,
}

/// The sources (indices into `truth`) sorted by x, to find those near a point.
struct ByX<'a> {
    truth: &'a [Truth],
    order: Vec<usize>,
}

impl<'a> ByX<'a> {
    fn new(truth: &'a [Truth], sources: &[usize]) -> Self {
        let mut order = sources.to_vec();
        order.sort_by(|&a, &b| truth[a].component.x.total_cmp(&truth[b].component.x));
        Self { truth, order }
    }

    /// The sources within `radius` of (x, y), with their distance.
    fn near(&self, x: f64, y: f64, radius: f64) -> impl Iterator<Item = (f64, usize)> + '_ {
        let start = self.order.partition_point(|&i| self.truth[i].component.x < x - radius);
        self.order[start..]
            .iter()
            .take_while(move |&&i| self.truth[i].component.x <= x + radius)
            .map(move |&i| ((self.truth[i].component.x - x).hypot(self.truth[i].component.y - y), i))
            .filter(move |&(distance, _)| distance <= radius)
    }
}

/// Scores `detections` against `truth` (see the module's documentation). An error is about
/// the options, or a detection without a finite position.
pub fn score(truth: &[Truth], detections: &[Detection], options: &ScoreOptions) -> GpuResult<Score> {
    options.check()?;
    if let Some((i, d)) = detections.iter().enumerate().find(|(_, d)| !(d.x.is_finite() && d.y.is_finite())) {
        return Err(invalid(format!("detection {} is at ({}, {}): not a finite position", i, d.x, d.y)));
    }
    let sources: Vec<usize> = (0..truth.len()).filter(|&i| truth[i].is_source()).collect();
    let by_x = ByX::new(truth, &sources);
    let mut candidates: Vec<(f64, usize, usize)> = detections
        .iter()
        .enumerate()
        .flat_map(|(i, d)| by_x.near(d.x, d.y, options.radius).map(move |(r, t)| (r, i, t)))
        .collect();
    candidates.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    // For each truth, its detection; for each detection, whether it is matched.
    let mut found: Vec<Option<usize>> = vec![None; truth.len()];
    let mut matched = vec![false; detections.len()];
    for (_, d, t) in candidates {
        if found[t].is_none() && !matched[d] {
            (found[t], matched[d]) = (Some(d), true);
        }
    }
    let on = |kind: Kind, d: &Detection| {
        truth.iter().any(|t| {
            let c = &t.component;
            c.kind == kind
                && (c.value(d.x, d.y) >= options.zone_level * c.peak || (d.x - c.x).hypot(d.y - c.y) <= options.radius)
        })
    };
    let (mut on_core, mut on_shell, mut scored) = (0, 0, Vec::new());
    for (i, d) in detections.iter().enumerate() {
        if matched[i] {
            scored.push(i);
        } else if on(Kind::Core, d) {
            on_core += 1;
        } else if on(Kind::Shell, d) {
            on_shell += 1;
        } else {
            scored.push(i);
        }
    }

    let completeness = |keep: &dyn Fn(&Truth) -> bool| {
        let of: Vec<usize> = sources.iter().copied().filter(|&t| keep(&truth[t])).collect();
        Fraction::new(of.iter().filter(|&&t| found[t].is_some()).count(), of.len())
    };
    let errors = |keep: &dyn Fn(&Truth) -> bool| {
        Errors::of(
            sources.iter().filter(|&&t| keep(&truth[t])).filter_map(|&t| Some((&truth[t], &detections[found[t]?]))),
        )
    };
    let mut edges = vec![f64::NEG_INFINITY];
    edges.extend(&options.edges);
    edges.push(f64::INFINITY);
    let bins = edges
        .windows(2)
        .map(|w| {
            let (low, high) = (w[0], w[1]);
            let within = |snr: f64| (low..high).contains(&snr);
            let own: Vec<usize> = scored.iter().copied().filter(|&d| detections[d].snr.is_some_and(within)).collect();
            Bin {
                low,
                high,
                completeness: completeness(&|t| within(t.snr())),
                reliability: Fraction::new(own.iter().filter(|&&d| matched[d]).count(), own.len()),
                errors: errors(&|t| within(t.snr())),
            }
        })
        .collect();
    let kinds = [Kind::Point, Kind::Ellipse, Kind::Pair]
        .into_iter()
        .map(|kind| ByKind { kind: kind.name(), completeness: completeness(&|t| t.component.kind == kind) })
        .filter(|k| k.completeness.of > 0)
        .collect();
    Ok(Score {
        options: options.clone(),
        detections: detections.len(),
        on_core,
        on_shell,
        unknown_snr: scored.iter().filter(|&&d| !detections[d].snr.is_some_and(f64::is_finite)).count(),
        completeness: completeness(&|_| true),
        completeness_above: completeness(&|t| t.snr() > options.complete_above),
        reliability: Fraction::new(scored.iter().filter(|&&d| matched[d]).count(), scored.len()),
        errors_above: errors(&|t| t.snr() > options.errors_above),
        kinds,
        bins,
    })
}

/// A ratio as a percentage, or a dash.
fn percent(value: Option<f64>) -> String {
    value.map_or("–".into(), |v| format!("{:.2}%", 100.0 * v))
}

fn fixed(value: Option<f64>, digits: usize) -> String {
    value.map_or("–".into(), |v| format!("{:.*}", digits, v))
}

impl fmt::Display for Score {
    /// The per-bin table, then the summary.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<8} │ {:>8} {:>6} {:>12} │ {:>10} {:>6} {:>11} │ {:>13} {:>10} {:>10}",
            "S/N",
            "injected",
            "found",
            "completeness",
            "detections",
            "true",
            "reliability",
            "position (px)",
            "peak error",
            "flux error"
        )?;
        for bin in &self.bins {
            let (c, r, e) = (&bin.completeness, &bin.reliability, &bin.errors);
            writeln!(
                f,
                "{:<8} │ {:>8} {:>6} {:>12} │ {:>10} {:>6} {:>11} │ {:>13} {:>10} {:>10}",
                bin.label(),
                c.of,
                c.count,
                fixed(c.value, 4),
                r.of,
                r.count,
                fixed(r.value, 4),
                fixed(e.position, 4),
                percent(e.peak),
                percent(e.flux)
            )?;
        }
        writeln!(
            f,
            "completeness and errors (medians of |Δ|, relative for peak and flux) by the true S/N, peak / local σ; reliability by the detection's own S/N"
        )?;
        let kinds: Vec<String> = self.kinds.iter().map(|k| format!("{} {}", k.completeness.of, k.kind)).collect();
        writeln!(
            f,
            "{} sources injected ({}); {} detections: {} on the core, {} on the shell, {} scored",
            self.completeness.of,
            kinds.join(", "),
            self.detections,
            self.on_core,
            self.on_shell,
            self.reliability.of
        )?;
        writeln!(
            f,
            "matched within {} px, one to one, closest first; unmatched, on the core or the shell where it is at least {} of its peak or within {} px of its centre",
            self.options.radius, self.options.zone_level, self.options.radius
        )?;
        writeln!(f, "completeness above {}σ: {}", self.options.complete_above, self.completeness_above)?;
        writeln!(f, "completeness over all: {}", self.completeness)?;
        for k in &self.kinds {
            writeln!(f, "completeness by kind, {}: {}", k.kind, k.completeness)?;
        }
        writeln!(
            f,
            "reliability outside the core and the shell: {}; {} false",
            self.reliability,
            self.reliability.of - self.reliability.count
        )?;
        if self.unknown_snr > 0 {
            writeln!(f, "scored detections without an S/N: {} (in the reliability, in no bin's)", self.unknown_snr)?;
        }
        let e = &self.errors_above;
        write!(
            f,
            "above {}σ ({} found): median position error {} px, peak error {}, integrated flux error {}",
            self.options.errors_above,
            e.matched,
            fixed(e.position, 4),
            percent(e.peak),
            percent(e.flux)
        )
    }
}
