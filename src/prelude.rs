//! What most programs that embed acm use: `use acm::prelude::*;` brings the traits every method
//! implements (so that their methods can be called) and the types that go with them.

pub use crate::stepper::{Frame, FrameSink, FrameSource, NoFrames, Stepper};
pub use crate::{driver, Error, Model, RunError, Scene, Simulation};
