//! Scoring a catalog against the truth: on hand-built truths and catalogs whose scores follow
//! from how they are built, on a perfect catalog of a survey sky, and on bad input.

use radio::sky::{Component, Kind, Noise, NoiseProfile, Population, Sky, NOISE};
use radio::sources::score::{
    parse_detections, parse_truth, read_detections, read_truth, score, Detection, ScoreOptions, Truth, SNR_EDGES,
};
use std::f64::consts::TAU;

/// A point source of σ 1.5 at (x, y) with `peak`, its flux the integral, on noise of σ 1.
fn point(x: f64, y: f64, peak: f64) -> Truth {
    let sigma = 1.5;
    let component = Component {
        kind: Kind::Point,
        x,
        y,
        peak,
        sigma,
        sigma_minor: sigma,
        pa: 0.0,
        radius: 0.0,
        flux: TAU * sigma * sigma * peak,
    };
    Truth { component, noise: 1.0 }
}

/// A core (a blob of σ 20) or a shell (a ring of radius 60 and σ 4) at (x, y).
fn extended(kind: Kind, x: f64, y: f64) -> Truth {
    let (sigma, radius) = if kind == Kind::Core { (20.0, 0.0) } else { (4.0, 60.0) };
    let component = Component { kind, peak: 100.0, sigma, sigma_minor: sigma, radius, ..point(x, y, 1.0).component };
    Truth { component, noise: 1.0 }
}

/// A detection of `t` moved by `offset` along x, its peak and flux off by the factors given.
fn detect(t: &Truth, offset: f64, peak: f64, flux: f64) -> Detection {
    let c = &t.component;
    Detection { x: c.x + offset, y: c.y, peak: c.peak * (1.0 + peak), flux: c.flux * (1.0 + flux), snr: Some(t.snr()) }
}

/// The middle one of an odd number of values.
fn middle(mut values: Vec<f64>) -> f64 {
    assert_eq!(values.len() % 2, 1, "an odd count, so that the median is one of them");
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs().max(1.0))
}

/// One S/N bin of the construction: its sources' S/N, how many, how many are found, and the
/// found ones' offset and relative peak and flux errors.
struct Plan {
    snr: f64,
    injected: usize,
    found: usize,
    offset: f64,
    peak: f64,
    flux: f64,
}

