//! The background's statistics as NumPy defines them: `np.median` and `np.std` (ddof 0), over
//! the pixels that are numbers, as `nanmedian` and `nanstd` skip the NaN ones.

use rayon::prelude::*;

/// Values per partial sum. Fixed chunks, summed in order, make every sum the same whatever the
/// number of threads (rayon's own `sum` splits where work is stolen, so its rounding varies).
const CHUNK: usize = 1 << 16;

/// The pixels that are not NaN, in order, and how many were NaN (blanked).
pub fn without_nan(pixels: &[f32]) -> (Vec<f32>, usize) {
    let kept: Vec<f32> = pixels.par_iter().copied().filter(|v| !v.is_nan()).collect();
    let blanked = pixels.len() - kept.len();
    (kept, blanked)
}

/// `np.median` of `values`, which hold no NaN: the middle value, or for an even count the
/// mean of the two middle values, in f64. It selects rather than sorts, and so reorders
/// `values`; `None` when there are none.
pub fn median(values: &mut [f32]) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    // The upper middle value in its sorted place, every smaller or equal value before it.
    let (below, upper, _) = values.select_nth_unstable_by(n / 2, f32::total_cmp);
    let upper = f64::from(*upper);
    if n % 2 == 1 {
        return Some(upper);
    }
    // The lower middle value is the largest of those before it.
    let lower = below.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    Some((f64::from(lower) + upper) / 2.0)
}

/// Σ f(v) over `values` in f64: partial sums of 65536 values each, then the partials in
/// order, so the result does not depend on the number of threads.
pub fn sum(values: &[f32], f: impl Fn(f32) -> f64 + Sync) -> f64 {
    let partials: Vec<f64> = values.par_chunks(CHUNK).map(|chunk| chunk.iter().map(|&v| f(v)).sum()).collect();
    partials.iter().sum()
}

/// `np.std(values)` with ddof 0, in f64; `None` when there are none.
///
/// Two passes: the mean, then the mean squared deviation from it, as NumPy computes it. The
/// values are in memory, so the second pass costs one more read, and it sums small squares
/// instead of subtracting E\[x\]² from E\[x²\], which loses every digit when the mean is large
/// against the spread. Welford's update (or Chan's merge of partial counts, means and squared
/// deviations) is for a single pass over data seen once, which the GPU's reduction is; its
/// divide per value buys nothing here. In f64, sums of 2^16-value chunks and then of the
/// chunks' partials round by less than 1e-11 relative even at 2^28 values, far below the
/// 1e-6 asked of σ.
pub fn std(values: &[f32]) -> Option<f64> {
    let (_, squares) = mean_and_m2(values)?;
    Some((squares / values.len() as f64).sqrt())
}

/// The mean of `values` and their M2, the sum of squared deviations from it (`n·σ²`), in f64
/// and in two passes as [`std()`] explains; `None` when there are none.
pub fn mean_and_m2(values: &[f32]) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let mean = sum(values, f64::from) / values.len() as f64;
    Some((mean, sum(values, |v| (f64::from(v) - mean).powi(2))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_value_or_the_mean_of_the_two_middle_ones() {
        // Sorted: 1 2 5 7 9: the third value.
        assert_eq!(median(&mut [9.0, 1.0, 7.0, 2.0, 5.0]), Some(5.0));
        // Sorted: 1 2 7 9: the mean of 2 and 7, though neither lies between the halves' ends.
        assert_eq!(median(&mut [9.0, 2.0, 1.0, 7.0]), Some(4.5));
        // Repeated middle values, negative values, one value, two values.
        assert_eq!(median(&mut [3.0, 3.0, -1.0, 3.0, 8.0, -4.0]), Some(3.0));
        assert_eq!(median(&mut [-2.5]), Some(-2.5));
        assert_eq!(median(&mut [1.0, 2.0]), Some(1.5));
        assert_eq!(median(&mut []), None);
        // The mean of two f32 neighbours needs f64: halfway between 1 and the next float.
        let next = f32::from_bits(1.0f32.to_bits() + 1);
        assert_eq!(median(&mut [next, 1.0]), Some((1.0 + f64::from(next)) / 2.0));
        assert_ne!(median(&mut [next, 1.0]), Some(1.0));
        // 0..=1000 shuffled by a stride coprime with 1001: the median is 500.
        let mut values: Vec<f32> = (0..1001).map(|i| ((i * 37) % 1001) as f32).collect();
        assert_eq!(median(&mut values), Some(500.0));
        values.pop();
        let mut sorted = values.clone();
        sorted.sort_by(f32::total_cmp);
        let want = (f64::from(sorted[499]) + f64::from(sorted[500])) / 2.0;
        assert_eq!(median(&mut values), Some(want));
    }

    #[test]
    fn std_has_ddof_0_and_stays_accurate_far_from_zero() {
        // 1 2 3 4: mean 2.5, squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5, over n = 4.
        assert_eq!(std(&[1.0, 2.0, 3.0, 4.0]), Some(1.25f64.sqrt()));
        assert_eq!(std(&[7.0; 5]), Some(0.0));
        assert_eq!(std(&[]), None);
        // 10000 + 0.5·(k mod 4), exact in f32, a million values: the same spread as
        // 0, 0.5, 1, 1.5, whose variance is 0.3125. E[x²] − E[x]² would subtract two
        // numbers near 1e8 to get it, losing nine of f64's sixteen digits.
        let values: Vec<f32> = (0..1_000_000).map(|k| 10_000.0 + 0.5 * (k % 4) as f32).collect();
        let sd = std(&values).unwrap();
        assert!((sd - 0.3125f64.sqrt()).abs() < 1e-12, "{}", sd);
        // Chunks are summed in order: the same result however rayon splits the work.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        assert_eq!(pool.install(|| std(&values)), Some(sd));
    }

    #[test]
    fn nan_pixels_are_dropped_and_counted() {
        let (kept, blanked) = without_nan(&[1.0, f32::NAN, -3.0, f32::NAN, f32::NAN, 0.0]);
        assert_eq!((kept, blanked), (vec![1.0, -3.0, 0.0], 3));
        let (kept, blanked) = without_nan(&[f32::NAN; 4]);
        assert_eq!((kept.len(), blanked), (0, 4));
        // nanmedian and nanstd of [4, NaN, 1, 2, NaN]: the median and σ of 4 1 2.
        let (mut kept, _) = without_nan(&[4.0, f32::NAN, 1.0, 2.0, f32::NAN]);
        assert_eq!(median(&mut kept), Some(2.0));
        // Mean 7/3, squared deviations (25 + 16 + 1)/9 = 42/9, over 3.
        assert!((std(&kept).unwrap() - (42.0f64 / 27.0).sqrt()).abs() < 1e-15);
    }
}
