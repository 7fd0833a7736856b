//! Radio images on the GPU.

pub mod fits;
pub mod image;
pub mod io;
pub mod sky;
pub mod sources;
pub mod wcs;