#[test]
fn scores_follow_from_the_construction() {
    // A row of sources per S/N bin (SNR_EDGES: below 5, 5–10, 10–20, 20–50, 50–100, 100 up),
    // 20 pixels apart: no detection is within 3 pixels of two.
    let plans = [
        Plan { snr: 3.0, injected: 10, found: 2, offset: 1.2, peak: 0.30, flux: -0.5 },
        Plan { snr: 7.0, injected: 9, found: 6, offset: 0.6, peak: -0.10, flux: 0.2 },
        Plan { snr: 15.0, injected: 8, found: 7, offset: 0.2, peak: 0.04, flux: -0.08 },
        Plan { snr: 30.0, injected: 7, found: 7, offset: 0.05, peak: -0.01, flux: 0.02 },
        Plan { snr: 70.0, injected: 6, found: 5, offset: 0.02, peak: 0.005, flux: 0.01 },
        Plan { snr: 150.0, injected: 5, found: 5, offset: 0.01, peak: -0.002, flux: 0.004 },
    ];
    let mut truth = Vec::new();
    let mut detections = Vec::new();
    for (row, plan) in plans.iter().enumerate() {
        for i in 0..plan.injected {
            let t = point(20.0 * i as f64, 20.0 * row as f64, plan.snr);
            if i < plan.found {
                detections.push(detect(&t, plan.offset, plan.peak, plan.flux));
            }
            truth.push(t);
        }
    }
    let found: usize = plans.iter().map(|p| p.found).sum();
    // False detections between the rows, at S/N 6 (the 5–10 bin), and one without an S/N.
    let false_detections = 4;
    for i in 0..false_detections {
        let snr = (i > 0).then_some(6.0);
        detections.push(Detection { x: 20.0 * i as f64 + 10.0, y: 10.0, peak: 6.0, flux: 40.0, snr });
    }
    // A core far off: on its centre, within its half-maximum radius, and one on its faint wings
    // (at 1.5σ its brightness is e^-1.125 = 0.32 of its peak), a false detection.
    let core = extended(Kind::Core, 1000.0, 1000.0);
    let half_maximum = 20.0 * (2.0 * std::f64::consts::LN_2).sqrt();
    for (dx, snr) in [(0.0, 100.0), (0.95 * half_maximum, 60.0), (1.5 * 20.0, 30.0)] {
        detections.push(Detection { x: 1000.0 + dx, y: 1000.0, peak: 1.0, flux: 1.0, snr: Some(snr) });
    }
    // A shell: fragments on its ridge and within its half-maximum width, and the whole ring,
    // whose centroid is its centre.
    let shell = extended(Kind::Shell, 2000.0, 500.0);
    detections.push(Detection { x: 2000.5, y: 500.5, peak: 1.0, flux: 1.0, snr: Some(40.0) });
    let on_ridge = 5;
    for i in 0..on_ridge {
        let angle = TAU * i as f64 / on_ridge as f64;
        let r = 60.0 + 4.0 * (i as f64 - 2.0) / 2.0;
        detections.push(Detection {
            x: 2000.0 + r * angle.cos(),
            y: 500.0 + r * angle.sin(),
            peak: 1.0,
            flux: 1.0,
            snr: None,
        });
    }
    truth.extend([core, shell]);

    let options = ScoreOptions::default();
    let s = score(&truth, &detections, &options).unwrap();
    let injected: usize = plans.iter().map(|p| p.injected).sum();
    assert_eq!((s.detections, s.on_core, s.on_shell), (detections.len(), 2, on_ridge + 1));
    assert_eq!((s.completeness.count, s.completeness.of), (found, injected));
    // Scored: the matches, the false ones and the core's wing.
    assert_eq!((s.reliability.count, s.reliability.of), (found, found + false_detections + 1));
    assert_eq!(s.unknown_snr, 1);
    assert_eq!(s.bins.len(), SNR_EDGES.len() + 1);
    for (bin, plan) in s.bins.iter().zip(&plans) {
        assert!(bin.low < plan.snr && plan.snr < bin.high);
        assert_eq!((bin.completeness.count, bin.completeness.of), (plan.found, plan.injected));
        assert!(close(bin.completeness.value, plan.found as f64 / plan.injected as f64));
        assert_eq!(bin.errors.matched, plan.found);
        assert!(close(bin.errors.position, plan.offset), "{:?}", bin);
        assert!(close(bin.errors.peak, plan.peak.abs()) && close(bin.errors.flux, plan.flux.abs()), "{:?}", bin);
        // Reliability by the detection's own S/N: the matches, plus the false ones at S/N 6
        // and the core's wing at 30.
        let false_here = (plan.snr == 7.0) as usize * (false_detections - 1) + (plan.snr == 30.0) as usize;
        assert_eq!((bin.reliability.count, bin.reliability.of), (plan.found, plan.found + false_here), "{:?}", bin);
    }
    let above = |cut: f64| plans.iter().filter(move |p| p.snr > cut);
    let (found_above, injected_above) = above(10.0).fold((0, 0), |(f, n), p| (f + p.found, n + p.injected));
    assert_eq!((s.completeness_above.count, s.completeness_above.of), (found_above, injected_above));
    // Above 20σ: the medians of each found source's errors.
    let errors = |of: fn(&Plan) -> f64| middle(above(20.0).flat_map(|p| vec![of(p).abs(); p.found]).collect());
    assert_eq!(s.errors_above.matched, above(20.0).map(|p| p.found).sum::<usize>());
    assert!(close(s.errors_above.position, errors(|p| p.offset)));
    assert!(close(s.errors_above.peak, errors(|p| p.peak)) && close(s.errors_above.flux, errors(|p| p.flux)));
    assert_eq!(s.kinds.len(), 1);
    assert_eq!((s.kinds[0].kind, s.kinds[0].completeness), ("point", s.completeness));

    // The table: a row per bin, and the summary's numbers.
    let table = s.to_string();
    let rows: Vec<&str> = table.lines().skip(1).take(s.bins.len()).collect();
    for (row, label) in rows.iter().zip(["< 5", "5–10", "10–20", "20–50", "50–100", "≥ 100"]) {
        assert!(row.starts_with(label), "{}", row);
    }
    assert!(table.contains(&format!("completeness above 10σ: {}", s.completeness_above)), "{}", table);
    assert!(table.contains(&format!("{}; {} false", s.reliability, false_detections + 1)), "{}", table);
    assert!(table.contains("scored detections without an S/N: 1 "), "{}", table);
}

