//! The audit of a separation list (`--audit`; see [`SeparationList::audit`]).

use std::sync::atomic::Ordering;

use super::list::SeparationList;
use super::node_pairs::{NodePairId, CUT, LIVE, OPEN};
use crate::kds::kdop::{Volume, FIXED_AXES};
use crate::state::{VertexId, VertexState};

/// The O(list) part of the audit runs on every this-many calls.
const FULL_AUDIT_EVERY: u64 = 32;

impl<V: Volume> SeparationList<V> {
    /// The audit (`--audit`), at `t` (it holds between a kick and the update that follows it,
    /// so the engine may call it at either): every vertex is within the slack of its reference
    /// and inside its leaves' volumes grown by half of `eta1`, every node contains its
    /// children, no apart pair whose certificate is not due overlaps, and no apart pair without
    /// a certificate may overlap before the horizon's end (before the short-circuit, for the
    /// pairs cut short there). Together: every leaf pair that could come within `eta1` before
    /// its next event is under an open leaf pair (whose features have slabs) or certified apart
    /// by a frontier pair.
    pub(crate) fn audit(&self, state: &VertexState, t: f64) -> Result<(), String> {
        self.audit_vertices(state, t)?;
        // The node and frontier scans are O(list); the engine audits before every sweep and
        // after every event, so they run on every [`FULL_AUDIT_EVERY`]th call (counted, so the
        // choice is deterministic); the vertex checks run on every call.
        let calls = self.audits.fetch_add(1, Ordering::Relaxed);
        if calls % FULL_AUDIT_EVERY != 0 {
            return Ok(());
        }
        let t_end = self.certificates.t_end();
        self.hierarchy.bvh.validate(t, t_end)?;
        if t >= t_end {
            // The horizon is over: certificates stop short of its end (the short-circuit) and
            // the rebuild due now re-times every pair.
            return Ok(());
        }
        for p in self.pairs.ids_in(0..self.pairs.len()) {
            if self.pairs.is(p, LIVE) && !self.pairs.is(p, OPEN) {
                self.audit_apart(p, t)?;
            }
        }
        Ok(())
    }

    /// Every vertex is within the slack of its reference and inside its leaves' volumes.
    fn audit_vertices(&self, state: &VertexState, t: f64) -> Result<(), String> {
        let (h, t_end) = (&self.hierarchy, self.certificates.t_end());
        for v in (0..state.len()).map(VertexId::from_usize) {
            let p = state.position_at(v.index(), t);
            let slack = h.slack * (1.0 + 1e-9) + 1e-12;
            if (p - h.refs.at(v, t, t_end)).length() > slack {
                return Err(format!(
                    "vertex {v} strayed from its broad-phase reference at t = {t}"
                ));
            }
            for &l in h.leaves.of_vertex(v) {
                let vol = h.bvh.volume(h.bvh.leaf_node(l));
                if !vol.holds_point(p, h.margin * (1.0 - 1e-9), t, t_end) {
                    return Err(format!(
                        "vertex {v} is not inside the volume of leaf {l} at t = {t}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Apart pair `p` does not overlap at `t` unless its certificate is due, and without a
    /// certificate it may not overlap before the end of the certified span.
    fn audit_apart(&self, p: NodePairId, t: f64) -> Result<(), String> {
        let (bvh, certificates) = (&self.hierarchy.bvh, &self.certificates);
        let (a, b) = self.pairs.nodes(p);
        match certificates.time_of(p) {
            Some(s) if s <= t => {}
            Some(_) if certificates.overlapping(&self.pairs, bvh, p, t) => {
                return Err(format!(
                    "frontier pair of nodes {a} and {b} overlaps at t = {t} but its \
                     certificate is not due"
                ));
            }
            Some(_) => {}
            None => {
                // No certificate: apart until the short-circuit if it was cut short there,
                // otherwise until the horizon's end.
                let t_end = certificates.t_end();
                let until = if self.pairs.is(p, CUT) {
                    certificates.stop_at()
                } else {
                    t_end
                };
                let meets = (bvh.volume(a))
                    .overlap_interval_from(bvh.volume(b), t, until, t_end, &FIXED_AXES)
                    .map(|(s, _)| s)
                    .filter(|&s| s < until);
                if let Some(s) = meets {
                    return Err(format!(
                        "frontier pair of nodes {a} and {b} has no certificate but may \
                         overlap at t = {s}, before {until}"
                    ));
                }
            }
        }
        Ok(())
    }
}
