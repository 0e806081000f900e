//! The method a scene asks for (`integrator.method`), built: [`driver`].

use crate::implicit::ImplicitSimulation;
use crate::rigid::ObaSimulation;
use crate::scene::{Method, Scene, SceneError};
use crate::sync::SyncSimulation;
use crate::{Simulation, Stepper};

/// Builds the driver of `scene`'s method: ACM's event loop ([`Simulation`]), the synchronous
/// velocity filter ([`SyncSimulation`]), implicit contact ([`ImplicitSimulation`]) or
/// optimization-based animation of rigid bodies ([`ObaSimulation`]). The
/// scene is freed once built (ACM frees its meshes during the build).
///
/// # Errors
///
/// The scene's errors ([`SceneError`]): invalid values, an intersecting start, clocks or sizes
/// the method cannot carry.
pub fn driver(scene: Scene) -> Result<Box<dyn Stepper>, SceneError> {
    Ok(match scene.integrator.method {
        Method::Acm => Box::new(Simulation::from_scene(scene)?),
        Method::Sync => Box::new(SyncSimulation::new(&scene)?),
        Method::Implicit => Box::new(ImplicitSimulation::new(&scene)?),
        Method::Oba => Box::new(ObaSimulation::new(&scene)?),
    })
}
