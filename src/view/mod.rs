//! Looking at a run's frames without other software: `acm view` writes one self-contained HTML
//! page that plays them with WebGL ([`page`]), `acm render` draws one as a shaded PNG on the CPU
//! ([`raster`]). Both read the OBJ or PLY frames of an output directory ([`frames`]).

pub(crate) mod camera;
pub mod frames;
pub mod page;
mod palette;
pub mod raster;

pub use frames::{FrameSet, ObjectSpan};
pub use palette::object_colour;
