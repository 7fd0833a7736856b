//! The tensor types' roundings of f32, as the GPU's conversions round: the CPU references
//! multiply the values the tensor cores read.

/// TF32 as `cvt.rna.tf32.f32` rounds: to nearest, ties away from zero, on the magnitude's bits
/// (adding half of the 13 dropped bits' weight carries into the kept ones exactly when the
/// dropped part is at least half).
pub fn round_tf32(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    f32::from_bits((x.to_bits() + 0x1000) & !0x1fff)
}

/// bfloat16 as `cvt.rn.bf16x2.f32` rounds: to nearest, ties to even (the kept last bit decides
/// whether a tie carries).
pub fn round_bf16(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let bits = x.to_bits();
    f32::from_bits((bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff_0000)
}

/// IEEE half as `cvt.rn.f16x2.f32` rounds: to nearest, ties to even, in steps of `2^(e - 10)`
/// for a binary exponent `e >= -14` and of `2^-24` below (half's subnormals); past the largest
/// half, 65504, to infinity.
pub fn round_f16(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let exponent = ((x.to_bits() >> 23) & 0xff) as i32 - 127;
    let step = 2f64.powi(exponent.max(-14) - 10);
    let rounded = (x.abs() as f64 / step).round_ties_even() * step;
    let rounded = if rounded > 65504.0 { f64::INFINITY } else { rounded };
    (rounded as f32).copysign(x)
}
