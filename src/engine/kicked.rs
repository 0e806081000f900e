//! The vertices kicked at the current instant whose certificates are not re-timed yet.
//!
//! Force ticks at one instant are independent: a kick changes velocities, not positions at that
//! instant, so every tick at `t` reads the same positions whatever ran before it at `t`, and no
//! certificate can fail between two of them. The loop therefore re-times once after the last of
//! a run of simultaneous force ticks, over the union of the vertices they kicked, instead of
//! after each: with power-of-two clock bins, a coarse bin ticks at the same instant as every
//! finer one, and their vertices mostly coincide.

/// What the force ticks at the current instant kicked, gathered until the loop re-times.
#[derive(Debug, Default)]
pub(super) struct Kicked {
    /// Every vertex's velocity may have changed (a whole-mesh tick): everything is re-timed.
    everything: bool,
    /// The kicked vertices, in the order their ticks ran; possibly repeated.
    vertices: Vec<u32>,
    /// How many ticks added to `vertices`: a single tick's list is used as it is.
    ticks: u32,
}

impl Kicked {
    /// Whether nothing waits to be re-timed.
    pub(super) fn is_empty(&self) -> bool {
        !self.everything && self.ticks == 0
    }

    /// Whether a whole-mesh tick is among the pending ones.
    pub(super) fn everything(&self) -> bool {
        self.everything
    }

    /// Notes a whole-mesh tick: every vertex is re-timed, so the list is no longer needed.
    pub(super) fn add_everything(&mut self) {
        self.everything = true;
        self.vertices.clear();
    }

    /// Notes a tick that kicked `vertices`.
    pub(super) fn add(&mut self, vertices: &[u32]) {
        if !self.everything {
            self.vertices.extend_from_slice(vertices);
        }
        self.ticks += 1;
    }

    /// Takes the kicked vertices (each once, ascending when several ticks added to them) and
    /// forgets every pending tick; hand the buffer back with [`Self::recycle`].
    pub(super) fn take_vertices(&mut self) -> Vec<u32> {
        if self.ticks > 1 {
            self.vertices.sort_unstable();
            self.vertices.dedup();
        }
        self.everything = false;
        self.ticks = 0;
        std::mem::take(&mut self.vertices)
    }

    /// Forgets every pending tick (the speculative scheduler re-times nothing).
    pub(super) fn clear(&mut self) {
        self.everything = false;
        self.vertices.clear();
        self.ticks = 0;
    }

    /// Keeps `buffer`'s allocation for the next instant.
    pub(super) fn recycle(&mut self, mut buffer: Vec<u32>) {
        buffer.clear();
        if self.vertices.is_empty() {
            self.vertices = buffer;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_ticks_give_each_vertex_once_in_order() {
        let mut kicked = Kicked::default();
        assert!(kicked.is_empty());
        kicked.add(&[5, 2]);
        assert_eq!(
            kicked.take_vertices(),
            vec![5, 2],
            "one tick's list as it is"
        );
        assert!(kicked.is_empty());
        kicked.add(&[1, 4, 7]);
        kicked.add(&[4, 9, 1]);
        assert_eq!(kicked.take_vertices(), vec![1, 4, 7, 9]);
        assert!(kicked.is_empty());
    }

    #[test]
    fn a_whole_mesh_tick_covers_the_others() {
        let mut kicked = Kicked::default();
        kicked.add(&[3]);
        kicked.add_everything();
        kicked.add(&[8]);
        assert!(kicked.everything() && !kicked.is_empty());
        assert!(kicked.take_vertices().is_empty());
        assert!(kicked.is_empty() && !kicked.everything());
        kicked.add(&[1]);
        kicked.add_everything();
        kicked.clear();
        assert!(kicked.is_empty() && !kicked.everything());
        assert!(kicked.take_vertices().is_empty());
    }
}
