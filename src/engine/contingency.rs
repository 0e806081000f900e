//! The contingency graph (thesis Alg. 7, CACM Fig. 7): each vertex lists the certificates its
//! trajectory supports, so a velocity change re-times exactly the certificates that depend on it.
//!
//! Collecting the contingent certificates of a kick sets each one's bit in a bitset through an
//! atomic `fetch_or`, lock-free: large kicks mark from many threads at once, and whichever thread
//! sets a bit first owns the certificate, so each is marked exactly once (model-checked with loom:
//! `RUSTFLAGS="--cfg loom" cargo test --release --lib contingency`). Reading the set bits back,
//! word by word, gives the certificates in increasing id order without sorting them, and clears
//! the set for the next kick.

use crate::profiling::zone;
use crate::team;

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};

/// Fewest vertices a thread marks the certificates of: kicks of twice as many mark them in
/// parallel, one block a thread.
const MARK_BLOCK: usize = 512;

/// Marks certificate `id` in the bitset `marks`; true for exactly one of any number of
/// concurrent calls (the one whose `fetch_or` set the bit).
#[inline]
fn mark(marks: &[AtomicU64], id: u32) -> bool {
    let bit = 1u64 << (id % 64);
    marks[(id / 64) as usize].fetch_or(bit, Ordering::Relaxed) & bit == 0
}

/// The lowest and highest certificate ids marked, as `(lo, hi)`; `lo > hi` when none.
type Span = (u32, u32);

/// No certificate marked.
const NO_SPAN: Span = (u32::MAX, 0);

/// The span covering both `a` and `b`.
fn join(a: Span, b: Span) -> Span {
    (a.0.min(b.0), a.1.max(b.1))
}

/// Vertex -> supported certificates, plus the bitset that deduplicates a kick's set.
#[derive(Debug, Default)]
pub(super) struct Contingency {
    supports: SupportLists,
    /// One bit a certificate id, all clear between kicks.
    marks: Vec<AtomicU64>,
}