#[test]
fn matching_is_one_to_one_and_closest_first() {
    // Two sources 2 pixels apart on a row. The first detection is 0.5 from A and 1.5 from B;
    // the second 0.8 from A and 2.8 from B. The closest pair (first, A) goes first; the
    // second's nearest, A, is taken, so it matches B.
    let (a, b) = (point(100.0, 100.0, 50.0), point(102.0, 100.0, 50.0));
    let first = detect(&a, 0.5, 0.0, 0.0);
    let second = detect(&a, -0.8, 0.0, 0.0);
    let distance = |d: &Detection, t: &Truth| (d.x - t.component.x).hypot(d.y - t.component.y);
    assert!(distance(&second, &a) < distance(&second, &b) && distance(&second, &b) < 3.0);
    let truth = [a.clone(), b.clone()];
    // In either order of the catalog.
    for detections in [[first, second], [second, first]] {
        let s = score(&truth, &detections, &ScoreOptions::default()).unwrap();
        assert_eq!((s.completeness.count, s.reliability.count, s.reliability.of), (2, 2, 2));
        assert!(close(s.errors_above.position, (0.5 + distance(&second, &b)) / 2.0));
    }
    // Two detections of one source: one is matched, the other is false.
    let s = score(
        std::slice::from_ref(&a),
        &[detect(&a, 0.1, 0.0, 0.0), detect(&a, -0.2, 0.0, 0.0)],
        &ScoreOptions::default(),
    )
    .unwrap();
    assert_eq!((s.completeness.count, s.reliability.count, s.reliability.of), (1, 1, 2));
    assert!(close(s.errors_above.position, 0.1));
    // The radius is inclusive.
    let options = ScoreOptions { radius: 2.0, ..ScoreOptions::default() };
    for (offset, matched) in [(2.0, 1), (2.0 + 1e-9, 0)] {
        let s = score(std::slice::from_ref(&a), &[detect(&a, offset, 0.0, 0.0)], &options).unwrap();
        assert_eq!(s.reliability.count, matched, "offset {}", offset);
    }
}

#[test]
fn a_detection_that_matches_a_source_is_never_on_the_core_or_the_shell() {
    // A source at the shell's centre: its detection is matched, and a second one there, which
    // matches nothing, is the whole ring's.
    let shell = extended(Kind::Shell, 300.0, 300.0);
    let inside = point(300.0, 300.0, 40.0);
    let detections = [detect(&inside, 0.3, 0.0, 0.0), detect(&inside, -1.0, 0.0, 0.0)];
    let s = score(&[shell, inside], &detections, &ScoreOptions::default()).unwrap();
    assert_eq!((s.completeness.count, s.reliability.count, s.reliability.of, s.on_shell), (1, 1, 1, 1));
    assert!(close(s.errors_above.position, 0.3));
}

