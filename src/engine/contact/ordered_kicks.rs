//! A large penalty tick's impulses applied in parallel with the serial result.
//!
//! One pass applies every member's impulses in member order, slot by slot: a vertex that several
//! members push gets their velocity changes in that order, and the vertices whose velocity
//! changed are listed in the order the pass first changed them. In parallel, each impulse is
//! keyed by its vertex and its place in that pass; the vertices are cut into consecutive ranges,
//! one a thread, and each range's impulses are sorted by key and applied by one thread through a
//! [`KickView`](crate::state::KickView). So every vertex gets the same changes in the same order
//! and ends with the same bits, whatever the number of threads. Each change records its place in
//! the pass in a slot of its own, and reading the slots in order lists the changed vertices as
//! the pass would.

use std::sync::atomic::{AtomicU32, Ordering};

use glam::DVec3;

use crate::profiling::zone;
use crate::state::VertexState;
use crate::team;

/// Places a member takes in the pass: one per vertex, up to a triangle pair's six.
const SLOTS: usize = 6;

/// Fewest members a thread keys (one block a thread, [`team::map_parts`]).
const KEY_BLOCK: usize = 128;

/// Scratch reused from tick to tick.
#[derive(Debug, Default)]
pub(super) struct OrderedKicks {
    /// Per place in the pass: one more than the vertex it changed first, 0 if none (all 0
    /// between ticks).
    first_change: Vec<AtomicU32>,
}

