//! `host matmul`'s options, and its inputs: random, or A and B from `.npy` files.

use super::{e4m3, Dtype, Step};
use crate::data::random_f32;
use crate::gpu::{require, GpuResult};
use crate::io;
use crate::tuning;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use cuda_kernels::Named;
use std::fmt;
use std::path::{Path, PathBuf};

/// What `--dtype` names: a type the library's `gemm` multiplies in, or FP8, which only the
/// library's `matmul::fp8` does (e4m3 with a scale per tensor, on Hopper).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputType {
    /// f32 (the SGEMM ladder) or a tensor-core type.
    Gemm(Dtype),
    /// e4m3 (`e4m3::NAME`, or one of `e4m3::ALIASES`).
    Fp8,
}

impl InputType {
    /// f32: the SGEMM ladder.
    pub const F32: Self = Self::Gemm(Dtype::F32);

    /// The type as the library's `gemm` takes it; none for FP8.
    pub fn gemm(self) -> Option<Dtype> {
        match self {
            Self::Gemm(dtype) => Some(dtype),
            Self::Fp8 => None,
        }
    }

    /// The name `--dtype` and the reports give it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Gemm(dtype) => dtype.name(),
            Self::Fp8 => e4m3::NAME,
        }
    }

    /// The type `name` names: one of `Dtype`'s names, FP8's or an alias of it.
    fn named(name: &str) -> Option<Self> {
        let fp8 = (name == e4m3::NAME || e4m3::ALIASES.contains(&name)).then_some(Self::Fp8);
        fp8.or_else(|| Dtype::ALL.iter().find(|d| d.name() == name).map(|&d| Self::Gemm(d)))
    }

    /// `--dtype`'s parser: `--help` lists `Dtype`'s names and FP8's, and FP8's aliases are
    /// taken too.
    fn parser() -> impl TypedValueParser<Value = Self> {
        let gemm = Dtype::ALL.iter().map(|d| PossibleValue::new(d.name()));
        let fp8 = PossibleValue::new(e4m3::NAME).aliases(e4m3::ALIASES);
        PossibleValuesParser::new(gemm.chain([fp8]))
            .try_map(|name| Self::named(&name).ok_or_else(|| format!("no --dtype named {name}")))
    }
}

impl fmt::Display for InputType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, clap::Args)]
pub struct Options {
    #[arg(long, default_value_t = 4096)]
    pub m: usize,
    #[arg(long, default_value_t = 4096)]
    pub n: usize,
    #[arg(long, default_value_t = 4096)]
    pub k: usize,
    /// The inputs' type: f32 runs the SGEMM ladder; tf32, bf16 and f16 the tensor-core step
    /// for that type, on A and B converted once on the GPU (f32 accumulation and output); fp8
    /// (also e4m3) the Hopper e4m3 product on A and B scaled per tensor (amax / 448) and
    /// rounded once on the GPU (f32 output).
    #[arg(long, value_parser = InputType::parser(), default_value_t = InputType::F32)]
    pub dtype: InputType,
    /// Variants to run (all when omitted).
    #[arg(long = "variant", value_parser = crate::registry::named::<Step>())]
    pub variants: Vec<Step>,
    /// A 2-D f32 (or f16) .npy file for A, m×k (with --b); replaces the random data, --m and --k.
    #[arg(long, requires = "b", conflicts_with_all = ["m", "k"])]
    pub a: Option<PathBuf>,
    /// A 2-D f32 (or f16) .npy file for B, k×n; replaces --n.
    #[arg(long, requires = "a", conflicts_with = "n")]
    pub b: Option<PathBuf>,
    /// Writes C (the GPU's result, m×n) to this .npy file.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Times every tile configuration at this shape, prints each one's registers, shared
    /// memory and occupancy, and keeps the fastest for this GPU and shape class in the tuning
    /// cache; later runs at shapes of that class add it as the `tuned` variant.
    #[arg(long, conflicts_with_all = ["variants", "all_configs"])]
    pub tune: bool,
    /// Runs every tile configuration as a variant without touching the tuning cache.
    #[arg(long, conflicts_with = "variants")]
    pub all_configs: bool,
    /// Runs only the kernel the library's `gemm` picks for this shape and type on this GPU
    /// (what --tune kept in the tuning cache, else the library's rule), and says why.
    #[arg(long, conflicts_with_all = ["variants", "tune", "all_configs", "gpus"])]
    pub chosen: bool,
    /// Divides C's rows among this many GPUs (one context and stream each, copies in
    /// parallel), in --dtype's type (f32, tf32, bf16 or f16, each GPU converting its share),
    /// checks the joined result and reports the speed-up over one GPU.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), conflicts_with_all = ["variants", "tune", "all_configs", "output"])]
    pub gpus: Option<u64>,
    /// The tuning cache [default: $XDG_CACHE_HOME/rust-cuda-kernels/tuning.json, or under
    /// $HOME/.cache].
    #[arg(long)]
    pub tuning_cache: Option<PathBuf>,
}

/// m, n, k.
pub(super) type Dims = (usize, usize, usize);

/// A (m×k) and B (k×n), row-major.
pub(super) type Inputs = (Vec<f32>, Vec<f32>);

/// m, n, k >= 1.
pub(super) fn require_shape((m, n, k): Dims) -> GpuResult<()> {
    require(m >= 1 && n >= 1 && k >= 1, || format!("matmul needs m, n, k >= 1 (got {}x{}x{})", m, n, k))
}

/// The shape, and A and B when the options name files for them; random inputs are made by
/// [`random_inputs`] once the shape is known to fit.
pub(super) fn shape_and_files(options: &Options) -> GpuResult<(Dims, Option<Inputs>)> {
    match (&options.a, &options.b) {
        (Some(a), Some(b)) => read_inputs(a, b).map(|(shape, a, b)| (shape, Some((a, b)))),
        _ => Ok(((options.m, options.n, options.k), None)),
    }
}

/// The tuning cache's class of a shape.
pub(super) fn shape_class((m, n, k): Dims) -> String {
    tuning::shape_class(&[("m", m), ("n", n), ("k", k)])
}

pub(super) fn random_inputs((m, n, k): Dims, seed: u64) -> Inputs {
    (random_f32(m * k, seed), random_f32(k * n, seed ^ 1))
}

/// A and B from their files: finite f32 (or f16) matrices whose inner dimensions agree.
pub(super) fn read_inputs(a: &Path, b: &Path) -> GpuResult<(Dims, Vec<f32>, Vec<f32>)> {
    let (((m, k), va), ((kb, n), vb)) = (io::read_matrix_f32_or_f16(a)?, io::read_matrix_f32_or_f16(b)?);
    io::require_finite(a, &va)?;
    io::require_finite(b, &vb)?;
    require(k == kb, || {
        let (a, b) = (a.display(), b.display());
        format!("A ({a}) is {m}x{k} and B ({b}) is {kb}x{n}: A's columns ({k}) must equal B's rows ({kb})")
    })?;
    Ok(((m, n, k), va, vb))
}
