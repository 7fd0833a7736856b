//! What the registry of kernel families knows of each: the traits a family's host file
//! implements, and [`run`], the one loop that checks and times any workload. The list itself,
//! [`crate::ops::FAMILIES`], which the CLI, `all`, the size sweep, `info --kernels`, the
//! criterion benches, the tests and the sanitizer iterate, is in `ops/mod.rs`.
//!
//! A family's host file (`ops/<name>.rs`) implements [`Kernel`]: its CLI options, its launch
//! shapes, its sizes for each purpose, its launch checks' cases, and a prepared [`Workload`]
//! (inputs on the GPU, the launches, the CPU reference, the check). Adding a family is its
//! kernel file, its host file and one line in [`crate::ops::FAMILIES`]. [`run`] is the one loop that checks and times any workload.

use crate::check::Check;
use crate::data::timed;
use crate::gpu::{Cache, Gpu, GpuResult, LaunchConfig};
use crate::launch_cases::{LaunchCases, Memory};
use crate::multi::SplitReport;
use crate::report::{Measured, Report, Work};
use anyhow::{Context, Result};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{ArgMatches, Args, Command, FromArgMatches};
use cuda_kernels::{KernelStep, Named};
use std::marker::PhantomData;

/// What a list of sizes is for. Each size is a string of the family's CLI options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// The default size of `all`: what each family's own command runs without options.
    Default,
    /// Small, odd shapes (1, primes, non-multiples of tiles): GPU tests, sanitizer, memory check.
    Check,
    /// The size sweep of `host bench --quick`.
    Quick,
    /// The size sweep of `host bench`.
    Full,
    /// `cargo bench`: sizes at which criterion can also sample the CPU reference.
    Criterion,
}

/// Sweep sizes of the kernels over `n` elements: `--n 2^p` for a range of powers.
pub fn one_per_element_sizes(purpose: Purpose) -> Vec<String> {
    let powers: &[u32] = match purpose {
        Purpose::Default => return vec![String::new()],
        Purpose::Check => &[10],
        Purpose::Quick => &[20, 24, 28],
        Purpose::Full => &[16, 18, 20, 22, 24, 26, 28],
        Purpose::Criterion => &[16, 20, 24],
    };
    powers.iter().map(|p| format!("--n {}", 1u64 << p)).collect()
}

/// A clap parser for a library enum: its values by name (`_` written `-`, as clap spells
/// them), listed in `--help`.
pub fn named<T: Named + Send + Sync>() -> impl TypedValueParser<Value = T> {
    let spelled = |value: T| value.name().replace('_', "-");
    PossibleValuesParser::new(T::ALL.iter().map(|&v| spelled(v)))
        .map(move |name| T::ALL.iter().copied().find(|&v| spelled(v) == name).expect("clap checked the name"))
}

/// A library step as the registry runs it.
pub trait StepVariant: KernelStep {
    /// Its name and kernel.
    fn variant(self) -> Variant {
        Variant::new(self.name(), self.kernel())
    }
}

impl<S: KernelStep> StepVariant for S {}

/// The variants of `chosen` steps, or of all of them when none was chosen.
pub fn variants<S: KernelStep>(chosen: &[S]) -> Vec<Variant> {
    let chosen = if chosen.is_empty() { S::ALL } else { chosen };
    chosen.iter().map(|s| s.variant()).collect()
}

/// One variant as launched: the name reports use and the kernel it launches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    pub name: String,
    pub kernel: String,
}

impl Variant {
    pub fn new(name: impl Into<String>, kernel: impl Into<String>) -> Self {
        Self { name: name.into(), kernel: kernel.into() }
    }
}

/// The check of one variant, and what else is worth saying about the result.
pub struct Checked {
    pub check: Check,
    pub note: Option<String>,
}

impl From<Check> for Checked {
    fn from(check: Check) -> Self {
        Self { check, note: None }
    }
}

