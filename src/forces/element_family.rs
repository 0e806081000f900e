//! A family of elastic elements ticked as AVI force events.
//!
//! As super-elements (thesis §8.2: "events running with roughly the same clock are combined"),
//! a family's elements are grouped into [`ClockBin`]s: either one bin for the whole family at its
//! smallest clock, or power-of-two bins, each ticking every element whose stable clock lies in
//! `[h_min 2^b, h_min 2^(b+1))` at `h_min 2^b`. Binned, an element ticks at most twice as often as
//! its own clock asks instead of as often as the family's stiffest element, and the bins' clocks
//! nest, so coarser bins tick at times the finer ones also tick.

use std::ops::Range;

use glam::DVec3;
use hashbrown::HashMap;
use rayon::prelude::*;

use crate::mesh::Csr;
use crate::profiling::zone;
use crate::state::{faster, KickView, VertexState};
use crate::team;

/// Fewest elements (or rows) per parallel block: an element costs 10-85 ns, so a block is a
/// few microseconds or more, above what handing it to another thread costs while the pool's
/// workers are awake ([`crate::team`]).
const PAR_MIN_LEN: usize = 256;

/// The physics of one kind of element with `N` vertices, over a structure-of-arrays parameter table.
///
/// Implementations are pure: they read positions and parameters and return impulses, so a family can
/// be ticked in parallel and summed in a fixed order.
pub trait ElementKernel<const N: usize>: Sync {
    /// Number of elements.
    fn len(&self) -> usize;
    /// Whether the table is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The vertices of element `e`, in the order the kernel expects.
    fn stencil(&self, e: usize) -> [u32; N];
    /// The same elements in a new order: element `i` of the result is element `order[i]`.
    fn permuted(&self, order: &[u32]) -> Self
    where
        Self: Sized;
    /// Impulses of one tick of length `h` for element `e` at positions `p`, given the damping
    /// memory `memory` (the element's length or angle at its previous tick). Returns the impulses
    /// and the new memory value. An element with zero damping must give impulses that do not
    /// depend on `memory` (up to the sign of zeros), since an undamped family keeps none.
    fn tick(&self, e: usize, p: [DVec3; N], memory: f64, h: f64) -> ([DVec3; N], f64);
    /// Whether any element has a nonzero damping coefficient (otherwise the family keeps no
    /// damping memory).
    fn damped(&self) -> bool;
    /// Elastic potential energy of element `e` at positions `p`.
    fn energy(&self, e: usize, p: [DVec3; N]) -> f64;
    /// The damping memory of element `e` at positions `p` (its current length or angle).
    fn memory_at(&self, e: usize, p: [DVec3; N]) -> f64;

    /// Each vertex's inverse mass times the number of elements of this family that touch it:
    /// the inverse of the vertex's *mass share* when its lumped mass is split evenly among them.
    ///
    /// Stable clocks computed per element with these shares are stable for the assembled family:
    /// the largest eigenvalue of an assembled system is bounded by the largest element eigenvalue
    /// when the mass matrix is the sum of the element mass matrices (the element-by-element
    /// bound; Hughes, *The Finite Element Method*, §9.3). With whole lumped masses instead, a
    /// vertex shared by six springs can be kicked six times too hard, and the run diverges.
    fn inverse_mass_shares(&self, inv_mass: &[f64]) -> Vec<f64> {
        let mut shares = inv_mass.to_vec();
        let mut valence = vec![0u32; inv_mass.len()];
        for e in 0..self.len() {
            for v in self.stencil(e) {
                valence[v as usize] += 1;
            }
        }
        for (w, n) in shares.iter_mut().zip(valence) {
            *w *= f64::from(n.max(1));
        }
        shares
    }
}

/// The memory an undamped family's elements are ticked with (any finite value gives the same
/// impulses).
const UNDAMPED_MEMORY: f64 = 0.0;

/// Binned families have at most this many bins; elements slower than the last bin's clock tick
/// at it (2^15 times the family's smallest clock).
const MAX_BINS: usize = 16;

/// The power-of-two clock bin of an element whose stable clock is `h`, in a family whose
/// smallest clock is `min`: bin `b` ticks at [`bin_clock`]`(b, min)`, at most `h` (the last
/// bin also takes every slower element).
pub(crate) fn clock_bin(h: f64, min: f64) -> usize {
    ((h / min).log2().floor().max(0.0) as usize).min(MAX_BINS - 1)
}

/// The clock of bin `b` of a family whose smallest clock is `min`: `min * 2^b`.
pub(crate) fn bin_clock(b: usize, min: f64) -> f64 {
    min * (1u64 << b) as f64
}

/// Elements ticked together as one super-element event: a contiguous range of the family's
/// elements (the family is sorted by bin), their clock, and, chunk by chunk, the map from each
/// vertex they touch to the impulse slots to sum for it.
#[derive(Debug)]
pub struct ClockBin {
    /// The clock every element of the bin ticks at: no larger than any member's stable clock.
    pub clock: f64,
    /// The family's elements `elements.start .. elements.end`.
    pub elements: Range<usize>,
    /// The vertices the elements touch, ascending.
    pub vertices: Vec<u32>,
    /// The elements in consecutive chunks (of at most [`CHUNK_SLOTS`] impulse slots), in order.
    chunks: Vec<Chunk>,
    /// Whether the bin touches at least half of the simulation's vertices: its rows are then
    /// the simulation's vertex ids (row `v` for vertex `v`); otherwise row `r` is for
    /// `vertices[r]`.
    dense: bool,
}

/// At most this many impulses (`N` an element) are held at once: a bin is ticked chunk by chunk,
/// so the impulse scratch is bounded instead of `N` impulses for every element of the family,
/// and a chunk's slots are numbered in 16 bits.
const CHUNK_SLOTS: usize = 1 << 16;

/// Consecutive elements of a bin whose impulses are computed together, and the order in which
/// they are added to the bin's per-vertex sums.
///
/// Chunks are added in element order and each row's slots ascending, so every vertex's sum adds
/// the same impulses in the same order as one ascending pass over all the bin's slots: the same
/// bits on any number of threads and with any chunk length.
#[derive(Debug)]
struct Chunk {
    /// The family's elements of the chunk.
    elements: Range<usize>,
    /// The bin's sum rows the chunk touches, ascending.
    rows: Vec<u32>,
    /// For each entry of `rows`, the chunk's impulse slots `(e - elements.start) * N + k` to
    /// add to it, ascending.
    gather: Csr<u16>,
    /// Bit `j` is set when `rows[j]` is also a row of an earlier chunk of the bin (its sum so
    /// far is carried in).
    resumed: Vec<u64>,
    /// Bit `j` is set when `rows[j]` is also a row of a later chunk of the bin (its sum is
    /// carried there, not applied yet).
    continuing: Vec<u64>,
    /// The `j` whose bit is set in `continuing`, ascending: the few rows at the chunk's end
    /// that carry their sums on, listed so that a tick need not scan every row for them.
    continuing_rows: Vec<u32>,
}