#[test]
fn a_perfect_catalog_of_a_survey_sky_scores_perfectly() {
    for profile in [NoiseProfile::Constant, NoiseProfile::PrimaryBeam] {
        let sky =
            Sky { side: 1024, population: Population::survey(60), noise: Noise { sigma: NOISE, profile }, blank: true };
        let components = sky.components(3).unwrap();
        let truth = parse_truth(&sky.truth_csv(&components), None).unwrap();
        // The truth reads back as drawn, with the noise at each centre.
        assert_eq!(truth.len(), components.len());
        for (t, c) in truth.iter().zip(&components) {
            assert_eq!(Component { sigma_minor: c.sigma_minor, ..t.component.clone() }, *c);
            assert!((t.component.sigma_minor / c.sigma_minor - 1.0).abs() < 1e-12);
            assert_eq!(t.noise, sky.noise.at(sky.side, c.x, c.y));
        }
        let sources: Vec<&Truth> = truth.iter().filter(|t| t.is_source()).collect();
        assert_eq!(sources.len(), 60 + 15 + 2 * 7);
        let detections: Vec<Detection> = sources.iter().map(|t| detect(t, 0.0, 0.0, 0.0)).collect();
        let s = score(&truth, &detections, &ScoreOptions::default()).unwrap();
        assert_eq!((s.completeness.count, s.completeness.of), (sources.len(), sources.len()));
        assert_eq!(
            (s.reliability.count, s.reliability.of, s.on_core, s.on_shell),
            (sources.len(), sources.len(), 0, 0)
        );
        for bin in &s.bins {
            assert_eq!(bin.completeness.count, bin.completeness.of);
            assert_eq!(bin.reliability, bin.completeness);
            assert!(bin.errors.matched == 0 || bin.errors.position == Some(0.0));
        }
        let kinds: Vec<(&str, usize)> = s.kinds.iter().map(|k| (k.kind, k.completeness.count)).collect();
        assert_eq!(kinds, [("point", 60), ("ellipse", 15), ("pair", 14)]);
        assert_eq!((s.errors_above.peak, s.errors_above.flux), (Some(0.0), Some(0.0)));
    }
}

#[test]
fn a_lesson_truth_takes_the_noise_given() {
    let sky = Sky { side: 256, population: Population::lesson(4), noise: Noise::constant(NOISE), blank: false };
    let text = sky.truth_csv(&sky.components(1).unwrap());
    let truth = parse_truth(&text, Some(0.02)).unwrap();
    assert!(truth.len() == 6 && truth.iter().all(|t| t.noise == 0.02 && t.component.pa == 0.0));
    assert!(truth.iter().all(|t| t.component.sigma_minor == t.component.sigma));
    // Columns in another order, blank lines and spaces are read alike.
    let reordered = "kind, radius, sigma, flux, peak, y, x\n\npoint, 0, 1.5, 14.1, 1, 20, 10\n";
    let t = &parse_truth(reordered, Some(0.1)).unwrap()[0];
    assert_eq!(
        (t.component.x, t.component.y, t.component.peak, t.component.flux, t.snr()),
        (10.0, 20.0, 1.0, 14.1, 10.0)
    );
}