/// A family's inputs on the GPU, ready to launch any of its selected variants.
pub trait Workload {
    fn shape(&self) -> String;
    /// The size a sweep plots it at: elements, or the side of a square image or matrix.
    fn size(&self) -> u64;
    /// The key in `peers.json` (`bench/peers/run`) of the library doing the same work.
    fn peer(&self) -> Option<String> {
        None
    }
    /// Bytes or flops one launch must do, for the throughput.
    fn work(&self) -> Work;
    /// Bytes or flops one launch of `variant` must do, where a family's variants differ in it
    /// ([`Workload::work`] otherwise).
    fn work_of(&self, _variant: &Variant) -> Work {
        self.work()
    }
    /// The variants to run, as selected by the options.
    fn variants(&self) -> &[Variant];
    /// Variants the options select that this GPU cannot run, each with why (the Hopper steps
    /// on another GPU): [`run`] names them instead of running them.
    fn unavailable(&self) -> Vec<(Variant, String)> {
        Vec::new()
    }
    /// Queues `variant`'s launch on this workload's buffers.
    ///
    /// # Safety
    /// Queued, not finished, on return: the workload must not be dropped until the stream has
    /// run it (synchronize first; see `Gpu::launch`).
    unsafe fn launch(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<()>;
    /// Before every launch, outside the timing: clears what launches accumulate into.
    fn reset(&self, _gpu: &Gpu) -> GpuResult<()> {
        Ok(())
    }
    /// Before the checked launch: fills the output with NaN / 0xFF, so an element the kernel
    /// does not write fails the check, and restores any input a launch updates in place.
    fn before_check(&self, gpu: &Gpu) -> GpuResult<()>;
    /// Computes the CPU reference, once, before any check.
    fn compute_reference(&mut self);
    /// Compares the GPU's result of the last launch of `variant` with the CPU reference.
    fn check(&self, gpu: &Gpu, variant: &Variant) -> GpuResult<Checked>;
    /// Once, after every variant is checked and timed: writes the GPU's result to the file the
    /// options name (`--out`, `--output`), if any, and acts on the results (the matmul tuner
    /// keeps the fastest configuration and marks it).
    fn finish(&self, _gpu: &Gpu, _reports: &mut [Report]) -> GpuResult<()> {
        Ok(())
    }
}

/// A kernel family as its host file writes it; [`Entry`] turns it into a [`Family`].
pub trait Kernel: Workload + Sized + 'static {
    /// The CLI subcommand and the name in reports; the kernel file and host module are
    /// `NAME` with `_` for `-`.
    const NAME: &'static str;
    const ABOUT: &'static str;
    type Options: Args + FromArgMatches;
    /// Every kernel of the family with the launch shape of its default run on a GPU of `sms` SMs.
    fn launches(sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>>;
    fn sizes(purpose: Purpose) -> Vec<String>;
    /// The variants `options` select, known without a GPU (the criterion benches' IDs are
    /// listed from them). `prepare` launches these, less any the device cannot run (histogram
    /// bins beyond its shared memory) and plus matmul's `tuned` when the tuning cache has one.
    fn variants_for(options: &Self::Options) -> GpuResult<Vec<Variant>>;
    fn prepare(gpu: &Gpu, options: &Self::Options, seed: u64) -> GpuResult<Self>;
    /// `--gpus N`: the whole job divided among N GPUs, each opened here, instead of a
    /// [`Workload`] on one; `None` where the family has no such option or it was not given.
    fn split(_options: &Self::Options, _seed: u64, _iters: usize) -> Option<GpuResult<SplitReport>> {
        None
    }
    /// The launch checks' cases for `kernel`, one of [`Kernel::launches`]' kernels: arguments
    /// on `memory` its binding must accept and ones it must refuse (`host/tests/launch_checks.rs`).
    fn launch_cases(kernel: &str, memory: &mut Memory) -> LaunchCases;
}

/// The registry's view of a family.
pub trait Family: Sync {
    fn name(&self) -> &'static str;
    /// Its CLI subcommand with its options and their defaults.
    fn command(&self) -> Command;
    fn launches(&self, sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>>;
    fn sizes(&self, purpose: Purpose) -> Vec<String>;
    /// [`Kernel::variants_for`]: no GPU needed.
    fn variants(&self, options: &ArgMatches) -> Result<Vec<Variant>>;
    fn prepare(&self, gpu: &Gpu, options: &ArgMatches, seed: u64) -> Result<Box<dyn Workload>>;
    fn split(&self, options: &ArgMatches, seed: u64, iters: usize) -> Option<Result<SplitReport>>;
    /// [`Kernel::launch_cases`].
    fn launch_cases(&self, kernel: &str, memory: &mut Memory) -> LaunchCases;

    /// Every kernel the family launches.
    fn kernels(&self) -> Vec<&'static str> {
        // The names do not depend on the SM count.
        self.launches(1).map(|l| l.into_iter().map(|(kernel, _)| kernel).collect()).unwrap_or_default()
    }

    /// An options string such as `--m 67 --n 129 --k 33`, parsed as the CLI parses it.
    fn parse(&self, options: &str) -> Result<ArgMatches> {
        self.command()
            .try_get_matches_from(std::iter::once(self.name()).chain(options.split_whitespace()))
            .with_context(|| format!("parsing `{} {}`", self.name(), options))
    }

    /// [`Family::prepare`] from an options string.
    fn prepare_from(&self, gpu: &Gpu, options: &str, seed: u64) -> Result<Box<dyn Workload>> {
        self.prepare(gpu, &self.parse(options)?, seed)
    }
}

/// A [`Kernel`] as the registry lists it: each family's module declares its own as `ENTRY`.
pub struct Entry<K>(PhantomData<fn() -> K>);

impl<K> Entry<K> {
    /// The entry of `K`.
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<K> Default for Entry<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Kernel> Family for Entry<K> {
    fn name(&self) -> &'static str {
        K::NAME
    }

