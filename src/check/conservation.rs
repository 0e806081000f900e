//! Energy and momentum accounting (written per frame to `energy.csv`).

use glam::DVec3;
use serde::Serialize;

use crate::FrameSource;

/// Energies and momenta of the free vertices at one instant.
///
/// Velocities are the current (piecewise-constant) ones, so at a kick the kinetic energy is that of
/// the half step, as in any leapfrog scheme: the total oscillates slightly about a constant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Conservation {
    /// Simulated time (s).
    pub time: f64,
    /// Kinetic energy `sum 0.5 m |v|^2` (erg).
    pub kinetic: f64,
    /// Stretching + bending potential energy (erg).
    pub elastic: f64,
    /// Gravitational potential `-sum m g . x` (erg), zero at the origin.
    pub gravity: f64,
    /// Energy stored in the active penalty layers (erg).
    pub penalty: f64,
    /// `kinetic + elastic + gravity + penalty`.
    pub total: f64,
    /// Linear momentum `sum m v` (g cm/s).
    pub momentum: DVec3,
    /// Angular momentum about the origin `sum m x x v` (g cm^2/s).
    pub angular_momentum: DVec3,
}

/// Measures the model of `source` at time `time`, where `positions` are every vertex's
/// positions at that time (the velocities are its state's, the penalty energy its method's),
/// or what the method measures of its rigid bodies ([`FrameSource::body_conservation`]).
/// Sums run in vertex order, so the result does not depend on the number of threads.
pub fn measure(source: &dyn FrameSource, time: f64, positions: &[DVec3]) -> Conservation {
    if let Some(bodies) = source.body_conservation(time) {
        return bodies;
    }
    let model = source.model();
    let state = model.state();
    let g = model.gravity();
    let mut c = Conservation {
        time,
        elastic: model.springs().energy(positions) + model.hinges().energy(positions),
        penalty: source.contact_energy(positions),
        ..Conservation::default()
    };
    for (i, &x) in positions.iter().enumerate() {
        if state.inv_mass[i] == 0.0 {
            continue;
        }
        let (m, v) = (state.mass[i], state.v[i]);
        c.kinetic += 0.5 * m * v.length_squared();
        c.gravity -= m * g.dot(x);
        c.momentum += m * v;
        c.angular_momentum += m * x.cross(v);
    }
    c.total = c.kinetic + c.elastic + c.gravity + c.penalty;
    c
}
