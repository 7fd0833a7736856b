//! The GPU side of the project: every kernel, one family per module.
#![no_std]
#![cfg_attr(target_os = "cuda", feature(register_attr), register_attr(nvvm_internal))]
#![allow(improper_ctypes_definitions)]

pub mod vector_add;