impl Clone for OrderedKicks {
    /// Fresh scratch: between ticks it holds nothing worth copying.
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// `vertex` in the high half, the place in the pass in the low half: sorting the keys sorts by
/// vertex, then by place.
fn key(vertex: u32, place: usize) -> u64 {
    (u64::from(vertex) << 32) | place as u64
}

impl OrderedKicks {
    /// Applies, at `t`, impulse `impulse(k, s)` to vertex `verts(k)[s]` of every member `k` of
    /// `0..members`, as one pass in member then slot order would, and replaces `kicked` with
    /// the vertices whose velocity changed, in the order the pass first changed them.
    pub(super) fn apply<'a>(
        &mut self,
        state: &mut VertexState,
        t: f64,
        members: usize,
        verts: impl Fn(usize) -> &'a [u32] + Sync,
        impulse: impl Fn(usize, usize) -> DVec3 + Sync,
        kicked: &mut Vec<u32>,
    ) {
        kicked.clear();
        let places = members * SLOTS;
        if self.first_change.len() < places {
            self.first_change.resize_with(places, || AtomicU32::new(0));
        }
        // Per block of members, one a thread: its keys, sorted. A zero impulse changes
        // nothing, so it has none.
        let blocks = team::blocks(members, KEY_BLOCK);
        let mut member_blocks: Vec<_> = (0..blocks)
            .map(|b| b * members / blocks..(b + 1) * members / blocks)
            .collect();
        let runs = team::map_parts(&mut member_blocks, |block| {
            let _zone = zone!("penalty_task");
            let mut keys = Vec::new();
            for k in block.clone() {
                let listed = verts(k).iter().enumerate();
                let pushed = listed.filter(|&(s, _)| impulse(k, s) != DVec3::ZERO);
                keys.extend(pushed.map(|(s, &v)| key(v, k * SLOTS + s)));
            }
            keys.sort_unstable();
            keys
        });
        // As many vertex ranges, cut where the longest run's keys are: about as many impulses
        // in each range, wherever the contacts crowd.
        let longest = runs
            .iter()
            .max_by_key(|run| run.len())
            .map_or(&[][..], |r| r);
        let cuts: Vec<usize> = if longest.is_empty() {
            Vec::new()
        } else {
            (1..blocks)
                .map(|r| (longest[r * longest.len() / blocks] >> 32) as usize)
                .collect()
        };
        let first_change = &self.first_change[..places];
        let mut views: Vec<_> = state.kick_views(&cuts).into_iter().enumerate().collect();
        team::map_parts(&mut views, |(r, view)| {
            let _zone = zone!("penalty_task");
            let lo = key(if *r == 0 { 0 } else { cuts[*r - 1] } as u32, 0);
            let hi = cuts.get(*r).map_or(u64::MAX, |&c| key(c as u32, 0));
            let mut keys = Vec::new();
            for run in &runs {
                let (a, b) = (
                    run.partition_point(|&k| k < lo),
                    run.partition_point(|&k| k < hi),
                );
                keys.extend_from_slice(&run[a..b]);
            }
            keys.sort_unstable();
            let mut last = None;
            for &k in &keys {
                let (v, place) = ((k >> 32) as usize, (k & u64::from(u32::MAX)) as usize);
                let before = view.velocity(v);
                view.apply_impulse(v, t, impulse(place / SLOTS, place % SLOTS));
                if last != Some(v) && view.velocity(v) != before {
                    last = Some(v);
                    first_change[place].store(v as u32 + 1, Ordering::Relaxed);
                }
            }
        });
        for slot in &mut self.first_change[..places] {
            let v = std::mem::take(slot.get_mut());
            if v != 0 {
                kicked.push(v - 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::VertexKind;
    use crate::team::{Team, WaitPolicy};
    use crate::test_rng::Rng;

    /// `n` vertices at their own clocks, every fifth fixed (inverse mass 0).
    fn state(n: usize, rng: &mut Rng) -> VertexState {
        let inv_mass: Vec<f64> = (0..n)
            .map(|i| {
                if i % 5 == 0 {
                    0.0
                } else {
                    rng.uniform(0.5, 2.0)
                }
            })
            .collect();
        VertexState {
            x: (0..n).map(|_| rng.vec(10.0)).collect(),
            t: (0..n).map(|_| rng.uniform(0.0, 1.0)).collect(),
            v: (0..n).map(|_| rng.vec(3.0)).collect(),
            mass: inv_mass
                .iter()
                .map(|&w| if w > 0.0 { 1.0 / w } else { 1.0 })
                .collect(),
            kind: vec![VertexKind::Free; n],
            inv_mass,
        }
    }

    #[test]
    fn impulses_applied_on_any_pool_match_one_pass_bit_for_bit() {
        let mut rng = Rng(7);
        let n = 600;
        let base = state(n, &mut rng);
        // Members of four or six vertices crowding a few hundred vertices, so that many share
        // vertices; some impulses zero, some too small to change a velocity.
        let members: Vec<Vec<u32>> = (0..1500)
            .map(|k| {
                let count = if k % 7 == 0 { 6 } else { 4 };
                (0..count).map(|_| (rng.next_u64() % 400) as u32).collect()
            })
            .collect();
        let impulses: Vec<[DVec3; 6]> = (0..members.len())
            .map(|k| {
                std::array::from_fn(|s| match (k + s) % 9 {
                    0 => DVec3::ZERO,
                    1 => DVec3::splat(1e-300),
                    _ => rng.vec(1.0),
                })
            })
            .collect();
        let t = 2.0;
        let mut expected = base.clone();
        let mut expected_kicked = Vec::new();
        for (verts, pushes) in members.iter().zip(&impulses) {
            for (&v, &j) in verts.iter().zip(pushes) {
                let before = expected.v[v as usize];
                expected.apply_impulse(v as usize, t, j);
                if expected.v[v as usize] != before && !expected_kicked.contains(&v) {
                    expected_kicked.push(v);
                }
            }
        }
        assert!(
            expected_kicked.len() > 200,
            "most crowded vertices are kicked"
        );
        let mut ordered = OrderedKicks::default();
        for threads in [1, 2, 3, 5] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
            let (got, kicked) = pool.unwrap().install(|| {
                // Served by a team where the machine has the cores, by rayon tasks otherwise.
                let _team = Team::start(WaitPolicy::Active);
                let (mut got, mut kicked) = (base.clone(), vec![99]);
                let verts = |k: usize| &members[k][..];
                let impulse = |k: usize, s: usize| impulses[k][s];
                ordered.apply(&mut got, t, members.len(), verts, impulse, &mut kicked);
                (got, kicked)
            });
            assert_eq!(kicked, expected_kicked, "{threads} threads");
            for i in 0..n {
                let same = |a: DVec3, b: DVec3| {
                    a.to_array().map(f64::to_bits) == b.to_array().map(f64::to_bits)
                };
                assert!(
                    same(got.x[i], expected.x[i]),
                    "vertex {i}, {threads} threads"
                );
                assert!(
                    same(got.v[i], expected.v[i]),
                    "vertex {i}, {threads} threads"
                );
                assert_eq!(got.t[i].to_bits(), expected.t[i].to_bits());
            }
        }
    }
}
