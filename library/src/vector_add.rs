//! Host side of `kernels::vector_add`: one thread per element. The inputs are random or read
//! from `.npy` files (`--a`, `--b`); `--output` writes c as `.npy`.
//!
//! Tolerance: the GPU performs the same single IEEE addition as the CPU, so the result must be
//! bit-identical.

use crate::gpu::{
    require, require_aligned, require_disjoint, require_len, DeviceArray, DeviceVector, Gpu, GpuResult, KernelArgs,
    LaunchConfig, Params,
};
use cust::memory::DeviceSlice;
use interface::vector::QUADS_PER_THREAD;
use interface::DEFAULT_BLOCK;
use ndarray::{Array1, ArrayView1};

crate::variants! {
    /// The steps of c = a + b.
    pub enum Method {
        /// One thread per element.
        Scalar => ("scalar", "vector_add"),
        /// 16-byte loads and stores, several quads per thread.
        Vec4 => ("vec4", "vector_add_vec4"),
    }
}

impl Method {
    /// The launch of this step over `n` elements, `block` threads per block: a thread per
    /// element (`Scalar`), or per `QUADS_PER_THREAD` quads (`Vec4`).
    pub fn config(self, n: usize, block: u32) -> GpuResult<LaunchConfig> {
        match self {
            Method::Scalar => LaunchConfig::linear(n, block),
            // One more quad slot than whole quads: its thread adds the `n % 4` tail.
            Method::Vec4 => LaunchConfig::linear((n / 4 + 1).div_ceil(QUADS_PER_THREAD), block),
        }
    }
}

/// `a[i] + b[i]` for each `i`: the GPU's single IEEE addition, bit for bit.
pub fn cpu_reference(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// The arguments of `vector_add` and `vector_add_vec4`: `c = a + b` over `a.len()` elements,
/// `block` threads per block.
pub struct AddArgs<'a> {
    /// The first input.
    pub a: &'a DeviceSlice<f32>,
    /// The second input, at least as long as `a`.
    pub b: &'a DeviceSlice<f32>,
    /// The output, at least as long as `a`.
    pub c: &'a DeviceSlice<f32>,
    /// Threads per block.
    pub block: u32,
}

// SAFETY: the kernels touch elements below `a.len()` of a, b and c (b and c are checked to be
// that long), write only c (checked not to overlap a or b), and read quads of all three only in
// `vector_add_vec4` (checked 16-byte aligned); any grid and block is correct for them. The
// parameters are `a: &[f32], b: &[f32], c: *mut f32`.
unsafe impl KernelArgs for AddArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        let method = Method::named(kernel)?;
        let n = self.a.len();
        require_len(kernel, "b", self.b, n)?;
        require_len(kernel, "c", self.c, n)?;
        require_disjoint(kernel, ("c", self.c, n), ("a", self.a, n))?;
        require_disjoint(kernel, ("c", self.c, n), ("b", self.b, n))?;
        if method == Method::Vec4 {
            for (what, buffer) in [("a", self.a), ("b", self.b), ("c", self.c)] {
                require_aligned(kernel, what, buffer, 16)?;
            }
        }
        method.config(n, self.block)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().slice(self.a).slice(self.b).pointer(self.c)
    }
}

/// An error unless `a` has elements and `b` and `c` are as long.
fn check_lengths(a: usize, b: usize, c: usize) -> GpuResult<()> {
    require(a > 0, || "vector_add: a is empty: there is nothing to add".into())?;
    require(b == a, || format!("vector_add: a holds {a} elements, b {b}: they must be as long"))?;
    require(c == a, || format!("vector_add: the output c holds {c} elements, a and b {a}"))
}

/// `c = a + b`, element by element, on `gpu` (f32, one IEEE addition each: the result equals
/// [`cpu_reference`] bit for bit). The step is [`Method::Vec4`], 16-byte loads and stores,
/// which every device array's alignment allows.
///
/// Checked before anything runs: `a` is not empty, `b` and `c` are as long as `a`, and all three
/// live on `gpu`. `a` and `b` may be the same array.
///
/// Asynchronous: the kernel is queued on `gpu`'s stream and the function returns without
/// waiting. [`DeviceArray::to_array`] waits for it, and dropping an array waits for the kernel
/// that uses it.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::vector_add::{cpu_reference, vector_add};
/// use cuda_kernels::DeviceArray;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let (a, b) = ([1.0f32, 2.0, 3.0, 4.0, 5.0], [0.5f32, -2.0, 1e7, 0.25, -5.0]);
/// let (da, db) = (DeviceArray::from_slice(&gpu, &a)?, DeviceArray::from_slice(&gpu, &b)?);
/// let mut dc = DeviceArray::zeros(&gpu, a.len())?;
/// vector_add(&gpu, &da, &db, &mut dc)?;
/// assert_eq!(dc.to_array(&gpu)?.to_vec(), cpu_reference(&a, &b));
/// # Ok(())
/// # }
/// ```
pub fn vector_add(gpu: &Gpu, a: &DeviceVector<f32>, b: &DeviceVector<f32>, c: &mut DeviceVector<f32>) -> GpuResult<()> {
    check_lengths(a.len(), b.len(), c.len())?;
    gpu.bind()?;
    let args = AddArgs { a: a.slice(gpu)?, b: b.slice(gpu)?, c: c.slice(gpu)?, block: DEFAULT_BLOCK };
    // SAFETY: the arrays record this launch right after it, so none is freed before it ran.
    unsafe { gpu.launch(Method::Vec4.kernel(), &args) }?;
    a.record_use(gpu)?;
    b.record_use(gpu)?;
    c.record_use(gpu)
}

/// `a + b`, computed on `gpu`: copies both to the GPU, runs [`vector_add`], and returns the sum
/// once the GPU has finished. Empty or unequal inputs are an error.
///
/// ```
/// # fn main() -> cuda_kernels::GpuResult<()> {
/// use cuda_kernels::vector_add::{cpu_reference, vector_add_array};
/// use ndarray::Array1;
///
/// let Some(gpu) = cuda_kernels::gpu::doctest_gpu()? else { return Ok(()) };
/// let a = Array1::linspace(-1.0f32, 1.0, 1001);
/// let b = a.mapv(|x| x * x);
/// let c = vector_add_array(&gpu, a.view(), b.view())?;
/// assert_eq!(c.to_vec(), cpu_reference(&a.to_vec(), &b.to_vec()));
/// # Ok(())
/// # }
/// ```
pub fn vector_add_array(gpu: &Gpu, a: ArrayView1<f32>, b: ArrayView1<f32>) -> GpuResult<Array1<f32>> {
    check_lengths(a.len(), b.len(), a.len())?;
    let (a, b) = (DeviceArray::from_array(gpu, a)?, DeviceArray::from_array(gpu, b)?);
    let mut c = DeviceArray::zeros(gpu, a.len())?;
    vector_add(gpu, &a, &b, &mut c)?;
    c.to_array(gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_checked() {
        assert!(check_lengths(5, 5, 5).is_ok());
        let message = check_lengths(4, 5, 4).unwrap_err().to_string();
        assert!(message.contains("vector_add: a holds 4 elements, b 5"), "{message}");
        let message = check_lengths(4, 4, 3).unwrap_err().to_string();
        assert!(message.contains("vector_add: the output c holds 3 elements, a and b 4"), "{message}");
        let message = check_lengths(0, 0, 0).unwrap_err().to_string();
        assert!(message.contains("vector_add: a is empty"), "{message}");
    }
}