/// A table of elements plus everything needed to tick it: damping memory and the clock bins
/// that tick them as super-elements.
///
/// Layout: `memory` is parallel to the kernel's element arrays, sorted by bin.
/// `impulses` is scratch holding `N` impulses per element (flattened, element-major) of one
/// chunk between its parallel compute pass and its per-vertex gather pass.
#[derive(Debug)]
pub struct ElementFamily<const N: usize, K> {
    /// The element parameters and physics.
    pub kernel: K,
    /// Per element: its length or angle at its previous tick (position-based damping); empty
    /// when no element is damped (8 bytes an element saved).
    pub memory: Vec<f64>,
    /// The super-element events, finest clock first.
    pub bins: Vec<ClockBin>,
    impulses: Vec<DVec3>,
    /// Scratch of a tick: the partial sums of the vertices that a later chunk adds to (the
    /// vertices at chunk boundaries: few, with elements listed in mesh order). Only those rows
    /// are hashed.
    carry: HashMap<u32, DVec3>,
    /// Per bin, its split among the threads of the last tick that ran on several
    /// ([`OwnedBin`]; built at the first such tick).
    owned: Vec<Option<OwnedBin>>,
    /// Scratch of an owned tick: every vertex's position at the tick's time.
    positions: Vec<DVec3>,
    /// Whether the family is binned, each bin's elements then ordered by lowest vertex, which
    /// a tick owner-computes needs ([`OwnedBin`]).
    binned: bool,
}

impl<const N: usize, K: ElementKernel<N>> ElementFamily<N, K> {
    /// Builds a family over `kernel` for `vertex_count` vertices, with damping memory initialised
    /// from `positions` (so the first tick has no damping) and the given per-element clocks.
    ///
    /// `binned`: power-of-two clock bins, within each the elements ordered by lowest vertex
    /// (stably), so that the elements of a range of vertices lie together ([`OwnedBin`]);
    /// otherwise one bin at the smallest clock, in the given order.
    pub(crate) fn new(
        kernel: K,
        clocks: &[f64],
        positions: &[DVec3],
        vertex_count: usize,
        binned: bool,
    ) -> Self {
        let chunk_len = CHUNK_SLOTS / N;
        Self::with_chunk_len(kernel, clocks, positions, vertex_count, binned, chunk_len)
    }

    /// [`Self::new`] with chunks of at most `chunk_len` elements (`chunk_len * N` at most
    /// [`CHUNK_SLOTS`]).
    fn with_chunk_len(
        kernel: K,
        clocks: &[f64],
        positions: &[DVec3],
        vertex_count: usize,
        binned: bool,
        chunk_len: usize,
    ) -> Self {
        debug_assert_eq!(clocks.len(), kernel.len());
        assert!((1..=CHUNK_SLOTS / N).contains(&chunk_len));
        let min = clocks.iter().copied().fold(f64::INFINITY, f64::min);
        let bin_of = |h: f64| if binned { clock_bin(h, min) } else { 0 };
        let mut order: Vec<u32> = (0..kernel.len() as u32).collect();
        // Binned, within a bin by lowest vertex: the elements a range of vertices owns are then
        // a range of the bin's ([`OwnedBin`]). Unbinned, the order is kept: without
        // super-elements each element's own event is numbered in the given order.
        if binned {
            let key = |e: u32| {
                (
                    bin_of(clocks[e as usize]),
                    lowest(kernel.stencil(e as usize)),
                )
            };
            order.sort_by_key(|&e| key(e));
        }
        // Always copied: the copies are exactly sized, where tables grown by `push` hold up to
        // twice their length (a third of the families' memory at 10^6 vertices).
        let (kernel, clocks) = (kernel.permuted(&order), permute(clocks, &order));
        let memory = if kernel.damped() {
            (0..kernel.len())
                .map(|e| kernel.memory_at(e, gather_positions(positions, kernel.stencil(e))))
                .collect()
        } else {
            Vec::new()
        };
        let mut bins = Vec::new();
        let mut start = 0;
        while start < clocks.len() {
            let b = bin_of(clocks[start]);
            let end = start + clocks[start..].partition_point(|&h| bin_of(h) == b);
            let clock = if binned { bin_clock(b, min) } else { min };
            bins.push(ClockBin::new(
                &kernel,
                start..end,
                clock,
                vertex_count,
                chunk_len,
            ));
            start = end;
        }
        let bin_count = bins.len();
        Self {
            kernel,
            memory,
            bins,
            impulses: Vec::new(),
            carry: HashMap::new(),
            owned: (0..bin_count).map(|_| None).collect(),
            positions: Vec::new(),
            binned,
        }
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.kernel.len()
    }

    /// Ticks every element of bin `b` at time `t` with clock `h` (one super-element event).
    ///
    /// Chunk by chunk, impulses are computed in parallel per element from the positions at `t`,
    /// then added per vertex in slot order. A vertex's sum is applied after the last chunk that
    /// touches it (a vertex whose velocity does not change is not written); only the sums of
    /// vertices that later chunks still add to are carried, not a sum for every vertex. A
    /// vertex kicked at `t` keeps its position at `t`, so later chunks read the same positions.
    /// On two threads or more, a large dense bin of a binned family is ticked owner-computes
    /// instead ([`Self::tick_owned`]), to the same bits.
    ///
    /// Returns the largest squared speed of the vertices whose velocity it changed ([`faster`]:
    /// NaN if one is NaN), for the caller's speed check.
    pub(crate) fn tick_bin(&mut self, b: usize, t: f64, h: f64, state: &mut VertexState) -> f64 {
        let owners = rayon::current_num_threads();
        if owners > 1 && self.owns(b, owners, state.len()) {
            self.tick_owned(b, owners, t, h, state)
        } else {
            self.tick_chunks(b, t, h, state)
        }
    }

    /// Whether bin `b` is ticked owner-computes on `owners` threads: a large dense bin of a
    /// binned family whose split among them ticks few elements twice (at most one in
    /// [`OWNED_GHOST_RATIO`]; a shell's hinges cut by a range's end can be more, and ticking
    /// them twice costs more than the chunked pass's joins). Keeps the split it examined.
    fn owns(&mut self, b: usize, owners: usize, vertex_count: usize) -> bool {
        let bin = &self.bins[b];
        if !(bin.dense && self.binned && bin.elements.len() >= owners * OWNED_MIN_ELEMENTS) {
            return false;
        }
        let owned = split(&mut self.owned[b], &self.kernel, bin, owners, vertex_count);
        owned.ghosts() * OWNED_GHOST_RATIO <= bin.elements.len()
    }

