//! Inputs: seeded random data (never zeros, which hide unwritten outputs and bad indexing),
//! and a wall-clock timer for the CPU references.

use rand::distributions::{Distribution, Uniform};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::time::Instant;

/// `n` values uniform in [-1, 1).
pub fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    random_in(n, seed, -1.0f32, 1.0)
}

pub fn random_in<T>(n: usize, seed: u64, low: T, high: T) -> Vec<T>
where
    T: rand::distributions::uniform::SampleUniform,
{
    let mut rng = SmallRng::seed_from_u64(seed);
    let dist = Uniform::new(low, high);
    (0..n).map(|_| dist.sample(&mut rng)).collect()
}

/// Runs `f` once and returns its result with the wall time in milliseconds.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed().as_secs_f64() * 1e3)
}