    fn command(&self) -> Command {
        K::Options::augment_args(Command::new(K::NAME).about(K::ABOUT))
    }

    fn launches(&self, sms: u32) -> GpuResult<Vec<(&'static str, LaunchConfig)>> {
        K::launches(sms)
    }

    fn sizes(&self, purpose: Purpose) -> Vec<String> {
        K::sizes(purpose)
    }

    fn variants(&self, options: &ArgMatches) -> Result<Vec<Variant>> {
        let options = K::Options::from_arg_matches(options).with_context(|| format!("{} options", K::NAME))?;
        Ok(K::variants_for(&options)?)
    }

    fn prepare(&self, gpu: &Gpu, options: &ArgMatches, seed: u64) -> Result<Box<dyn Workload>> {
        let options = K::Options::from_arg_matches(options).with_context(|| format!("{} options", K::NAME))?;
        Ok(Box::new(K::prepare(gpu, &options, seed)?))
    }

    fn split(&self, options: &ArgMatches, seed: u64, iters: usize) -> Option<Result<SplitReport>> {
        let options = match K::Options::from_arg_matches(options) {
            Ok(options) => options,
            Err(e) => return Some(Err(e).with_context(|| format!("{} options", K::NAME))),
        };
        K::split(&options, seed, iters).map(|report| report.with_context(|| format!("{} on several GPUs", K::NAME)))
    }

    fn launch_cases(&self, kernel: &str, memory: &mut Memory) -> LaunchCases {
        K::launch_cases(kernel, memory)
    }
}

/// How [`run`] times.
#[derive(Debug, Clone, Copy)]
pub struct Timer {
    pub launches: usize,
    pub cache: Cache,
}

/// Checks every selected variant of `workload` against the CPU reference, then times it.
pub fn run(gpu: &Gpu, family: &'static str, workload: &mut dyn Workload, timer: Timer) -> GpuResult<Vec<Report>> {
    let ((), cpu_ms) = timed(|| workload.compute_reference());
    let workload = &*workload;
    let mut reports = Vec::new();
    for variant in workload.variants() {
        workload.before_check(gpu)?;
        workload.reset(gpu)?;
        // SAFETY: the workload outlives the loop, and the
        // synchronize below and the timing's own wait come before it can go.
        unsafe { workload.launch(gpu, variant) }?;
        gpu.synchronize(&variant.kernel)?;
        let Checked { check, note } = workload.check(gpu, variant)?;
        let timing =
            // SAFETY: as above.
            gpu.time(timer.launches, timer.cache, || workload.reset(gpu), || unsafe { workload.launch(gpu, variant) })?;
        let measured = Measured {
            family,
            variant: variant.name.clone(),
            shape: workload.shape(),
            timing,
            work: workload.work_of(variant),
            cpu_ms: Some(cpu_ms),
            check,
            note,
        };
        reports.push(Report::new(gpu.info(), measured));
    }
    workload.finish(gpu, &mut reports)?;
    for (variant, why) in workload.unavailable() {
        eprintln!("{family} {}: not run: {why}", variant.name);
    }
    Ok(reports)
}

/// Prepares `family` at `options` and runs it.
pub fn run_options(
    gpu: &Gpu,
    family: &'static dyn Family,
    options: &str,
    seed: u64,
    timer: Timer,
) -> Result<Vec<Report>> {
    let mut workload = family.prepare_from(gpu, options, seed)?;
    run(gpu, family.name(), workload.as_mut(), timer).with_context(|| format!("{} {}", family.name(), options))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_size_parses() {
        for (i, family) in crate::ops::FAMILIES.iter().enumerate() {
            assert!(crate::ops::FAMILIES[..i].iter().all(|f| f.name() != family.name()), "{} twice", family.name());
            let kernels = family.kernels();
            assert!(!kernels.is_empty(), "{} has no kernels", family.name());
            for purpose in [Purpose::Default, Purpose::Check, Purpose::Quick, Purpose::Full, Purpose::Criterion] {
                let sizes = family.sizes(purpose);
                assert!(!sizes.is_empty(), "{} has no {:?} sizes", family.name(), purpose);
                for options in sizes {
                    let what = format!("{} {}", family.name(), options);
                    let matches = family.parse(&options).unwrap_or_else(|e| panic!("{what}: {e:#}"));
                    let variants = family.variants(&matches).unwrap_or_else(|e| panic!("{what}: {e:#}"));
                    assert!(!variants.is_empty(), "{what} selects no variant");
                    for (j, variant) in variants.iter().enumerate() {
                        assert!(variants[..j].iter().all(|v| v.name != variant.name), "{what}: {} twice", variant.name);
                        // FP8's product is in the Hopper module, which `kernels` does not list.
                        let listed = kernels.contains(&variant.kernel.as_str())
                            || cuda_kernels::matmul::fp8::KERNELS.contains(&variant.kernel.as_str());
                        assert!(listed, "{what}: {} is not listed", variant.kernel);
                    }
                }
            }
        }
    }
}
