//! The catalog's three formats from the same rows: the CSV (the lesson's columns first, as
//! before), the VOTable (parsed as XML: one FIELD per CSV column, one TD per FIELD, the sky
//! columns on a COOSYS) and the ds9 region file (its syntax, frames and numbers); with and
//! without a celestial WCS, and with a source off the projection.

use radio::fits::{parse_card, Header};
use radio::sources::catalog::{self, Catalog, Measured, Row, Shape, HEADER, OFF_SKY};
use radio::sources::measure::Source;
use radio::wcs::{Coordinates, Wcs};
use test_support::{error_of, scratch};

fn source() -> Source {
    Source {
        label: 1,
        y: 10.25,
        x: 1.0 / 3.0,
        flux: 0.1,
        peak: 2.5,
        pixels: 7,
        y_min: 9,
        y_max: 11,
        x_min: 0,
        x_max: 1,
    }
}

/// A source as a Gaussian fit will give it: every value with its error.
fn fitted(island: u32, x: f64, y: f64) -> Row {
    let m = |value: f64, error: f64| Measured { value, error: Some(error) };
    Row {
        island,
        component: 1,
        x: m(x, 0.05),
        y: m(y, 0.08),
        peak: Some(m(0.75, 0.01)),
        integrated: Some(m(1.5, 0.03)),
        rms: Some(0.01),
        shape: Some(Shape { major: m(6.0, 0.2), minor: m(3.0, 0.1), angle: m(30.0, 2.0) }),
        measures: None,
        flags: 0,
    }
}

fn coordinates(cards: &[&str]) -> Coordinates {
    let header = Header { cards: cards.iter().map(|c| parse_card(c.as_bytes())).collect() };
    Coordinates::from_header(&header).unwrap()
}

/// SIN at (187.7059, 12.3911), 1.8″ pixels, FK5 J2000.
fn sin() -> Coordinates {
    coordinates(&[
        "CTYPE1  = 'RA---SIN'",
        "CTYPE2  = 'DEC--SIN'",
        "CRPIX1  = 257.0",
        "CRPIX2  = 257.0",
        "CRVAL1  = 187.7059",
        "CRVAL2  = 12.3911",
        "CDELT1  = -5E-4",
        "CDELT2  = 5E-4",
        "EQUINOX = 2000.0",
    ])
}

fn wcs_of(coordinates: &Coordinates) -> &Wcs {
    match coordinates {
        Coordinates::Sky(wcs) => wcs,
        Coordinates::Pixels(note) => panic!("no WCS: {}", note),
    }
}

fn pixels() -> Coordinates {
    Coordinates::Pixels("no celestial WCS".into())
}

/// The CSV as rows of named cells.
fn table(csv: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = csv.lines().map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>());
    let names = lines.next().expect("a header");
    (names, lines.collect())
}

fn cell<'a>(names: &[String], row: &'a [String], name: &str) -> &'a str {
    &row[names.iter().position(|n| n == name).unwrap_or_else(|| panic!("no column {}", name))]
}

fn number(names: &[String], row: &[String], name: &str) -> f64 {
    cell(names, row, name).parse().unwrap_or_else(|_| panic!("{}: {:?}", name, cell(names, row, name)))
}

#[test]
fn the_csv_keeps_the_lessons_columns_first_with_numbers_in_full() {
    let rows = catalog::rows(&[source(), Source { label: 2, ..source() }], 0.5);
    let csv = Catalog::new("sky.npy", pixels(), None, rows).csv();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with(&format!("{},", HEADER)), "{}", lines[0]);
    assert_eq!(
        lines[0],
        format!(
            "{},component,x_err,y_err,peak_err,integrated,integrated_err,rms,snr,major_px,major_px_err,minor_px,\
             minor_px_err,angle_px,angle_px_err,flags",
            HEADER
        )
    );
    // What the lesson's islands have, in full (a real with its point); what they lack, empty;
    // S/N is peak over σ.
    assert_eq!(lines[1], "1,10.25,0.3333333333333333,0.1,2.5,7,9,11,0,1,0,,,,,,0.5,5.0,,,,,,,0");
    assert!(lines[2].starts_with("2,10.25,"));
    let x: f64 = lines[1].split(',').nth(2).unwrap().parse().unwrap();
    assert_eq!(x, 1.0 / 3.0, "reads back exactly");
    assert_eq!(Catalog::new("sky.npy", pixels(), None, Vec::new()).csv(), lines[0].to_string() + "\n");
}

