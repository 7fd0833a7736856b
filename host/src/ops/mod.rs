//! One module per kernel family (named as in `kernels/src/`): its command-line options and its
//! registry entry ([`crate::registry::Kernel`]); the kernels' bindings, API and CPU reference
//! are the library's (`cuda_kernels::<family>`). [`FAMILIES`] lists them.

use crate::gpu::{Gpu, GpuResult};
use crate::registry::Family;
use crate::resources;
use matmul::hopper;

/// Declares each family's module and lists its registry entry (`<family>::ENTRY`) in
/// [`FAMILIES`], for every family `interface::for_each_family!` names.
macro_rules! families {
    ($($module:ident),+ $(,)?) => {
        $(pub mod $module;)+

        /// Every kernel family, in the order the CLI lists and `all` runs them.
        pub const FAMILIES: &[&dyn Family] = &[$(&$module::ENTRY),+];
    };
}
interface::for_each_family!(families);

/// The family named `name` (its CLI subcommand).
pub fn family(name: &str) -> Option<&'static dyn Family> {
    FAMILIES.iter().copied().find(|f| f.name() == name)
}

/// Every kernel of every family, at its family's default launch shape.
pub fn kernel_resources(gpu: &Gpu) -> GpuResult<Vec<resources::KernelResources>> {
    let mut rows = Vec::new();
    let sms = gpu.sms();
    for family in FAMILIES {
        for (kernel, config) in family.launches(sms)? {
            rows.push(resources::of(gpu, family.name(), kernel, &config)?);
        }
    }
    // The Hopper module's kernels, where it is loaded (they run under `matmul --dtype
    // tf32|bf16|f16|fp8`).
    if gpu.has_hopper() {
        for (kernel, step, _) in hopper::kernels() {
            let config = hopper::launch_config(step, 4096, 4096, sms)?;
            rows.push(resources::of(gpu, "matmul", kernel, &config)?);
        }
        for (kernel, config) in cuda_kernels::matmul::fp8::launch_configs(4096, 4096, 4096, sms)? {
            rows.push(resources::of(gpu, "matmul", kernel, &config)?);
        }
    }
    Ok(rows)
}
