//! The Rust face of the tensor cores and of the asynchronous copies that feed them: each PTX
//! instruction wrapped once, in a small function whose doc comment says what it does and what
//! it requires.
//!
//! `hopper` holds Hopper's instructions (wgmma, TMA, mbarrier transactions, setmaxnreg). They
//! exist only for `sm_90a`, so they live in the Hopper module, the crate built with the
//! `hopper` feature for compute_90 (`ptx/build.rs`), and nowhere else.

#[cfg(feature = "hopper")]
pub mod hopper;