#[test]
fn a_fitted_source_gets_every_column_on_the_sky() {
    let coordinates = sin();
    let wcs = wcs_of(&coordinates).clone();
    let catalog = Catalog::new("sky.fits", coordinates, Some("JY/BEAM"), vec![fitted(3, 100.5, 300.25)]);
    let (names, rows) = table(&catalog.csv());
    let row = &rows[0];
    assert_eq!(names.len(), row.len());
    let (ra, dec) = wcs.pixel_to_sky(100.5, 300.25).unwrap();
    assert_eq!((number(&names, row, "ra"), number(&names, row, "dec")), (ra, dec));
    let (east, north) = wcs.position_error(100.5, 300.25, 0.05, 0.08).unwrap();
    assert_eq!((number(&names, row, "ra_err"), number(&names, row, "dec_err")), (east, north));
    // 1.8″ pixels, north up: 0.05 px and 0.08 px are 0.09″ and 0.144″.
    assert!((east * 3600.0 - 0.09).abs() < 1e-6 && (north * 3600.0 - 0.144).abs() < 1e-6, "{} {}", east, north);
    let (major, minor, pa) = wcs.ellipse_to_sky(100.5, 300.25, 6.0, 3.0, 30.0).unwrap();
    assert_eq!(
        (number(&names, row, "major"), number(&names, row, "minor"), number(&names, row, "pa")),
        (major, minor, pa)
    );
    // Axes scale with their errors; the angle's error stays. 30° from +x towards +y is 120° east
    // of north, turned 0.017° by the meridians' convergence 157 pixels from the centre.
    assert!((number(&names, row, "major_err") / major - 0.2 / 6.0).abs() < 1e-12);
    assert!((number(&names, row, "minor_err") / minor - 0.1 / 3.0).abs() < 1e-12);
    assert_eq!(number(&names, row, "pa_err"), 2.0);
    assert!(
        (major - 10.8).abs() < 1e-4 && (minor - 5.4).abs() < 1e-4 && (pa - 120.017).abs() < 1e-3,
        "{} {} {}",
        major,
        minor,
        pa
    );
    for (name, want) in [
        ("label", 3.0),
        ("component", 1.0),
        ("x", 100.5),
        ("x_err", 0.05),
        ("peak", 0.75),
        ("peak_err", 0.01),
        ("integrated", 1.5),
        ("integrated_err", 0.03),
        ("rms", 0.01),
        ("snr", 75.0),
        ("major_px", 6.0),
        ("angle_px_err", 2.0),
        ("flags", 0.0),
    ] {
        assert_eq!(number(&names, row, name), want, "{}", name);
    }
    // No island measures: empty.
    assert_eq!((cell(&names, row, "flux"), cell(&names, row, "pixels")), ("", ""));
}

#[test]
fn the_votable_has_a_field_per_column_and_a_cell_per_field() {
    let rows = vec![fitted(1, 10.0, 20.0), Row::of_island(&source(), Some(0.5))];
    let catalog = Catalog::new("a&b <sky>.fits", sin(), Some("JY/BEAM"), rows);
    let (names, csv_rows) = table(&catalog.csv());
    let xml = catalog.votable();
    let document = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = document.root_element();
    assert_eq!((root.tag_name().name(), root.attribute("version")), ("VOTABLE", Some("1.4")));
    assert_eq!(root.tag_name().namespace(), Some("http://www.ivoa.net/xml/VOTable/v1.3"));
    let elements = |name: &'static str| root.descendants().filter(move |n| n.has_tag_name(name));
    let description = elements("DESCRIPTION").next().unwrap().text();
    assert_eq!(description, Some("Sources found in a&b <sky>.fits"), "escaped and read back");
    let coosys = elements("COOSYS").next().expect("a COOSYS");
    assert_eq!((coosys.attribute("system"), coosys.attribute("equinox")), (Some("eq_FK5"), Some("J2000")));
    let info = elements("INFO").next().unwrap();
    assert_eq!(info.attribute("value"), Some("FK5 J2000, SIN projection"));

    let fields: Vec<roxmltree::Node> = elements("FIELD").collect();
    let field_names: Vec<&str> = fields.iter().map(|f| f.attribute("name").unwrap()).collect();
    assert_eq!(field_names, names, "the CSV's columns, in order");
    for field in &fields {
        let name = field.attribute("name").unwrap();
        assert!(matches!(field.attribute("datatype"), Some("double" | "long")), "{}", name);
        assert!(field.attribute("ucd").is_some_and(|u| !u.is_empty()), "{}", name);
        assert!(field.children().any(|c| c.has_tag_name("DESCRIPTION")), "{}", name);
        let on_sky = matches!(name, "ra" | "dec");
        assert_eq!(field.attribute("ref"), on_sky.then_some("sky"), "{}", name);
    }
    let unit = |name: &str| fields.iter().find(|f| f.attribute("name") == Some(name)).unwrap().attribute("unit");
    assert_eq!(
        (unit("ra"), unit("major"), unit("peak"), unit("x"), unit("snr")),
        (Some("deg"), Some("arcsec"), Some("Jy/beam"), Some("pix"), None)
    );

    let table = elements("TABLE").next().unwrap();
    assert_eq!(table.attribute("nrows"), Some("2"));
    let rows: Vec<Vec<Option<&str>>> =
        elements("TR").map(|tr| tr.children().filter(|c| c.is_element()).map(|td| td.text()).collect()).collect();
    assert_eq!(rows.len(), 2);
    for (row, csv) in rows.iter().zip(&csv_rows) {
        assert_eq!(row.len(), fields.len());
        // The same text as the CSV's, an empty cell where the CSV's field is empty.
        let cells: Vec<&str> = row.iter().map(|c| c.unwrap_or("")).collect();
        assert_eq!(cells, *csv);
    }
}

