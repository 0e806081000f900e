//! What most programs that embed acm use: `use acm::prelude::*;` brings the traits every method
//! implements (so that their methods can be called), the types that go with them, and what
//! building a scene in code needs ([`Scene::builder`]).

pub use crate::scene::{Material, SceneBuilder, SceneObject};
pub use crate::stepper::{Frame, FrameSink, FrameSource, NoFrames, Stepper};
pub use crate::{driver, Error, Model, RunError, Scene, Simulation};
pub use glam::DVec3;