    /// [`Self::tick_bin`] chunk after chunk, each chunk's impulses and kicks cut into one
    /// block a thread ([`team::map_parts`]: block `k` on the same thread at every tick).
    pub(crate) fn tick_chunks(&mut self, b: usize, t: f64, h: f64, state: &mut VertexState) -> f64 {
        let bin = &self.bins[b];
        let kernel = &self.kernel;
        let carry = &mut self.carry;
        carry.clear();
        let mut fastest = 0.0;
        for chunk in &bin.chunks {
            let range = chunk.elements.clone();
            let slots = range.len() * N;
            // Grown, never shrunk: the scratch is not cleared between chunks or ticks.
            if self.impulses.len() < slots {
                self.impulses.resize(slots, DVec3::ZERO);
            }
            let positions = &*state;
            let tick = |e: usize, memory: f64| {
                let p = kernel
                    .stencil(e)
                    .map(|v| positions.position_at(v as usize, t));
                kernel.tick(e, p, memory, h)
            };
            // The chunk's elements in one block a thread (a few hundred at least), block `k`
            // on the team's member `k` at every tick.
            let blocks = team::blocks(range.len(), PAR_MIN_LEN);
            let ends = |k: usize| range.len() * k / blocks;
            let mut pieces = Vec::with_capacity(blocks);
            let (mut outs, mut memories) = (&mut self.impulses[..slots], &mut self.memory[..]);
            if !memories.is_empty() {
                memories = &mut memories[range.clone()];
            }
            for k in 0..blocks {
                let len = ends(k + 1) - ends(k);
                let (out, after) = std::mem::take(&mut outs).split_at_mut(len * N);
                let memory = if memories.is_empty() {
                    &mut [][..]
                } else {
                    let (memory, after) = std::mem::take(&mut memories).split_at_mut(len);
                    memories = after;
                    memory
                };
                pieces.push((range.start + ends(k), out, memory));
                outs = after;
            }
            team::map_parts(&mut pieces, |(first, out, memory)| {
                let _zone = zone!("force_task");
                for (i, out) in out.chunks_exact_mut(N).enumerate() {
                    let remembered = memory.get(i).copied().unwrap_or(UNDAMPED_MEMORY);
                    let (impulse, next) = tick(*first + i, remembered);
                    out.copy_from_slice(&impulse);
                    if let Some(slot) = memory.get_mut(i) {
                        *slot = next;
                    }
                }
            });
            let (impulses, carried) = (&self.impulses, &*carry);
            let sum = |j: usize| chunk.sum(j, impulses, carried);
            let vertex = |r: u32| {
                if bin.dense {
                    r as usize
                } else {
                    bin.vertices[r as usize] as usize
                }
            };
            // Rows are ascending, so are their vertices: blocks of rows kick disjoint ranges
            // of vertices, each block on the thread that summed it, the same at every tick.
            let rows = &chunk.rows;
            let blocks = team::blocks(rows.len(), PAR_MIN_LEN);
            let starts: Vec<usize> = (0..=blocks).map(|k| rows.len() * k / blocks).collect();
            let cuts: Vec<usize> = (starts[1..blocks].iter())
                .map(|&j| vertex(rows[j]))
                .collect();
            let mut views: Vec<_> = (state.kick_views(&cuts).into_iter().enumerate()).collect();
            let fastest_per_block = team::map_parts(&mut views, |(k, view)| {
                let _zone = zone!("force_task");
                let block = starts[*k]..starts[*k + 1];
                let mut fastest = 0.0;
                for (j, &r) in rows[block.clone()].iter().enumerate() {
                    let j = block.start + j;
                    if !has_bit(&chunk.continuing, j) {
                        fastest = faster(view.apply_impulse(vertex(r), t, sum(j)), fastest);
                    }
                }
                fastest
            });
            let chunk_fastest = fastest_per_block.into_iter().fold(0.0, faster);
            fastest = faster(chunk_fastest, fastest);
            // The rows later chunks still add to carry their sums there.
            let carried_on: Vec<(u32, DVec3)> = (chunk.continuing_rows.iter())
                .map(|&j| (rows[j as usize], sum(j as usize)))
                .collect();
            carry.extend(carried_on);
        }
        fastest
    }

    /// [`Self::tick_bin`] of a dense bin on `owners` threads, owner-computes: each owner reads
    /// its own range of vertices' positions at `t`, then ticks the elements touching that range
    /// and kicks its vertices, chunk by chunk, on its own ([`OwnedBin`]). Owner `k` is the
    /// team's member `k` ([`team::run_parts`]), so a range stays on one thread from tick to
    /// tick; the only joins are after the positions are read and at the end.
    pub(crate) fn tick_owned(
        &mut self,
        b: usize,
        owners: usize,
        t: f64,
        h: f64,
        state: &mut VertexState,
    ) -> f64 {
        let n = state.len();
        let bin = &self.bins[b];
        let owned = split(&mut self.owned[b], &self.kernel, bin, owners, n);
        // The positions every owner reads: a vertex another owner kicks at `t` keeps its
        // position at `t`, but its columns are being written.
        let positions = &mut self.positions;
        positions.resize(n, DVec3::ZERO);
        let mut ranges = Vec::with_capacity(owners);
        let mut rest = &mut positions[..];
        for cut in owned.cuts.windows(2) {
            let (range, after) = std::mem::take(&mut rest).split_at_mut(cut[1] - cut[0]);
            ranges.push((cut[0], range));
            rest = after;
        }
        let frozen = &*state;
        team::map_parts(&mut ranges, |(first, range)| {
            let _zone = zone!("force_task");
            for (i, p) in range.iter_mut().enumerate() {
                *p = frozen.position_at(*first + i, t);
            }
        });
        let memory = if self.memory.is_empty() {
            Vec::new()
        } else {
            for part in &mut owned.parts {
                part.ghost_memory.clear();
                let ghosts = &part.elements[..part.ghosts];
                (part.ghost_memory).extend(ghosts.iter().map(|&e| self.memory[e as usize]));
            }
            let mut rest = &mut self.memory[bin.elements.clone()];
            let mut slices = Vec::with_capacity(owners);
            for part in &owned.parts {
                let (own, after) = std::mem::take(&mut rest).split_at_mut(part.own.len());
                slices.push(own);
                rest = after;
            }
            slices
        };
        let mut memory = memory.into_iter();
        let views = state.kick_views(&owned.cuts[1..owners]);
        let (kernel, positions) = (&self.kernel, &*positions);
        let mut work: Vec<_> = (owned.parts.iter_mut().zip(views))
            .map(|(part, view)| (part, view, memory.next().unwrap_or_default()))
            .collect();
        let fastest = team::map_parts(&mut work, |(part, view, memory)| {
            let _zone = zone!("force_task");
            part.tick(kernel, positions, std::mem::take(memory), view, t, h)
        });
        fastest.into_iter().fold(0.0, faster)
    }

