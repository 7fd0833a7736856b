//! 1000 launches of every kernel must leave the GPU's free memory where it was.
//!
//! The driver reports free memory for the whole device, so this test runs alone in its own
//! test binary (cargo runs test binaries one after another): beside other tests of the same
//! process, their allocations would move the count (as once seen on the H100: 84 MiB less,
//! from a test creating its context at the same time).

mod common;

use common::{gpu, run};
use host::ops::FAMILIES;
use host::registry::Purpose;
use std::io::Write;

#[test]
fn repeated_launches_leave_gpu_memory_unchanged() {
    let Some(gpu) = gpu("repeated_launches_leave_gpu_memory_unchanged") else { return };
    let every_kernel = |launches: usize| {
        for family in FAMILIES {
            // The smallest of the odd shapes: the launches, not the sizes, are under test.
            let options = family.sizes(Purpose::Check).into_iter().nth(1).expect("two check sizes");
            run(&gpu, family.name(), &options, launches);
        }
    };
    every_kernel(1); // module, JIT, the L2 flush buffer and driver-internal allocations happen here
    let (free_before, _) = cust::memory::mem_get_info().expect("free memory");
    every_kernel(1000);
    let (free_after, _) = cust::memory::mem_get_info().expect("free memory");
    let _ = writeln!(std::io::stderr(), "free GPU memory before {} after {} bytes", free_before, free_after);
    assert_eq!(free_before, free_after, "GPU memory changed across 1000 launches of each kernel");
}