#[test]
fn ds9_regions_have_the_frame_and_numbers_ds9_reads() {
    let coordinates = sin();
    let wcs = wcs_of(&coordinates).clone();
    let island =
        Row::of_island(&Source { x: 40.0, y: 60.0, x_min: 38, x_max: 42, y_min: 59, y_max: 61, ..source() }, None);
    let rows = vec![fitted(1, 100.5, 300.25), island.clone()];
    let on_sky = Catalog::new("sky.fits", coordinates, None, rows.clone()).regions();
    let in_pixels = Catalog::new("sky.fits", pixels(), None, rows).regions();

    for (text, frame) in [(&on_sky, "fk5"), (&in_pixels, "image")] {
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# Region file format: DS9 version 4.1");
        assert!(lines[1].starts_with("# 2 sources in sky.fits (") && !lines[1].contains(';'), "{}", lines[1]);
        assert!(lines[2].starts_with("global "), "{}", lines[2]);
        assert_eq!(lines[3], frame);
        assert_eq!(lines.len(), 6);
        for line in &lines[4..] {
            // shape(a,b,…) # text={n}: numbers, arcseconds marked with ″ in sky frames.
            let (shape, comment) = line.split_once(" # ").expect("a label");
            let (name, args) = shape.strip_suffix(')').and_then(|s| s.split_once('(')).expect("shape(args)");
            assert!(matches!(name, "ellipse" | "circle"), "{}", line);
            let args: Vec<f64> = args
                .split(',')
                .map(|a| a.trim_end_matches('"').parse().unwrap_or_else(|_| panic!("{}", line)))
                .collect();
            assert_eq!(args.len(), if name == "ellipse" { 5 } else { 3 }, "{}", line);
            assert!(comment.starts_with("text={") && comment.ends_with('}'), "{}", line);
        }
    }
    let args = |line: &str| -> Vec<f64> {
        let inner = line.split_once('(').unwrap().1.split_once(')').unwrap().0;
        inner.split(',').map(|a| a.trim_end_matches('"').parse().unwrap()).collect()
    };
    // On the sky: the centre in degrees, the semi-axes (half the FWHM) in ″, ds9's angle the
    // position angle plus 90°.
    let (ra, dec) = wcs.pixel_to_sky(100.5, 300.25).unwrap();
    let (major, minor, pa) = wcs.ellipse_to_sky(100.5, 300.25, 6.0, 3.0, 30.0).unwrap();
    let ellipse = args(on_sky.lines().nth(4).unwrap());
    let want = [ra, dec, major / 2.0, minor / 2.0, pa + 90.0];
    for (got, (want, digits)) in ellipse.iter().zip(want.iter().zip([1e-8, 1e-8, 1e-4, 1e-4, 1e-4])) {
        assert!((got - want).abs() <= digits, "{:?}, want {:?}", ellipse, want);
    }
    assert!(on_sky.lines().nth(4).unwrap().ends_with("# text={1}"));
    // The island: a circle of half its box's larger side (5 px, 1.8″ each).
    let circle = args(on_sky.lines().nth(5).unwrap());
    assert!((circle[2] - 2.5 * 1.8).abs() < 1e-3, "{:?}", circle);
    // In pixels: 1-based, as ds9 counts, the angle from +x as given.
    assert_eq!(args(in_pixels.lines().nth(4).unwrap()), [101.5, 301.25, 3.0, 1.5, 30.0]);
    assert_eq!(args(in_pixels.lines().nth(5).unwrap()), [41.0, 61.0, 2.5]);
    // The comment line keeps ds9's separator and line breaks out.
    let odd = Catalog::new("a;b\nc.fits", pixels(), None, Vec::new()).regions();
    assert_eq!(odd.lines().nth(1), Some("# 0 sources in a b c.fits (positions in pixels: no celestial WCS)"));
    // A row without a shape or an island is a point.
    let bare = Row { shape: None, ..fitted(7, 1.0, 2.0) };
    let point = Catalog::new("sky.fits", pixels(), None, vec![bare]).regions();
    assert_eq!(point.lines().nth(4), Some("point(2.0000,3.0000) # point=x text={7}"));
}