    /// Ticks every element at time `t` with clock `h`, bin after bin (the synchronous
    /// baseline's step).
    pub(crate) fn tick_all(&mut self, t: f64, h: f64, state: &mut VertexState) {
        for b in 0..self.bins.len() {
            self.tick_bin(b, t, h, state);
        }
    }

    /// Ticks the single element `e` at time `t` with clock `h` (one classic AVI event).
    pub(crate) fn tick_one(&mut self, e: usize, t: f64, h: f64, state: &mut VertexState) {
        let stencil = self.kernel.stencil(e);
        let p = stencil.map(|i| state.position_at(i as usize, t));
        let memory = self.memory.get(e).copied().unwrap_or(UNDAMPED_MEMORY);
        let (impulse, next) = self.kernel.tick(e, p, memory, h);
        if let Some(slot) = self.memory.get_mut(e) {
            *slot = next;
        }
        for (&i, &imp) in stencil.iter().zip(&impulse) {
            state.apply_impulse(i as usize, t, imp);
        }
    }

    /// Total elastic energy of the family at `positions`, summed in a fixed order.
    pub(crate) fn energy(&self, positions: &[DVec3]) -> f64 {
        let kernel = &self.kernel;
        let chunk_sums: Vec<f64> = (0..kernel.len())
            .into_par_iter()
            .chunks(PAR_MIN_LEN)
            .map(|es| {
                es.into_iter()
                    .map(|e| kernel.energy(e, gather_positions(positions, kernel.stencil(e))))
                    .sum()
            })
            .collect();
        chunk_sums.iter().sum()
    }
}

/// Fewest elements per owner for a dense bin to be ticked owner-computes ([`OwnedBin`]):
/// below, the bin's own parallel passes split it finer.
const OWNED_MIN_ELEMENTS: usize = 4 * PAR_MIN_LEN;

/// A dense bin is ticked owner-computes only if at most one in this many of its elements is
/// ticked twice (a ghost of some owner). Measured on `bunny_compactor`'s blob on two threads
/// (the forces benchmark, `-- blob`): its springs' split ticks 2% twice and takes 0.79x the
/// chunked pass's time, its hinges' 12% and 1.07x.
const OWNED_GHOST_RATIO: usize = 16;

/// The split of `bin` among `owners` kept in `slot`, built if `slot` holds none or one for
/// another number of owners.
fn split<'a, const N: usize, K: ElementKernel<N>>(
    slot: &'a mut Option<OwnedBin>,
    kernel: &K,
    bin: &ClockBin,
    owners: usize,
    vertex_count: usize,
) -> &'a mut OwnedBin {
    if slot
        .as_ref()
        .is_some_and(|owned| owned.parts.len() != owners)
    {
        *slot = None;
    }
    slot.get_or_insert_with(|| OwnedBin::new(kernel, bin, owners, vertex_count))
}

/// The lowest vertex of a stencil.
fn lowest<const N: usize>(stencil: [u32; N]) -> u32 {
    stencil.into_iter().min().unwrap_or(u32::MAX)
}

