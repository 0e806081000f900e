//! Scene descriptions: what to simulate, validated before anything runs.
//!
//! A [`Scene`] is plain data that can be built in code (see `examples/embed.rs`) or loaded from a
//! profile file ([`profile`]). `Scene::validate` checks every value and names the offending
//! field with a path in profile terms (`object[1].material.density`), so the profile loader can
//! point at the file and line.

mod builder;
mod description;
mod error;
mod implicit_settings;
mod method;
mod objects;
pub mod profile;
pub mod rigid;
mod rigid_profile;
mod settings;
mod speed;
mod speed_limit;
mod sync_settings;
mod validate;

pub use builder::SceneBuilder;
pub use description::Scene;
pub use error::SceneError;
pub(crate) use implicit_settings::ImplicitSettings;
pub use method::Method;
pub use objects::{ForceSpec, Material, SceneObject, ScriptSpec, VertexSet};
pub use settings::{ContactScheduler, ContactSettings, IntegratorSettings};
pub use speed::SpeedSettings;
pub(crate) use speed_limit::SpeedLimit;
pub use sync_settings::{FailSafe, OnUnresolved, SyncSettings};