#[test]
fn a_shape_whose_angle_is_lost_keeps_its_axes_and_is_a_circle_in_ds9() {
    let coordinates = sin();
    let wcs = wcs_of(&coordinates).clone();
    let mut lost = fitted(3, 100.5, 300.25);
    let shape = lost.shape.as_mut().unwrap();
    shape.angle = Measured { value: f64::NAN, error: None };
    let on_sky = Catalog::new("sky.fits", coordinates, None, vec![lost.clone()]);
    let in_pixels = Catalog::new("sky.fits", pixels(), None, vec![lost]);
    // On the sky, each axis scales as the pixel does; the position angle stays unknown.
    let scale = wcs.pixel_scale(100.5, 300.25).unwrap();
    let (names, rows) = table(&on_sky.csv());
    let cell = |name: &str| rows[0][names.iter().position(|n| n == name).unwrap()].clone();
    let major: f64 = cell("major").parse().unwrap();
    let minor: f64 = cell("minor").parse().unwrap();
    assert!((major - 6.0 * scale).abs() < 1e-9 && (minor - 3.0 * scale).abs() < 1e-9, "{major} {minor}");
    assert_eq!((cell("pa"), cell("angle_px")), ("NaN".to_string(), "NaN".to_string()));
    // ds9 has no ellipse without an angle: the circle of the major axis.
    let region = on_sky.regions();
    let line = region.lines().nth(4).unwrap();
    assert!(line.starts_with("circle(") && line.ends_with("# text={3}"), "{line}");
    let radius: f64 = line.split(',').nth(2).unwrap().split_once('"').unwrap().0.parse().unwrap();
    assert!((radius - 3.0 * scale).abs() < 1e-4, "{line}");
    assert_eq!(in_pixels.regions().lines().nth(4), Some("circle(101.5000,301.2500,3.0000) # text={3}"));
}

#[test]
fn galactic_images_have_galactic_columns_and_regions() {
    let galactic = coordinates(&[
        "CTYPE1  = 'GLON-CAR'",
        "CTYPE2  = 'GLAT-CAR'",
        "CRVAL1  = 120.0",
        "CDELT1  = -0.1",
        "CDELT2  = 0.1",
    ]);
    let catalog = Catalog::new("plane.fits", galactic, None, vec![fitted(1, 5.0, 6.0)]);
    let (names, _) = table(&catalog.csv());
    assert!(
        names.ends_with(
            &["glon", "glat", "glon_err", "glat_err", "major", "major_err", "minor", "minor_err", "pa", "pa_err"]
                .map(String::from)
        ),
        "{:?}",
        names
    );
    assert!(catalog.votable().contains("<COOSYS ID=\"sky\" system=\"galactic\"/>"));
    assert!(catalog.votable().contains("ucd=\"pos.galactic.lon;meta.main\" ref=\"sky\""));
    assert_eq!(catalog.regions().lines().nth(3), Some("galactic"));
}