/// Vertex cuts `0 = c_0 <= c_1 <= ... <= c_owners = vertex_count` that balance the elements
/// each owner ticks, given every element's lowest vertex (`lows`, ascending: the bin's order)
/// and highest vertex (`highs`, ascending).
///
/// Owner `k` ticks the elements whose vertices span into `c_k..c_k+1`: those with lowest vertex
/// below `c_k+1`, less those wholly below `c_k`. The smallest largest count is found by
/// bisection, each candidate cut greedily (every cut as far up as the count allows).
fn balanced_cuts(
    lows: &[usize],
    highs: &[usize],
    owners: usize,
    vertex_count: usize,
) -> Vec<usize> {
    let elements = lows.len();
    // Each cut as far up as keeps its owner's count within `most`, and whether the last
    // owner's count is within it too.
    let cut = |most: usize| -> (Vec<usize>, bool) {
        let mut cuts = vec![0];
        for _ in 1..owners {
            let from = *cuts.last().unwrap_or(&0);
            let below = highs.partition_point(|&h| h < from);
            let to = lows
                .get(most + below)
                .map_or(vertex_count, |&low| low.max(from));
            cuts.push(to);
        }
        let last = *cuts.last().unwrap_or(&0);
        let fits = elements - highs.partition_point(|&h| h < last) <= most;
        cuts.push(vertex_count);
        (cuts, fits)
    };
    // Every element is within a count of all of them, so `high` always fits.
    let (mut low, mut high) = (elements.div_ceil(owners.max(1)), elements);
    while low < high {
        let mid = (low + high) / 2;
        if cut(mid).1 {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    cut(high).0
}

/// A dense bin split among owners (owner-computes): owner `k` kicks the vertices
/// `cuts[k]..cuts[k + 1]`, and ticks every element of the bin that touches one of them.
///
/// The bin's elements are sorted by lowest vertex, so the elements whose lowest vertex an owner
/// owns are a range of the bin's (its *own* elements: it alone writes their damping memory).
/// An element cut by a boundary is also ticked by each higher owner whose vertices it touches
/// (a *ghost* there), which sums only its own vertices' impulses. Each owner lists its ghosts
/// (lower elements) before its own, so every vertex sums the impulses of all its elements in
/// ascending element order, chunk by chunk with carried sums, as the whole bin's pass does:
/// the same bits on any number of owners.
#[derive(Debug)]
struct OwnedBin {
    /// Vertex cuts, ascending: `0`, one per owner after the first, the vertex count.
    cuts: Vec<usize>,
    /// Per owner, what it ticks.
    parts: Vec<OwnedPart>,
}

/// One owner's share of an [`OwnedBin`], with its scratch.
#[derive(Debug)]
struct OwnedPart {
    /// The family's elements it ticks, ascending: its ghosts, then its own.
    elements: Vec<u32>,
    /// How many of `elements` are ghosts.
    ghosts: usize,
    /// Its own elements, a range of the family's.
    own: Range<usize>,
    /// Its elements in chunks: `Chunk::elements` are places in `elements`, rows are vertices.
    chunks: Vec<Chunk>,
    /// Scratch: one chunk's impulses.
    impulses: Vec<DVec3>,
    /// Scratch: the sums carried between chunks.
    carry: HashMap<u32, DVec3>,
    /// Scratch: the ghosts' damping memory, read before any owner writes its own.
    ghost_memory: Vec<f64>,
}

impl OwnedBin {
    /// How many elements the owners tick that they do not own (each is ticked twice or more).
    fn ghosts(&self) -> usize {
        self.parts.iter().map(|part| part.ghosts).sum()
    }

    /// Splits the dense `bin` of `kernel`'s elements among `owners`, balancing the elements
    /// each ticks (its own and its ghosts), over `vertex_count` vertices.
    fn new<const N: usize, K: ElementKernel<N>>(
        kernel: &K,
        bin: &ClockBin,
        owners: usize,
        vertex_count: usize,
    ) -> Self {
        let elements = bin.elements.clone();
        let lowest_of = |e: usize| lowest(kernel.stencil(e)) as usize;
        let lows: Vec<usize> = elements.clone().map(lowest_of).collect();
        let mut highs: Vec<usize> = (elements.clone())
            .map(|e| kernel.stencil(e).into_iter().max().unwrap_or(0) as usize)
            .collect();
        highs.sort_unstable();
        let cuts = balanced_cuts(&lows, &highs, owners, vertex_count);
        let chunk_len = bin.chunks.first().map_or(1, |c| c.elements.len()).max(1);
        let first_own = |cut: usize| elements.start + lows.partition_point(|&l| l < cut);
        let parts = (0..owners)
            .map(|k| {
                let (from, to) = (cuts[k], cuts[k + 1]);
                let own = first_own(from)..first_own(to);
                let touches = |e: usize| {
                    kernel
                        .stencil(e)
                        .iter()
                        .any(|&v| (from..to).contains(&(v as usize)))
                };
                let mut list: Vec<u32> = (elements.start..own.start)
                    .filter(|&e| touches(e))
                    .map(|e| e as u32)
                    .collect();
                let ghosts = list.len();
                list.extend(own.clone().map(|e| e as u32));
                let row_of = |v: u32| (from..to).contains(&(v as usize)).then_some(v);
                let mut chunks: Vec<Chunk> = (0..list.len())
                    .step_by(chunk_len)
                    .map(|start| {
                        let places = start..(start + chunk_len).min(list.len());
                        Chunk::new(kernel, places, |i| list[i] as usize, row_of)
                    })
                    .collect();
                Chunk::link(&mut chunks, vertex_count);
                OwnedPart {
                    elements: list,
                    ghosts,
                    own,
                    chunks,
                    impulses: Vec::new(),
                    carry: HashMap::new(),
                    ghost_memory: Vec::new(),
                }
            })
            .collect();
        Self { cuts, parts }
    }
}

impl OwnedPart {
    /// Ticks this owner's elements at `t` with clock `h` from `positions` (every vertex's at
    /// `t`), writing its own elements' damping memory to `memory` (empty for an undamped
    /// family) and kicking its vertices in `view`. Returns the largest squared speed it made.
    fn tick<const N: usize, K: ElementKernel<N>>(
        &mut self,
        kernel: &K,
        positions: &[DVec3],
        memory: &mut [f64],
        view: &mut KickView<'_>,
        t: f64,
        h: f64,
    ) -> f64 {
        let (ghosts, own_start) = (self.ghosts, self.own.start);
        self.carry.clear();
        let mut fastest = 0.0;
        for chunk in &self.chunks {
            let places = chunk.elements.clone();
            self.impulses.resize(places.len() * N, DVec3::ZERO);
            let outs = self.impulses.chunks_exact_mut(N);
            for (i, out) in places.zip(outs) {
                let e = self.elements[i] as usize;
                let p = gather_positions(positions, kernel.stencil(e));
                // Undamped, no memory; a ghost's was read before the tick; an own element's
                // is written back.
                let own = (!memory.is_empty() && i >= ghosts).then_some(e - own_start);
                let before = match own {
                    Some(k) => memory[k],
                    None => self.ghost_memory.get(i).copied().unwrap_or(UNDAMPED_MEMORY),
                };
                let (impulse, next) = kernel.tick(e, p, before, h);
                out.copy_from_slice(&impulse);
                if let Some(k) = own {
                    memory[k] = next;
                }
            }
            let (impulses, carried) = (&self.impulses, &self.carry);
            for (j, &v) in chunk.rows.iter().enumerate() {
                if !has_bit(&chunk.continuing, j) {
                    let kicked = view.apply_impulse(v as usize, t, chunk.sum(j, impulses, carried));
                    fastest = faster(kicked, fastest);
                }
            }
            let carried_on: Vec<(u32, DVec3)> = (chunk.continuing_rows.iter())
                .map(|&j| {
                    (
                        chunk.rows[j as usize],
                        chunk.sum(j as usize, impulses, carried),
                    )
                })
                .collect();
            self.carry.extend(carried_on);
        }
        fastest
    }
}

impl ClockBin {
    /// Whether the bin touches at least half of the simulation's vertices (contact then
    /// re-times every certificate after its tick).
    pub(crate) fn is_dense(&self) -> bool {
        self.dense
    }

    /// The bin of `kernel`'s elements `elements`, ticking at `clock`, in chunks of at most
    /// `chunk_len` elements.
    fn new<const N: usize, K: ElementKernel<N>>(
        kernel: &K,
        elements: Range<usize>,
        clock: f64,
        vertex_count: usize,
        chunk_len: usize,
    ) -> Self {
        let mut row_of = vec![u32::MAX; vertex_count];
        let mut vertices: Vec<u32> = elements
            .clone()
            .flat_map(|e| kernel.stencil(e))
            .filter(|&v| std::mem::replace(&mut row_of[v as usize], 0) == u32::MAX)
            .collect();
        vertices.sort_unstable();
        vertices.shrink_to_fit();
        let dense = 2 * vertices.len() >= vertex_count;
        for (r, &v) in vertices.iter().enumerate() {
            row_of[v as usize] = if dense { v } else { r as u32 };
        }
        let mut chunks: Vec<Chunk> = elements
            .clone()
            .step_by(chunk_len)
            .map(|start| {
                Chunk::new(
                    kernel,
                    start..(start + chunk_len).min(elements.end),
                    |e| e,
                    |v| Some(row_of[v as usize]),
                )
            })
            .collect();
        let row_count = if dense { vertex_count } else { vertices.len() };
        Chunk::link(&mut chunks, row_count);
        Self {
            clock,
            elements,
            vertices,
            chunks,
            dense,
        }
    }
}

impl Chunk {
    /// The chunk of the elements at places `elements` of a list (`element_at` gives the
    /// family's element at a place), whose vertex `v` adds to the sum row `row_of(v)` (none:
    /// its impulses are summed elsewhere).
    fn new<const N: usize, K: ElementKernel<N>>(
        kernel: &K,
        elements: Range<usize>,
        element_at: impl Fn(usize) -> usize,
        row_of: impl Fn(u32) -> Option<u32>,
    ) -> Self {
        let start = elements.start;
        let (element_at, row_of) = (&element_at, &row_of);
        // Every slot of the chunk that is summed: its row and its index in the chunk's impulses.
        let slots = || {
            elements.clone().flat_map(|i| {
                let stencil = kernel.stencil(element_at(i));
                (0..N).filter_map(move |k| {
                    row_of(stencil[k]).map(|row| (row, ((i - start) * N + k) as u16))
                })
            })
        };
        let mut rows: Vec<u32> = slots().map(|(row, _)| row).collect();
        rows.sort_unstable();
        rows.dedup();
        rows.shrink_to_fit();
        let local = |row: u32| rows.partition_point(|&r| r < row) as u32;
        let gather = Csr::from_pairs(rows.len(), slots().map(|(row, slot)| (local(row), slot)));
        Self {
            elements,
            rows,
            gather,
            resumed: Vec::new(),
            continuing: Vec::new(),
            continuing_rows: Vec::new(),
        }
    }

    /// The sum of row `j` after this chunk: the sum carried in from earlier chunks (if the row
    /// is resumed) plus the chunk's `impulses` of the row, in slot order.
    fn sum(&self, j: usize, impulses: &[DVec3], carried: &HashMap<u32, DVec3>) -> DVec3 {
        let start = if has_bit(&self.resumed, j) {
            carried[&self.rows[j]]
        } else {
            DVec3::ZERO
        };
        (self.gather.row(j).iter()).fold(start, |acc, &s| acc + impulses[s as usize])
    }

    /// Marks, in `chunks` (one bin's or one owner's, in order), the rows an earlier chunk also
    /// has and those a later chunk also has, over rows below `row_count`.
    fn link(chunks: &mut [Chunk], row_count: usize) {
        let resumed = rows_seen_before(chunks.iter(), row_count);
        let mut continuing = rows_seen_before(chunks.iter().rev(), row_count);
        continuing.reverse();
        for ((chunk, resumed), continuing) in chunks.iter_mut().zip(resumed).zip(continuing) {
            chunk.continuing_rows = (0..chunk.rows.len() as u32)
                .filter(|&j| has_bit(&continuing, j as usize))
                .collect();
            (chunk.resumed, chunk.continuing) = (resumed, continuing);
        }
    }
}

/// For each of `chunks`, in the order given, the bitset over its rows of those that a chunk
/// before it (in that order) also has; rows are below `row_count`.
fn rows_seen_before<'a>(
    chunks: impl Iterator<Item = &'a Chunk>,
    row_count: usize,
) -> Vec<Vec<u64>> {
    let mut seen = vec![false; row_count];
    chunks
        .map(|chunk| {
            let mut bits = vec![0; chunk.rows.len().div_ceil(64)];
            for (j, &r) in chunk.rows.iter().enumerate() {
                if std::mem::replace(&mut seen[r as usize], true) {
                    bits[j / 64] |= 1 << (j % 64);
                }
            }
            bits
        })
        .collect()
}

/// Whether bit `j` of `bits` is set.
#[inline]
fn has_bit(bits: &[u64], j: usize) -> bool {
    bits[j / 64] & (1 << (j % 64)) != 0
}

/// `values` in a new order: item `i` of the result is `values[order[i]]` (for
/// [`ElementKernel::permuted`]).
pub(super) fn permute<T: Copy>(values: &[T], order: &[u32]) -> Vec<T> {
    order.iter().map(|&i| values[i as usize]).collect()
}

/// Reads the positions of a stencil.
#[inline]
fn gather_positions<const N: usize>(positions: &[DVec3], stencil: [u32; N]) -> [DVec3; N] {
    stencil.map(|i| positions[i as usize])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forces::{SpringFamily, SpringKernel};
    use crate::state::VertexKind;

    /// A chain of `n` springs whose rest lengths grow geometrically, so their clocks span
    /// several powers of two; the masses are equal.
    fn chain(n: usize) -> (SpringKernel, Vec<f64>, VertexState) {
        let mut x = vec![DVec3::ZERO];
        for i in 0..n {
            let last = x[i];
            x.push(last + DVec3::new(2f64.powi(i as i32 % 11), 0.1 * i as f64, 0.0));
        }
        let mut kernel = SpringKernel::default();
        for i in 0..n as u32 {
            // Springs listed out of clock order, so that binning re-orders them.
            let e = (i * 7) % n as u32;
            kernel.push(e, e + 1, &x, 100.0, 0.5);
        }
        let m = x.len();
        let state = VertexState {
            x: x.iter().map(|p| *p * 1.01).collect(),
            t: vec![0.0; m],
            v: vec![DVec3::ZERO; m],
            mass: vec![1.0; m],
            inv_mass: vec![1.0; m],
            kind: vec![VertexKind::Free; m],
        };
        let clocks = kernel.stable_clocks(&state.inv_mass, 0.5);
        (kernel, clocks, state)
    }

    #[test]
    fn clock_bins_partition_the_elements_at_powers_of_two_no_slower_than_each_clock() {
        let (kernel, clocks, state) = chain(40);
        let min = clocks.iter().copied().fold(f64::INFINITY, f64::min);
        let family = SpringFamily::new(kernel.clone(), &clocks, &state.x, state.len(), true);
        assert!(family.bins.len() >= 3, "{} bins", family.bins.len());
        let mut seen = vec![false; kernel.len()];
        let mut next = 0;
        for (b, bin) in family.bins.iter().enumerate() {
            assert_eq!(bin.elements.start, next, "bins are contiguous");
            next = bin.elements.end;
            assert!(b == 0 || bin.clock > family.bins[b - 1].clock);
            assert_eq!((bin.clock / min).log2().fract(), 0.0, "a power of two");
            let mut touched = Vec::new();
            for e in bin.elements.clone() {
                // The element is one of the kernel's, ticking no slower than its own clock.
                let original = (0..kernel.len())
                    .find(|&o| kernel.ends[o] == family.kernel.ends[e])
                    .unwrap();
                assert!(!std::mem::replace(&mut seen[original], true));
                let h = clocks[original];
                assert!(
                    bin.clock <= h && h < 2.0 * bin.clock,
                    "element {e}: {h} in {}",
                    bin.clock
                );
                touched.extend(family.kernel.ends[e]);
            }
            touched.sort_unstable();
            touched.dedup();
            assert_eq!(bin.vertices, touched);
        }
        assert_eq!(next, kernel.len());
        assert!(seen.iter().all(|&s| s));
        // Unbinned: one bin at the smallest clock, the order kept.
        let single = SpringFamily::new(kernel.clone(), &clocks, &state.x, state.len(), false);
        assert_eq!(single.bins.len(), 1);
        assert_eq!(single.bins[0].clock, min);
        assert_eq!(single.kernel.ends, kernel.ends);
    }

    #[test]
    fn chunks_of_any_length_give_the_same_bits() {
        // Long enough that a chunk of 700 springs kicks its rows in several blocks.
        let (mut kernel, _, mut state) = chain(800);
        // Moving vertices ticked after their last update: a later chunk reads the positions of
        // vertices an earlier chunk already kicked (and re-based).
        for (i, v) in state.v.iter_mut().enumerate() {
            *v = DVec3::new(0.3 * i as f64, -1.0, 0.1 * (i % 3) as f64);
        }
        let t = 2.5e-3;
        // A hub: vertex 0 sums the impulses of every chunk, in an order that changes its bits.
        let rest: Vec<DVec3> = state.x.iter().map(|p| *p * 0.9).collect();
        for i in 2..state.len() as u32 {
            kernel.push(0, i, &rest, 100.0, 0.5);
        }
        let clocks = kernel.stable_clocks(&state.inv_mass, 0.5);
        let bits = |v: &[DVec3]| -> Vec<[u64; 3]> {
            v.iter().map(|p| p.to_array().map(f64::to_bits)).collect()
        };
        for binned in [false, true] {
            let family = |chunk_len| {
                SpringFamily::with_chunk_len(
                    kernel.clone(),
                    &clocks,
                    &state.x,
                    state.len(),
                    binned,
                    chunk_len,
                )
            };
            let mut whole = family(CHUNK_SLOTS / 2);
            assert!(whole.bins.iter().all(|bin| bin.chunks.len() == 1));
            let mut reference = state.clone();
            whole.tick_all(t, 1e-3, &mut reference);
            for chunk_len in [1, 2, 3, 7, 700] {
                let mut chunked = family(chunk_len);
                let split = chunked.bins.iter().any(|bin| bin.chunks.len() > 1);
                // The binned family's bins are too small to split into chunks of 700.
                assert!(
                    split || (binned && chunk_len == 700),
                    "chunks of {chunk_len}"
                );
                let mut s = state.clone();
                chunked.tick_all(t, 1e-3, &mut s);
                assert_eq!(bits(&s.v), bits(&reference.v), "chunks of {chunk_len}");
                assert_eq!(bits(&s.x), bits(&reference.x), "chunks of {chunk_len}");
                assert_eq!(chunked.memory, whole.memory, "chunks of {chunk_len}");
            }
        }
    }

    #[test]
    fn owners_of_any_number_tick_a_dense_bin_to_the_same_bits() {
        let (mut kernel, _, mut state) = chain(3000);
        for (i, v) in state.v.iter_mut().enumerate() {
            *v = DVec3::new(0.3 * i as f64, -1.0, 0.1 * (i % 3) as f64);
        }
        // A hub: every owner sums impulses of springs that owner 0 owns (its ghosts), and
        // vertex 0's sum runs over every chunk.
        let rest: Vec<DVec3> = state.x.iter().map(|p| *p * 0.9).collect();
        for i in (2..state.len() as u32).step_by(5) {
            kernel.push(0, i, &rest, 100.0, 0.5);
        }
        // One clock: one bin, binned (so ordered by lowest vertex, the hub's springs first).
        let clocks = vec![1e-3; kernel.len()];
        let bits = |v: &[DVec3]| -> Vec<[u64; 3]> {
            v.iter().map(|p| p.to_array().map(f64::to_bits)).collect()
        };
        let h = 1e-3;
        let family = || {
            SpringFamily::with_chunk_len(kernel.clone(), &clocks, &state.x, state.len(), true, 500)
        };
        for owners in [1, 2, 3, 4, 7] {
            let (mut whole, mut owned) = (family(), family());
            assert!(whole.bins[0].is_dense() && whole.bins[0].chunks.len() > 1);
            let (mut reference, mut s) = (state.clone(), state.clone());
            // The second tick reuses the split, and reads the damping memory the first wrote.
            for t in [2.5e-3, 5e-3] {
                let fastest = whole.tick_chunks(0, t, h, &mut reference);
                let got = owned.tick_owned(0, owners, t, h, &mut s);
                assert_eq!(got.to_bits(), fastest.to_bits(), "{owners} owners at {t}");
                assert_eq!(bits(&s.v), bits(&reference.v), "{owners} owners at {t}");
                assert_eq!(bits(&s.x), bits(&reference.x), "{owners} owners at {t}");
                assert_eq!(s.t, reference.t, "{owners} owners at {t}");
                assert_eq!(owned.memory, whole.memory, "{owners} owners at {t}");
            }
            let parts = &owned.owned[0].as_ref().expect("split").parts;
            assert_eq!(parts.len(), owners);
            // Owners sum impulses of springs (to the hub, across cuts) that they do not own.
            assert!(
                owners == 1 || parts.iter().any(|p| p.ghosts > 0),
                "{owners} owners"
            );
            let own: usize = parts.iter().map(|p| p.own.len()).sum();
            assert_eq!(own, kernel.len(), "each spring has one owner");
        }
    }

    /// The most elements any owner ticks under `cuts`: owner `k` those spanning into
    /// `cuts[k]..cuts[k + 1]`.
    fn most_ticked(spans: &[(usize, usize)], cuts: &[usize]) -> usize {
        (cuts.windows(2))
            .map(|r| {
                (spans.iter())
                    .filter(|&&(lo, hi)| lo < r[1] && hi >= r[0])
                    .count()
            })
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn balanced_cuts_tick_as_few_elements_per_owner_as_the_best_cuts() {
        let mut rng = crate::test_rng::Rng(5);
        for trial in 0..200 {
            let vertices = 2 + (rng.next_u64() % 40) as usize;
            let count = 1 + (rng.next_u64() % 60) as usize;
            // Mostly short spans, some long (a hub, a seam).
            let mut spans: Vec<(usize, usize)> = (0..count)
                .map(|_| {
                    let lo = (rng.next_u64() % vertices as u64) as usize;
                    let reach = if rng.next_u64() % 8 == 0 { vertices } else { 4 };
                    let hi = (lo + (rng.next_u64() % reach as u64) as usize).min(vertices - 1);
                    (lo, hi)
                })
                .collect();
            spans.sort_unstable();
            let lows: Vec<usize> = spans.iter().map(|s| s.0).collect();
            let mut highs: Vec<usize> = spans.iter().map(|s| s.1).collect();
            highs.sort_unstable();
            for owners in [1, 2, 3] {
                let cuts = balanced_cuts(&lows, &highs, owners, vertices);
                assert_eq!(cuts.len(), owners + 1, "trial {trial}");
                assert_eq!((cuts[0], cuts[owners]), (0, vertices), "trial {trial}");
                assert!(
                    cuts.windows(2).all(|c| c[0] <= c[1]),
                    "trial {trial}: {cuts:?}"
                );
                // Every choice of cuts, by brute force.
                let mut best = usize::MAX;
                for a in 0..=vertices {
                    for b in a..=vertices {
                        let all = match owners {
                            1 => vec![0, vertices],
                            2 => vec![0, a, vertices],
                            _ => vec![0, a, b, vertices],
                        };
                        best = best.min(most_ticked(&spans, &all));
                    }
                }
                let got = most_ticked(&spans, &cuts);
                assert_eq!(got, best, "trial {trial}, {owners} owners: {cuts:?}");
            }
        }
    }

    #[test]
    fn a_bin_whose_split_ticks_many_elements_twice_keeps_the_chunked_pass() {
        let (kernel, _, state) = chain(3000);
        let clocks = vec![1e-3; kernel.len()];
        let family = |kernel: SpringKernel| {
            SpringFamily::with_chunk_len(kernel, &clocks, &state.x, state.len(), true, 500)
        };
        // A chain: one spring cut by the cut, ticked twice.
        let mut chain_family = family(kernel.clone());
        assert!(chain_family.owns(0, 2, state.len()));
        // Every vertex also tied to the one across the middle: each of those springs spans the
        // cut, whichever it is, so at least a third of them are ticked twice.
        let mut crossed = kernel.clone();
        let (rest, half) = (state.x.clone(), state.len() as u32 / 2);
        for i in 0..half {
            crossed.push(i, i + half, &rest, 100.0, 0.5);
        }
        let clocks = vec![1e-3; crossed.len()];
        let mut crossed_family =
            SpringFamily::with_chunk_len(crossed, &clocks, &state.x, state.len(), true, 500);
        assert!(!crossed_family.owns(0, 2, state.len()));
        let ghosts = crossed_family.owned[0].as_ref().expect("split").ghosts();
        assert!(
            ghosts * OWNED_GHOST_RATIO > crossed_family.len(),
            "{ghosts} ghosts"
        );
    }

    #[test]
    fn a_bin_tick_returns_the_largest_squared_speed_of_its_vertices() {
        let (kernel, _, mut state) = chain(800);
        // The fastest vertices are at the end of the chain, outside most bins.
        for (i, v) in state.v.iter_mut().enumerate() {
            *v = DVec3::new(0.01 * (i * i) as f64, -1.0, 0.1 * (i % 3) as f64);
        }
        let mut clocks = kernel.stable_clocks(&state.inv_mass, 0.5);
        // Four bins of clocks (binned by powers of two), each a quarter of the chain.
        for (e, h) in clocks.iter_mut().enumerate() {
            *h *= (1 << (e * 4 / kernel.len())) as f64;
        }
        for chunk_len in [3, 700] {
            let mut family = SpringFamily::with_chunk_len(
                kernel.clone(),
                &clocks,
                &state.x,
                state.len(),
                true,
                chunk_len,
            );
            assert!(family.bins.len() >= 4, "{} bins", family.bins.len());
            let mut s = state.clone();
            let mut slower = 0;
            for b in 0..family.bins.len() {
                let fastest = family.tick_bin(b, 2.5e-3, 1e-3, &mut s);
                let vertices = family.bins[b].vertices.iter().copied();
                assert_eq!(
                    fastest,
                    s.fastest(vertices),
                    "bin {b}, chunks of {chunk_len}"
                );
                slower += usize::from(fastest < s.fastest(0..s.len() as u32));
            }
            assert!(slower >= 3, "vertices outside a bin do not count");
        }
    }

    #[test]
    fn an_undamped_family_keeps_no_memory_and_ticks_the_same_bits() {
        let (damped, _, mut state) = chain(40);
        for (i, v) in state.v.iter_mut().enumerate() {
            *v = DVec3::new(0.2 * i as f64, 0.5, -0.1 * (i % 5) as f64);
        }
        let rest: Vec<DVec3> = state.x.iter().map(|p| *p * 0.95).collect();
        let mut kernel = SpringKernel::default();
        for &[a, b] in &damped.ends {
            kernel.push(a, b, &rest, 100.0, 0.0);
        }
        assert!(damped.damped() && !kernel.damped());
        let clocks = kernel.stable_clocks(&state.inv_mass, 0.5);
        let family = || {
            SpringFamily::with_chunk_len(kernel.clone(), &clocks, &state.x, state.len(), true, 3)
        };
        let mut lean = family();
        assert!(lean.memory.is_empty());
        // The same family keeping the memory a damped one would.
        let mut kept = family();
        kept.memory = (0..kept.len())
            .map(|e| {
                let p = gather_positions(&state.x, kept.kernel.stencil(e));
                kept.kernel.memory_at(e, p)
            })
            .collect();
        let (mut a, mut b) = (state.clone(), state.clone());
        for k in 1..4 {
            let t = 1e-3 * f64::from(k);
            lean.tick_all(t, 1e-3, &mut a);
            kept.tick_all(t, 1e-3, &mut b);
            lean.tick_one(5, t, 1e-3, &mut a);
            kept.tick_one(5, t, 1e-3, &mut b);
        }
        let bits = |v: &[DVec3]| -> Vec<[u64; 3]> {
            v.iter().map(|p| p.to_array().map(f64::to_bits)).collect()
        };
        assert_ne!(bits(&a.v), bits(&state.v), "the springs kicked");
        assert_eq!(bits(&a.v), bits(&b.v));
        assert_eq!(bits(&a.x), bits(&b.x));
        assert!(lean.memory.is_empty());
    }

    #[test]
    fn a_full_chunk_numbers_its_last_slot_in_16_bits() {
        let (kernel, clocks, state) = chain(40_000);
        let mut full = SpringFamily::new(kernel.clone(), &clocks, &state.x, state.len(), false);
        let chunks = &full.bins[0].chunks;
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].elements, 0..CHUNK_SLOTS / 2);
        assert_eq!(chunks[0].gather.items.iter().max(), Some(&u16::MAX));
        let mut small =
            SpringFamily::with_chunk_len(kernel, &clocks, &state.x, state.len(), false, 999);
        let (mut a, mut b) = (state.clone(), state);
        full.tick_all(0.0, 1e-3, &mut a);
        small.tick_all(0.0, 1e-3, &mut b);
        assert!(a
            .v
            .iter()
            .zip(&b.v)
            .all(|(p, q)| p.to_array().map(f64::to_bits) == q.to_array().map(f64::to_bits)));
    }

    #[test]
    fn ticking_every_bin_at_once_gives_the_unbinned_impulses_up_to_rounding() {
        let (kernel, clocks, state) = chain(40);
        let mut binned = SpringFamily::new(kernel.clone(), &clocks, &state.x, state.len(), true);
        let mut single = SpringFamily::new(kernel, &clocks, &state.x, state.len(), false);
        let (mut a, mut b) = (state.clone(), state);
        binned.tick_all(0.0, 1e-3, &mut a);
        single.tick_all(0.0, 1e-3, &mut b);
        let scale = b.v.iter().map(|v| v.length()).fold(0.0, f64::max);
        assert!(scale > 0.0);
        for (i, (va, vb)) in a.v.iter().zip(&b.v).enumerate() {
            assert!(
                (*va - *vb).length() <= 1e-12 * scale,
                "vertex {i}: {va} vs {vb}"
            );
        }
    }
}
