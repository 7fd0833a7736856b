//! A window of values: those strictly between two bounds. κσ clipping keeps the pixels strictly
//! inside median ± κσ, so the reduction and the selection that measure each round's pixels take
//! the round's window, and the CPU reference and the kernels decide membership with this one
//! function. The kernels that read every value of an image in each pass test membership by
//! the value's key instead ([`Window::keys`]): one integer comparison where the f64 one costs a
//! conversion and two f64 comparisons, with the same answer for every f32.

use crate::select::{key, value};

/// The values `v` with `low < v < high`, compared in f64 (exact for an f32 `v`), as NumPy
/// compares f32 pixels with f64 bounds. NaN lies in no window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub low: f64,
    pub high: f64,
}

impl Window {
    /// Every finite value (NaN and the infinities lie outside).
    pub const FINITE: Window = Window { low: f64::NEG_INFINITY, high: f64::INFINITY };

    #[inline(always)]
    pub fn new(low: f64, high: f64) -> Self {
        Self { low, high }
    }

    #[inline(always)]
    pub fn contains(&self, value: f32) -> bool {
        let v = value as f64;
        self.low < v && v < self.high
    }

    /// The keys ([`crate::select::key`]) of the f32 values inside: [`Window::contains`] holds
    /// for `v` exactly when the range holds `key(v)`. Each bound is rounded to the nearest f32,
    /// then stepped inward (at most twice: -0.0 and +0.0 share a value) until it lies strictly
    /// inside. NaN and the infinities never lie inside, and neither do their keys, which sort past
    /// the finite ones'. A NaN bound gives an empty range.
    #[inline(always)]
    pub fn keys(&self) -> KeyRange {
        if self.low.is_nan() || self.high.is_nan() {
            return KeyRange::EMPTY;
        }
        let (lowest, highest) = (key(f32::NEG_INFINITY), key(f32::INFINITY));
        let mut first = key(self.low as f32);
        while first < highest && f64::from(value(first)) <= self.low {
            first += 1;
        }
        let mut last = key(self.high as f32);
        while last > lowest && f64::from(value(last)) >= self.high {
            last -= 1;
        }
        KeyRange { first, last }
    }
}

/// The keys `first..=last`, empty when `first > last`: a [`Window`] as `key(v)` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRange {
    pub first: u32,
    pub last: u32,
}

impl KeyRange {
    const EMPTY: KeyRange = KeyRange { first: 1, last: 0 };

    #[inline(always)]
    pub fn contains(&self, key: u32) -> bool {
        self.first <= key && key <= self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_excluded_and_nan_and_infinities_lie_outside() {
        let w = Window::new(-1.0, 2.0);
        assert!(w.contains(0.0) && w.contains(1.999_999_9));
        assert!(!w.contains(-1.0) && !w.contains(2.0) && !w.contains(f32::NAN));
        assert!(Window::FINITE.contains(f32::MAX) && Window::FINITE.contains(-f32::MAX));
        assert!(!Window::FINITE.contains(f32::INFINITY) && !Window::FINITE.contains(f32::NEG_INFINITY));
        // In f64: 0.1 lies between f32 neighbours, and a bound compares with the f32 exactly.
        let tenth = 0.1f32;
        assert!(Window::new(0.1, 1.0).contains(tenth) == (f64::from(tenth) > 0.1));
    }

    /// Values at and beside a bound: the bound's f32 neighbours, both zeros, the extremes.
    fn around(bound: f64) -> [f32; 9] {
        let near = bound as f32;
        let step = |v: f32, up: bool| value(if up { key(v).saturating_add(1) } else { key(v).saturating_sub(1) });
        let (below, above) = (step(near, false), step(near, true));
        [near, below, above, step(below, false), step(above, true), 0.0, -0.0, f32::MAX, -f32::MAX]
    }

    #[test]
    fn keys_hold_exactly_the_values_inside() {
        let bounds = [
            f64::NEG_INFINITY,
            f64::INFINITY,
            0.0,
            -0.0,
            0.1,
            -0.1,
            1.0,
            -1.0,
            1e-45,
            -1e-45,
            1e300,
            -1e300,
            f64::from(f32::MAX),
            3.4028235677973366e38,
            f64::from(f32::MIN_POSITIVE) / 3.0,
            0.013_3 * 3.0,
        ];
        let mut values = [[f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.0, -1.0, 0.5, -0.5, 2.0]; 17];
        for (row, &b) in values.iter_mut().zip(&bounds) {
            *row = around(b);
        }
        for &low in &bounds {
            for &high in &bounds {
                let window = Window::new(low, high);
                let keys = window.keys();
                for &v in values.iter().flatten() {
                    assert_eq!(keys.contains(key(v)), window.contains(v), "{v:e} in ({low:e}, {high:e}): {keys:?}");
                }
            }
        }
        assert!(!Window::new(f64::NAN, 1.0).keys().contains(key(0.5)));
        assert!(!Window::new(0.0, f64::NAN).keys().contains(key(0.5)));
        assert_eq!(Window::FINITE.keys(), KeyRange { first: key(-f32::MAX), last: key(f32::MAX) });
    }
}