#[test]
fn a_frame_ds9_lacks_gets_image_regions_and_sky_columns() {
    // FK5 at J2015.5: ds9's fk5 is J2000, so the regions are drawn in pixels, saying why.
    let fk5 = coordinates(&["CTYPE1  = 'RA---TAN'", "CTYPE2  = 'DEC--TAN'", "CDELT1  = -1E-3", "EQUINOX = 2015.5"]);
    let catalog = Catalog::new("sky.fits", fk5, None, vec![fitted(1, 5.0, 6.0)]);
    let regions = catalog.regions();
    let lines: Vec<&str> = regions.lines().collect();
    assert_eq!(
        lines[3..],
        [
            "# ds9 has no FK5 J2015.5 frame: image coordinates",
            "image",
            "ellipse(6.0000,7.0000,3.0000,1.5000,30.0000) # text={1}"
        ]
    );
    let (names, _) = table(&catalog.csv());
    assert!(names.contains(&"ra".to_string()));
}

#[test]
fn a_source_off_the_projection_is_flagged_with_empty_sky_columns() {
    // SIN of 1° pixels: 100 pixels out is past the edge of the visible hemisphere.
    let coordinates = coordinates(&["CTYPE1  = 'RA---SIN'", "CTYPE2  = 'DEC--SIN'", "CDELT1  = -1.0", "CDELT2  = 1.0"]);
    let catalog = Catalog::new("sky.fits", coordinates, None, vec![fitted(1, 0.0, 0.0), fitted(2, 100.0, 0.0)]);
    assert_eq!(catalog.rows.iter().map(|r| r.flags).collect::<Vec<_>>(), [0, OFF_SKY]);
    let (names, rows) = table(&catalog.csv());
    assert!(!cell(&names, &rows[0], "ra").is_empty());
    for name in ["ra", "dec", "ra_err", "major", "pa"] {
        assert_eq!(cell(&names, &rows[1], name), "", "{}", name);
    }
    assert_eq!(cell(&names, &rows[1], "flags"), OFF_SKY.to_string());
    let regions = catalog.regions();
    assert!(regions.contains("# island 2: outside the projection, not drawn"), "{}", regions);
    assert_eq!(regions.lines().filter(|l| l.starts_with("ellipse(")).count(), 1);
}

#[test]
fn catalogs_are_written_to_their_files_or_an_error_names_them() {
    let dir = scratch("catalog", "write");
    let catalog = Catalog::new("sky.fits", sin(), None, vec![fitted(1, 1.0, 2.0)]);
    catalog.write_csv(&dir.join("c.csv")).unwrap();
    catalog.write_votable(&dir.join("c.vot")).unwrap();
    catalog.write_regions(&dir.join("c.reg")).unwrap();
    assert_eq!(std::fs::read_to_string(dir.join("c.csv")).unwrap(), catalog.csv());
    assert_eq!(std::fs::read_to_string(dir.join("c.vot")).unwrap(), catalog.votable());
    assert_eq!(std::fs::read_to_string(dir.join("c.reg")).unwrap(), catalog.regions());
    // The sources alone, as a program without the image's header writes them: pixels, no noise.
    catalog::write_csv(&dir.join("s.csv"), &[source()]).unwrap();
    let (names, rows) = table(&std::fs::read_to_string(dir.join("s.csv")).unwrap());
    assert_eq!((cell(&names, &rows[0], "x"), cell(&names, &rows[0], "rms")), ("0.3333333333333333", ""));
    let missing = dir.join("no-such-dir").join("c.vot");
    assert!(error_of(catalog.write_votable(&missing)).contains("c.vot: cannot write"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_json_catalog_holds_its_sources_as_written_each_on_a_line() {
    #[derive(serde::Serialize)]
    struct Document<'a> {
        image: &'a str,
        sources: Vec<catalog::JsonItem>,
    }
    // More rows than a thread writes at once, so that the pieces are put back in order.
    let rows: Vec<Row> = (0..600).map(|i| fitted(i, f64::from(i) + 0.125, 1.0 / 3.0)).collect();
    let path = scratch("catalog", "json").join("sources.json");
    let document = Document { image: "sky.fits", sources: catalog::json_items(&path, &rows).unwrap() };
    catalog::write_json(&path, &document).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let read: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(read["image"], "sky.fits");
    assert_eq!(read["sources"], serde_json::to_value(&rows).unwrap());
    let lines: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with("{\"island\":")).collect();
    assert_eq!(lines.len(), rows.len(), "a line a source");
    assert!(text.ends_with("  ]\n}\n"), "{}", &text[text.len() - 20..]);
}
