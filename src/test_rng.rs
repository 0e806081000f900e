//! A tiny seeded random generator for the unit tests (splitmix64): reproducible random
//! configurations without a dependency.

use glam::{DQuat, DVec3};

/// splitmix64 state.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// Next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub(crate) fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let u = (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        lo + (hi - lo) * u
    }

    /// A vector with components uniform in `[-scale, scale)`.
    pub(crate) fn vec(&mut self, scale: f64) -> DVec3 {
        DVec3::new(
            self.uniform(-scale, scale),
            self.uniform(-scale, scale),
            self.uniform(-scale, scale),
        )
    }

    /// A random rotation (normalised random quaternion).
    pub(crate) fn rotation(&mut self) -> DQuat {
        loop {
            let q = DQuat::from_xyzw(
                self.uniform(-1.0, 1.0),
                self.uniform(-1.0, 1.0),
                self.uniform(-1.0, 1.0),
                self.uniform(-1.0, 1.0),
            );
            if q.length() > 0.1 {
                return q.normalize();
            }
        }
    }
}
