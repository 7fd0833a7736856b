//! A window of values: those strictly between two bounds. κσ clipping keeps the pixels strictly
//! inside median ± κσ, so the reduction and the selection that measure each round's pixels take
//! the round's window, and the CPU reference and the kernels decide membership with this one
//! function.

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
}