#[test]
fn another_finder_s_catalog_is_read_in_any_column_order() {
    let text = "snr, flux, peak, y, x\n\n12.5, 30.25, 1.5, 20.5, 10.25\nnan, nan, NaN, 3, 4\n";
    let detections = parse_detections(text).unwrap();
    assert_eq!(detections[0], Detection { x: 10.25, y: 20.5, peak: 1.5, flux: 30.25, snr: Some(12.5) });
    let second = detections[1];
    assert!((second.x, second.y) == (4.0, 3.0) && second.peak.is_nan() && second.flux.is_nan());
    assert!(second.snr.is_some_and(f64::is_nan));
    // Without an `snr` column, no detection has one.
    let plain = parse_detections("x,y,peak,flux\n1,2,3,4\n").unwrap();
    assert_eq!(plain, [Detection { x: 1.0, y: 2.0, peak: 3.0, flux: 4.0, snr: None }]);
    // Read from a file, the same.
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("finder.csv");
    std::fs::write(&file, text).unwrap();
    assert_eq!(read_detections(&file).unwrap()[0], detections[0]);
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn bad_catalogs_are_clear_errors() {
    let cases = [
        ("", "the catalog is empty"),
        ("x,y,peak\n", "the catalog's header has no `flux` column"),
        ("x,y,peak,flux\n1,2,3\n", "line 2: 3 fields, but the header names 4"),
        ("x,y,peak,flux\n1,2,three,4\n", "line 2: peak `three` is not a number"),
        ("x,y,peak,flux\nnan,2,3,4\n", "line 2: the position (NaN, 2) is not finite"),
        ("x,y,peak,flux,snr\n1,2,3,4,high\n", "line 2: snr `high` is not a number"),
    ];
    for (text, needle) in cases {
        let message = parse_detections(text).unwrap_err().to_string();
        assert!(message.contains(needle), "{:?}: {}", text, message);
    }
    let missing = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-catalog.csv");
    let message = read_detections(&missing).unwrap_err().to_string();
    assert!(message.contains("no-such-catalog.csv") && message.contains("cannot read"), "{}", message);
}

#[test]
fn bad_truths_options_and_detections_are_clear_errors() {
    let header = "x,y,peak,flux,sigma,radius,kind,major,minor,pa,noise";
    let line = "10,20,1,14.1,1.5,0,point,3.5,3.5,0,0.1";
    let cases = [
        ("", "the truth is empty"),
        ("x,y,peak,flux,sigma,kind\n", "no `radius` column"),
        (&format!("{}\n{}\n10,20,1\n", header, line) as &str, "line 3: 3 fields, but the header names 11"),
        (
            &format!("{}\n{}\n", header, line.replace(",1,14.1", ",one,14.1")),
            "line 2: peak `one` is not a finite number",
        ),
        (
            &format!("{}\n{}\n", header, line.replace("point", "star")),
            "line 2: kind `star` is none of core, shell, point, ellipse, pair",
        ),
        (&format!("{}\n{}\n", header, line.replace(",0.1", ",0")), "line 2: noise must be positive (got 0)"),
        (&format!("{}\n{}\n", header, line.replace(",1.5,", ",inf,")), "line 2: sigma `inf` is not a finite number"),
    ];
    for (text, needle) in cases {
        let message = parse_truth(text, None).unwrap_err().to_string();
        assert!(message.contains(needle), "{:?}: {}", text, message);
    }
    let lesson = "x,y,peak,flux,sigma,radius,kind\n10,20,1,14.1,1.5,0,point\n";
    for noise in [None, Some(0.0), Some(f64::NAN)] {
        let message = parse_truth(lesson, noise).unwrap_err().to_string();
        assert!(message.contains("the truth has no `noise` column: give the image's noise σ"), "{}", message);
    }
    let missing = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-truth.csv");
    let message = read_truth(&missing, Some(1.0)).unwrap_err().to_string();
    assert!(message.contains("no-such-truth.csv") && message.contains("cannot read"), "{}", message);
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bad-truth.csv");
    std::fs::write(&file, "x,y\n").unwrap();
    let message = read_truth(&file, Some(1.0)).unwrap_err().to_string();
    assert!(message.contains("bad-truth.csv") && message.contains("no `peak` column"), "{}", message);
    std::fs::remove_file(&file).unwrap();

    let truth = [point(0.0, 0.0, 10.0)];
    let detection = detect(&truth[0], 0.0, 0.0, 0.0);
    let defaults = ScoreOptions::default();
    for (options, needle) in [
        (
            ScoreOptions { radius: 0.0, ..defaults.clone() },
            "the match radius must be a positive number of pixels (got 0)",
        ),
        (ScoreOptions { zone_level: 1.5, ..defaults.clone() }, "(got 1.5)"),
        (
            ScoreOptions { edges: vec![10.0, 5.0], ..defaults.clone() },
            "edges must be finite and increasing (got [10.0, 5.0])",
        ),
        (ScoreOptions { errors_above: f64::NAN, ..defaults.clone() }, "the S/N cuts must be finite"),
    ] {
        let message = score(&truth, &[detection], &options).unwrap_err().to_string();
        assert!(message.contains(needle), "{}", message);
    }
    let lost = Detection { x: f64::NAN, ..detection };
    let message = score(&truth, &[detection, lost], &defaults).unwrap_err().to_string();
    assert!(message.contains("detection 1 is at (NaN, 0): not a finite position"), "{}", message);
}
