//! Inputs: seeded random data (never zeros, which hide unwritten outputs and bad indexing),
//! and a wall-clock timer for the CPU references.

use rand::distr::uniform::SampleUniform;
use rand::distr::{Distribution, Uniform};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rayon::prelude::*;
use std::time::Instant;

/// Values drawn per generator: each chunk has its own seed, so chunks fill in parallel and the
/// data depends only on `seed` and `n`, not on the number of threads.
const CHUNK: usize = 1 << 20;

/// The element type of a family that takes either (histogram values, scan input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// `u32` values.
    U32,
    /// `f32` values.
    F32,
}

impl Input {}

/// `n` values uniform in [low, high).
pub fn random_in<T>(n: usize, seed: u64, low: T, high: T) -> Vec<T>
where
    T: SampleUniform + Copy + Default + Send + Sync,
    T::Sampler: Sync,
{
    let dist = Uniform::new(low, high).expect("low < high");
    let mut values = vec![T::default(); n];
    values.par_chunks_mut(CHUNK).enumerate().for_each(|(i, chunk)| {
        let mut rng = SmallRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        chunk.iter_mut().for_each(|v| *v = dist.sample(&mut rng));
    });
    values
}

/// `n` samples of the standard normal distribution (Box-Muller on uniform pairs).
pub fn random_normal(n: usize, seed: u64) -> Vec<f32> {
    let uniform = random_in(n.div_ceil(2) * 2, seed, f32::MIN_POSITIVE, 1.0);
    let mut values: Vec<f32> = uniform
        .as_chunks::<2>()
        .0
        .iter()
        .flat_map(|pair| {
            let (radius, angle) = ((-2.0 * pair[0].ln()).sqrt(), std::f32::consts::TAU * pair[1]);
            [radius * angle.cos(), radius * angle.sin()]
        })
        .collect();
    values.truncate(n);
    values
}

/// `n` values uniform in [-1, 1).
pub fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    random_in(n, seed, -1.0f32, 1.0)
}

/// Runs `f` once and returns its result with the wall time in milliseconds.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed().as_secs_f64() * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_data_is_seeded_and_in_range() {
        let a = random_in(3 * CHUNK + 5, 9, 0u32, 300);
        assert_eq!(a, random_in(3 * CHUNK + 5, 9, 0u32, 300));
        assert_ne!(a, random_in(3 * CHUNK + 5, 10, 0u32, 300));
        assert!(a.iter().all(|&v| v < 300));
        assert_ne!(a[..CHUNK], a[CHUNK..2 * CHUNK], "chunks must not repeat one another");
    }

    #[test]
    fn normal_samples_have_mean_0_and_variance_1() {
        let values = random_normal(100_001, 3);
        assert_eq!(values.len(), 100_001);
        let mean = values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64;
        let variance = values.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / values.len() as f64;
        assert!(mean.abs() < 0.02 && (variance - 1.0).abs() < 0.02, "mean {} variance {}", mean, variance);
    }
}

crate::named!(Input { U32 => "u32", F32 => "f32" });
