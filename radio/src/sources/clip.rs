//! κσ clipping, as the lesson's `kappa_sigma_clipper` does it: take the median and the
//! standard deviation of the pixels kept so far, keep those strictly inside median ± κσ, and
//! repeat until a round clips nothing. That last round's median and σ are the background's.

use cuda_kernels::gpu::{GpuError, GpuResult};
use cuda_kernels::stats;
use interface::window::Window;
use rayon::prelude::*;
use serde::Serialize;

/// What κσ clipping found.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Background {
    pub median: f64,
    /// The standard deviation (ddof 0) of the pixels kept: the noise.
    pub sigma: f64,
    /// Medians and σ taken; the last round clipped nothing.
    pub rounds: usize,
    /// Pixels inside median ± κσ at the end.
    pub kept: usize,
}

/// What a round asks of the pixels inside a window: the CPU's values in memory, or the image on
/// the GPU (`super::gpu`), which answers both questions with one wait. Windows only ever
/// narrow, so each is inside the one before.
pub trait Pixels {
    /// How many pixels lie inside `window`, their standard deviation (ddof 0) and their
    /// `np.median`; σ and the median are `None` when there are none. `count_before`: the
    /// pixels of the window before, when there was one; if `window` holds as many, the round
    /// clipped nothing and its median is not needed, so it may be `None` too.
    fn measure(&mut self, window: Window, count_before: Option<usize>) -> GpuResult<Round>;
}

/// The pixels inside one round's window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Round {
    pub count: usize,
    pub sigma: Option<f64>,
    pub median: Option<f64>,
}

/// Clips the pixels at `kappa` (positive) until nothing more is clipped. That ends: each round
/// but the last removes a pixel. Noise settles in a few rounds; heavy tails or a small κ take
/// tens to a hundred or more. A pixel is kept while it lies strictly inside every round's
/// median ± κσ, that is inside their intersection: one window, its bounds and comparisons in
/// f64 ([`Window`]). The lesson's NumPy code run on the image as f64 clips exactly these
/// pixels (on f32 data NumPy rounds the bounds to f32). The round that finds nothing more to
/// clip needs no median: the GPU learns that from its first pass's count and stops there, and
/// one measure per round keeps it to one wait per round.
pub fn kappa_sigma(pixels: &mut impl Pixels, kappa: f64) -> GpuResult<Background> {
    let mut window = Window::FINITE;
    let mut current = pixels.measure(window, None)?;
    let mut round = 0;
    loop {
        round += 1;
        let (Some(sd), Some(median)) = (current.sigma, current.median) else {
            return Err(GpuError::InvalidInput("κσ clipping needs at least one pixel".into()));
        };
        let count = current.count;
        // Strictly inside, as the lesson's `>` and `<`: a pixel on a bound is clipped.
        let next = Window::new(window.low.max(median - kappa * sd), window.high.min(median + kappa * sd));
        let inside = pixels.measure(next, Some(count))?;
        if inside.count == count {
            return Ok(Background { median, sigma: sd, rounds: round, kept: count });
        }
        if inside.count == 0 {
            let why = if sd == 0.0 {
                format!(
                    "all {} pixels left are {}, so σ is 0 and no pixel lies strictly inside median ± κσ",
                    count, median
                )
            } else {
                format!(
                    "no pixel lies strictly inside median {} ± {}·σ {}; a larger --kappa keeps some",
                    median, kappa, sd
                )
            };
            return Err(GpuError::InvalidInput(format!("κσ clipping removed every pixel in round {}: {}", round, why)));
        }
        (window, current) = (next, inside);
    }
}

/// The pixels on the CPU, as the lesson keeps them: each round compacts the values to those
/// inside the window.
pub struct Values(pub Vec<f32>);

impl Pixels for Values {
    /// Takes the median every round: the CPU reference does what the lesson does.
    fn measure(&mut self, window: Window, _count_before: Option<usize>) -> GpuResult<Round> {
        // The window narrows, so keeping its values loses nothing a later round needs.
        if self.0.par_iter().any(|&v| !window.contains(v)) {
            self.0 = self.0.par_iter().copied().filter(|&v| window.contains(v)).collect();
        }
        let sigma = stats::std(&self.0);
        Ok(Round { count: self.0.len(), sigma, median: stats::median(&mut self.0) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_support::error_of;

    #[test]
    fn clips_outliers_round_by_round_until_nothing_changes() {
        // -3..=3, 12 and 100 at κ 2.
        // Round 1: 9 values, median 1; mean 112/9, E[x²] = (28 + 144 + 10000)/9, so
        //   σ = 31.2; 100 lies past 1 + 62.5 and is clipped.
        // Round 2: 8 values, median (0 + 1)/2 = 0.5; mean 1.5, E[x²] = 172/8 = 21.5, σ² = 19.25,
        //   σ = 4.39; 12 lies past 0.5 + 8.77 and is clipped.
        // Round 3: -3..=3, median 0, σ² = 28/7 = 4: nothing lies outside ±4. Three rounds.
        let values = vec![-3.0, 100.0, -2.0, -1.0, 12.0, 0.0, 1.0, 2.0, 3.0];
        let background = kappa_sigma(&mut Values(values), 2.0).unwrap();
        assert_eq!(background, Background { median: 0.0, sigma: 2.0, rounds: 3, kept: 7 });

        // With κ 3, 12 survives round 2 (it lies inside 0.5 ± 13.2): two rounds.
        let values = vec![-3.0, 100.0, -2.0, -1.0, 12.0, 0.0, 1.0, 2.0, 3.0];
        let background = kappa_sigma(&mut Values(values), 3.0).unwrap();
        assert_eq!((background.median, background.sigma), (0.5, 19.25f64.sqrt()));
        assert_eq!((background.rounds, background.kept), (2, 8));
    }

    #[test]
    fn a_pixel_on_a_bound_is_clipped() {
        // -2, -1, -1, six 0, 1, 1, 2: median 0, mean 0, E[x²] = (8 + 4)/12 = 1, so σ = 1 and
        // at κ 2 the bounds are exactly ±2: -2 and 2 go (`<=` would keep them). Then σ² = 4/10
        // and ±1 lie inside ±1.26.
        let mut values = vec![-2.0, -1.0, -1.0, 1.0, 1.0, 2.0];
        values.extend([0.0; 6]);
        let background = kappa_sigma(&mut Values(values), 2.0).unwrap();
        assert_eq!(background, Background { median: 0.0, sigma: 0.4f64.sqrt(), rounds: 2, kept: 10 });
    }

    #[test]
    fn clipping_every_pixel_is_an_error() {
        let flat = error_of(kappa_sigma(&mut Values(vec![0.25; 10]), 3.0));
        assert!(flat.contains("removed every pixel in round 1: all 10 pixels left are 0.25, so σ is 0"), "{}", flat);
        // -1 and 1: median 0, σ 1; at κ 1 the bounds are the values themselves.
        let tight = error_of(kappa_sigma(&mut Values(vec![-1.0, 1.0]), 1.0));
        assert!(tight.contains("no pixel lies strictly inside median 0 ± 1·σ 1"), "{}", tight);
        assert!(error_of(kappa_sigma(&mut Values(vec![]), 3.0)).contains("needs at least one pixel"));
    }
}
