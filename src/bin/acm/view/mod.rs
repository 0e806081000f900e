//! Looking at a run's frames without other software: `acm view` writes one self-contained HTML
//! page that plays them with WebGL ([`page`]), `acm render` draws one as a shaded PNG on the CPU
//! ([`raster`]). Both read the OBJ or PLY frames of an output directory ([`frames`]).

pub(crate) mod camera;
pub(crate) mod frames;
pub(crate) mod page;
mod palette;
pub(crate) mod raster;

pub(crate) use frames::FrameSet;
