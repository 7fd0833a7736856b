//! Host side of `kernels::counter`: `threads` threads each add 1 to one counter.
//!
//! The atomic count must equal `threads`. The racy one is a demonstration: it passes as long
//! as it is a possible outcome (1 ..= threads), and its verdict says how many increments were
//! lost.

use crate::gpu::{require_kernel, require_len, GpuResult, KernelArgs, LaunchConfig, Params};
use cust::memory::DeviceSlice;

/// The arguments of `counter_racy` and `counter_atomic`: `threads` threads in blocks of
/// `block`, each adding 1 to `counter[0]`.
pub struct CounterArgs<'a> {
    /// The counter: its first element is added to.
    pub counter: &'a DeviceSlice<u32>,
    /// How many threads add 1.
    pub threads: u32,
    /// Threads per block.
    pub block: u32,
}

// SAFETY: the kernels write only `counter[0]`, which is checked to exist; threads past `threads`
// do nothing, so any block size is correct. The parameters are `counter: *mut u32, threads: u32`.
unsafe impl KernelArgs for CounterArgs<'_> {
    fn checked_config(&self, kernel: &str) -> GpuResult<LaunchConfig> {
        require_kernel(kernel, &["counter_racy", "counter_atomic"], "counter")?;
        require_len(kernel, "the counter", self.counter, 1)?;
        LaunchConfig::linear(self.threads as usize, self.block)
    }

    fn params(&self, _kernel: &str) -> Params {
        Params::new().pointer(self.counter).value(self.threads)
    }
}
