//! What `cargo bench` (`host/benches/kernels.rs`) registers with criterion, and its settings.
//! The IDs are made here, by the one function the bench calls, so that a test without a GPU can
//! list every ID the bench registers and check that none repeats: criterion stops the whole
//! run at the first repeated ID.

use crate::registry::Variant;
use std::time::Duration;

/// Samples per benchmark (criterion's minimum).
pub const SAMPLES: usize = 10;
/// Criterion's warm-up per benchmark.
pub const WARM_UP: Duration = Duration::from_millis(300);
/// Criterion's measurement per benchmark: thousands of launches of a GPU kernel, a few dozen
/// runs of the slowest CPU reference.
pub const MEASUREMENT: Duration = Duration::from_millis(800);

/// What one benchmark times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// Launches of this variant (CUDA events, L2 flushed before each).
    Gpu(&'a Variant),
    /// The CPU reference.
    Cpu,
}

/// One benchmark in a family's group: criterion's ID is `<family>/<function>/<parameter>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bench<'a> {
    pub function: String,
    pub parameter: String,
    pub target: Target<'a>,
}

/// The benchmarks of one size of a family: each variant on the GPU, then the CPU reference
/// when `cpu` (a counter's reference is its thread count: nothing to time). The parameter is
/// the whole options string, not the size a sweep plots at, so two sizes of a family never
/// share an ID (the u32 and f32 histograms of one length did).
pub fn benches<'a>(options: &str, variants: &'a [Variant], cpu: bool) -> Vec<Bench<'a>> {
    let parameter = parameter(options);
    let bench = |function: String, target| Bench { function, parameter: parameter.clone(), target };
    let gpu = variants.iter().map(|v| bench(format!("gpu-{}", v.name), Target::Gpu(v)));
    gpu.chain(cpu.then(|| bench("cpu".into(), Target::Cpu))).collect()
}

/// An options string as an ID part: `--n 65536 --input f32` reads `n=65536 input=f32`.
fn parameter(options: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    for word in options.split_whitespace() {
        match (word.strip_prefix("--"), parts.last_mut()) {
            (Some(flag), _) => parts.push(flag.to_string()),
            // A value joins the flag before it.
            (None, Some(last)) if !last.contains('=') => *last = format!("{last}={word}"),
            (None, _) => parts.push(word.to_string()),
        }
    }
    if parts.is_empty() {
        "defaults".into()
    } else {
        parts.join(" ")
    }
}

/// `cargo bench`'s wall time for `benches` benchmarks, over-estimated: criterion doubles the
/// iterations until the warm-up has passed (up to twice the warm-up), then measures, and each
/// benchmark's preparation, analysis and printing are taken as a quarter of a second.
pub fn wall_time(benches: usize) -> Duration {
    (2 * WARM_UP + MEASUREMENT + Duration::from_millis(250)) * benches as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::FAMILIES;
    use crate::registry::Purpose;
    use std::collections::HashSet;

    /// Every ID `cargo bench` registers, as (family, function, parameter). The CPU reference
    /// is counted for every size: a family that skips it only registers fewer.
    fn every_id() -> Vec<(&'static str, String, String)> {
        let mut ids = Vec::new();
        for family in FAMILIES {
            for options in family.sizes(Purpose::Criterion) {
                let what = format!("{} {}", family.name(), options);
                let matches = family.parse(&options).unwrap_or_else(|e| panic!("{what}: {e:#}"));
                let variants = family.variants(&matches).unwrap_or_else(|e| panic!("{what}: {e:#}"));
                ids.extend(
                    benches(&options, &variants, true).into_iter().map(|b| (family.name(), b.function, b.parameter)),
                );
            }
        }
        ids
    }

    #[test]
    fn every_benchmark_id_is_unique() {
        let ids = every_id();
        let mut seen = HashSet::new();
        for id in &ids {
            assert!(seen.insert(id), "cargo bench would register {}/{}/{} twice", id.0, id.1, id.2);
        }
        // Every size of every family has its CPU row, the histogram's u32 and f32 inputs of one
        // length included (they once shared one).
        for family in FAMILIES {
            let cpu_rows = ids.iter().filter(|id| id.0 == family.name() && id.1 == "cpu").count();
            assert_eq!(cpu_rows, family.sizes(Purpose::Criterion).len(), "{}", family.name());
        }
    }

    #[test]
    fn cargo_bench_fits_its_time_on_the_gpu_machine() {
        let count = every_id().len();
        let estimate = wall_time(count);
        assert!(estimate <= Duration::from_secs(300), "{count} benchmarks take about {estimate:?}: over 5 minutes");
    }

    #[test]
    fn ids_name_the_options_and_the_variant() {
        let variants = [Variant::new("global-f32", "histogram_global_f32")];
        let ids = benches("--n 65536 --input f32", &variants, true);
        let names: Vec<_> = ids.iter().map(|b| format!("{}/{}", b.function, b.parameter)).collect();
        assert_eq!(names, ["gpu-global-f32/n=65536 input=f32", "cpu/n=65536 input=f32"]);
        assert_eq!((ids[0].target, ids[1].target), (Target::Gpu(&variants[0]), Target::Cpu));
        assert_eq!(benches("--threads 1024", &variants, false).len(), 1, "no CPU benchmark");
        assert_eq!(parameter("--m 8 --all-configs --variant a --variant b"), "m=8 all-configs variant=a variant=b");
        assert_eq!(parameter(""), "defaults");
    }
}