impl Clone for Contingency {
    /// A copy with the same lists (the marks are all clear between kicks).
    fn clone(&self) -> Self {
        Self {
            supports: self.supports.clone(),
            marks: (self.marks.iter()).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl Contingency {
    /// A graph over `vertices` vertices with no certificates.
    pub(super) fn new(vertices: usize) -> Self {
        Self {
            supports: SupportLists::new(vertices),
            marks: Vec::new(),
        }
    }

    /// Records that certificate `id` depends on the trajectories of `verts`.
    pub(super) fn add(&mut self, id: u32, verts: &[u32]) {
        while self.marks.len() <= (id / 64) as usize {
            self.marks.push(AtomicU64::new(0));
        }
        for &v in verts {
            self.supports.add(v, id);
        }
    }

    /// Forgets certificate `id` (it depended on `verts`).
    pub(super) fn remove(&mut self, id: u32, verts: &[u32]) {
        for &v in verts {
            self.supports.remove(v, id);
        }
    }

    /// Replaces `out` with every certificate supported by `vertices`, each once, in increasing
    /// id order.
    pub(super) fn contingent(&mut self, vertices: &[u32], out: &mut Vec<u32>) {
        out.clear();
        let (supports, marks) = (&self.supports, &self.marks[..]);
        let mark_all = |chunk: &[u32]| {
            let ids = chunk.iter().flat_map(|&v| supports.of(v));
            ids.fold(NO_SPAN, |span, id| {
                mark(marks, id);
                join(span, (id, id))
            })
        };
        let (n, blocks) = (vertices.len(), team::blocks(vertices.len(), MARK_BLOCK));
        let (lo, hi) = if blocks > 1 {
            let mut chunks: Vec<&[u32]> = (0..blocks)
                .map(|b| &vertices[b * n / blocks..(b + 1) * n / blocks])
                .collect();
            let spans = team::map_parts(&mut chunks, |chunk| {
                let _zone = zone!("retime_task");
                mark_all(chunk)
            });
            spans.into_iter().fold(NO_SPAN, join)
        } else {
            mark_all(vertices)
        };
        if lo > hi {
            return;
        }
        for w in lo / 64..=hi / 64 {
            let word = &marks[w as usize];
            if word.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let mut bits = word.swap(0, Ordering::Relaxed);
            while bits != 0 {
                out.push(w * 64 + bits.trailing_zeros());
                bits &= bits - 1;
            }
        }
    }
}

/// Marks an empty slot of a [`Block`] and the end of a block chain.
const EMPTY: u32 = u32::MAX;

/// Certificate ids a block holds.
const BLOCK_IDS: usize = 7;

/// Up to [`BLOCK_IDS`] certificate ids of one vertex (`EMPTY` where none) and the next block of
/// its chain: 32 bytes.
#[derive(Clone, Copy, Debug)]
struct Block {
    ids: [u32; BLOCK_IDS],
    next: u32,
}

/// Every vertex's list of supported certificates, as chains of fixed-size blocks in one pool.
///
/// A vertex costs one `u32` (its chain's first block) until it supports a certificate, where a
/// `Vec` a vertex would cost its 24-byte header and a heap allocation of its own. Blocks emptied
/// by removals go to a free chain and are reused. The order of a vertex's ids is not kept
/// (callers sort what they collect).
#[derive(Clone, Debug, Default)]
struct SupportLists {
    head: Vec<u32>,
    blocks: Vec<Block>,
    /// First block of the chain of free blocks.
    free: u32,
}

impl SupportLists {
    /// Empty lists for `vertices` vertices.
    fn new(vertices: usize) -> Self {
        Self {
            head: vec![EMPTY; vertices],
            blocks: Vec::new(),
            free: EMPTY,
        }
    }

    /// The blocks of vertex `v`'s chain, first to last.
    fn chain(&self, v: u32) -> impl Iterator<Item = u32> + '_ {
        let first = self.head[v as usize];
        std::iter::successors((first != EMPTY).then_some(first), move |&b| {
            let next = self.blocks[b as usize].next;
            (next != EMPTY).then_some(next)
        })
    }

    /// The certificates vertex `v` supports, each as often as it was added.
    fn of(&self, v: u32) -> impl Iterator<Item = u32> + '_ {
        self.chain(v).flat_map(move |b| {
            self.blocks[b as usize]
                .ids
                .into_iter()
                .filter(|&id| id != EMPTY)
        })
    }

    /// Adds `id` to vertex `v`'s list: into the first empty slot of its chain, or a new first
    /// block.
    fn add(&mut self, v: u32, id: u32) {
        debug_assert_ne!(id, EMPTY);
        let slot = self.chain(v).find_map(|b| {
            let k = self.blocks[b as usize]
                .ids
                .iter()
                .position(|&x| x == EMPTY)?;
            Some((b, k))
        });
        if let Some((b, k)) = slot {
            self.blocks[b as usize].ids[k] = id;
            return;
        }
        let block = Block {
            ids: std::array::from_fn(|k| if k == 0 { id } else { EMPTY }),
            next: self.head[v as usize],
        };
        let b = if self.free == EMPTY {
            self.blocks.push(block);
            (self.blocks.len() - 1) as u32
        } else {
            let b = self.free;
            self.free = self.blocks[b as usize].next;
            self.blocks[b as usize] = block;
            b
        };
        self.head[v as usize] = b;
    }

    /// Removes one occurrence of `id` from vertex `v`'s list (if listed); a block left empty
    /// leaves the chain for the free chain.
    fn remove(&mut self, v: u32, id: u32) {
        let mut prev = EMPTY;
        let mut b = self.head[v as usize];
        while b != EMPTY {
            let block = &mut self.blocks[b as usize];
            let next = block.next;
            if let Some(k) = block.ids.iter().position(|&x| x == id) {
                block.ids[k] = EMPTY;
                if block.ids.iter().all(|&x| x == EMPTY) {
                    if prev == EMPTY {
                        self.head[v as usize] = next;
                    } else {
                        self.blocks[prev as usize].next = next;
                    }
                    self.blocks[b as usize].next = self.free;
                    self.free = b;
                }
                return;
            }
            prev = b;
            b = next;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn support_lists_reuse_emptied_blocks_and_keep_every_occurrence() {
        let mut lists = SupportLists::new(3);
        let sorted = |lists: &SupportLists, v| {
            let mut ids: Vec<u32> = lists.of(v).collect();
            ids.sort_unstable();
            ids
        };
        for id in 0..20 {
            lists.add(1, id);
        }
        lists.add(2, 5);
        lists.add(2, 5);
        assert_eq!(sorted(&lists, 1), (0..20).collect::<Vec<_>>());
        assert_eq!(
            sorted(&lists, 2),
            vec![5, 5],
            "a certificate listed twice stays twice"
        );
        assert!(sorted(&lists, 0).is_empty());
        let blocks = lists.blocks.len();
        assert_eq!(blocks, 3 + 1);
        for id in 0..14 {
            lists.remove(1, id);
        }
        lists.remove(1, 99);
        assert_eq!(sorted(&lists, 1), (14..20).collect::<Vec<_>>());
        for id in 100..114 {
            lists.add(0, id);
        }
        assert_eq!(lists.blocks.len(), blocks, "emptied blocks are reused");
        assert_eq!(sorted(&lists, 0), (100..114).collect::<Vec<_>>());
        assert_eq!(sorted(&lists, 1), (14..20).collect::<Vec<_>>());
        lists.remove(2, 5);
        assert_eq!(sorted(&lists, 2), vec![5]);
    }

    #[test]
    fn a_kick_collects_each_supported_certificate_once_in_id_order() {
        let mut g = Contingency::new(4);
        g.add(7, &[0, 1, 2, 3]);
        g.add(2, &[1, 2]);
        g.add(5, &[3]);
        let mut out = Vec::new();
        g.contingent(&[1, 2, 3], &mut out);
        assert_eq!(out, vec![2, 5, 7]);
        g.remove(7, &[0, 1, 2, 3]);
        g.contingent(&[0, 1], &mut out);
        assert_eq!(out, vec![2], "a new kick, without the removed certificate");
        g.add(130, &[0]);
        g.contingent(&[0], &mut out);
        assert_eq!(out, vec![130], "ids past the first word of the bitset");
        g.contingent(&[], &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn parallel_marking_matches_serial_marking() {
        let n = 3 * MARK_BLOCK;
        let mut g = Contingency::new(n);
        for id in 0..(2 * n) as u32 {
            let v = id % n as u32;
            g.add(id, &[v, (v * 7 + 3) % n as u32, (v * 13 + 5) % n as u32]);
        }
        let all: Vec<u32> = (0..n as u32).collect();
        let mut parallel = Vec::new();
        g.contingent(&all, &mut parallel);
        let mut serial = Vec::new();
        for chunk in all.chunks(MARK_BLOCK - 1) {
            let mut part = Vec::new();
            g.contingent(chunk, &mut part);
            serial.extend(part);
        }
        serial.sort_unstable();
        serial.dedup();
        assert_eq!(parallel, serial);
        assert_eq!(parallel.len(), 2 * n);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    #[test]
    fn concurrent_marks_claim_each_certificate_exactly_once() {
        loom::model(|| {
            let marks: Arc<Vec<AtomicU64>> = Arc::new(vec![AtomicU64::new(0)]);
            let ids = [[0u32, 1], [1, 2]];
            let handles: Vec<_> = ids
                .iter()
                .map(|&mine| {
                    let marks = Arc::clone(&marks);
                    loom::thread::spawn(move || {
                        mine.into_iter()
                            .filter(|&id| mark(&marks, id))
                            .collect::<Vec<u32>>()
                    })
                })
                .collect();
            let mut claimed: Vec<u32> = handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect();
            claimed.sort_unstable();
            assert_eq!(claimed, vec![0, 1, 2]);
        });
    }
}
