//! The fastest speed ACM's contact can resolve in a scene, at each time.
//!
//! The kinetic broad phases resolve time to [`INSTANT`] `(1 + t)` s at time `t` (a shorter span
//! is one instant to them). A vertex must take at least [`INSTANTS_PER_LAYER`] such instants to
//! cross `contact.eta1`; faster, a pair could pass a layer inside one instant unseen. Up to the
//! scene's end (its duration, or its last scripted key if later) the limit is the one at the
//! end, which start and scripted velocities are held to at load; a run taken past the end
//! resolves time more coarsely, and its limit falls with it.

use crate::kds::kdop::INSTANT;

use super::description::Scene;

/// Instants of the kinetic broad phases' time resolution a vertex must take, at least, to cross
/// the first layer's thickness.
pub(super) const INSTANTS_PER_LAYER: f64 = 10.0;

/// The fastest speed contact can resolve in a scene (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SpeedLimit {
    /// `eta1 / (INSTANTS_PER_LAYER * INSTANT)`: the limit times `1 + t` (cm).
    reach: f64,
    /// The scene's end (s).
    end: f64,
}

impl SpeedLimit {
    /// The limit of scene `s`.
    pub(crate) fn of(s: &Scene) -> Self {
        let end = s
            .scripts
            .iter()
            .flat_map(|script| script.keys.iter().map(|k| k.0))
            .fold(s.duration, f64::max);
        Self {
            reach: s.contact.eta1 / (INSTANTS_PER_LAYER * INSTANT),
            end,
        }
    }

    /// No limit (a scene without contact).
    pub(crate) fn none() -> Self {
        Self {
            reach: f64::INFINITY,
            end: 0.0,
        }
    }

    /// The fastest speed (cm/s) contact can resolve at time `t`: the same up to the scene's
    /// end, lower after it.
    pub(crate) fn at(&self, t: f64) -> f64 {
        self.reach / (1.0 + t.max(self.end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_holds_to_the_end_and_falls_after_it() {
        let limit = SpeedLimit {
            reach: 1e6,
            end: 1.0,
        };
        assert_eq!(limit.at(0.0), 5e5);
        assert_eq!(limit.at(1.0), 5e5);
        assert_eq!(limit.at(3.0), 2.5e5);
        assert_eq!(SpeedLimit::none().at(1e9), f64::INFINITY);
    }
}
