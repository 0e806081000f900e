//! Per-element material constants, stored once per distinct value.
//!
//! Every element of an object shares its material's stiffness and damping, so an element family
//! holds a short table of the distinct `(stiffness, damping)` pairs and one index per element
//! (4 bytes instead of 16), and no index at all while every element has the first pair (one
//! material: 4 bytes an element saved, 25 MB at 10^6 vertices). Values are told apart by their
//! bits, so every element reads back exactly the value it was given.

use std::collections::HashMap;

use super::element_family::permute;

/// The stiffness and damping of each element of a family (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Materials {
    /// The distinct `(stiffness, damping)` pairs, in order of first use.
    table: Vec<(f64, f64)>,
    /// Per element: its entry in `table`; empty while every element has entry 0.
    index: Vec<u32>,
    /// Number of elements.
    len: usize,
    /// Per entry of `table`: where it is, by the bits of its values (for [`Materials::push`]).
    lookup: HashMap<(u64, u64), u32>,
}

impl Materials {
    /// Appends an element with `stiffness` and `damping`.
    pub(crate) fn push(&mut self, stiffness: f64, damping: f64) {
        let table = &mut self.table;
        let entry = *self
            .lookup
            .entry((stiffness.to_bits(), damping.to_bits()))
            .or_insert_with(|| {
                table.push((stiffness, damping));
                u32::try_from(table.len() - 1).expect("fewer than 2^32 materials")
            });
        if self.index.is_empty() && entry != 0 {
            self.index = vec![0; self.len];
        }
        if !self.index.is_empty() {
            self.index.push(entry);
        }
        self.len += 1;
    }

    /// Number of elements.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Element `e`'s `(stiffness, damping)`.
    #[inline]
    fn of(&self, e: usize) -> (f64, f64) {
        debug_assert!(e < self.len);
        match self.index.get(e) {
            Some(&entry) => self.table[entry as usize],
            None => self.table[0],
        }
    }

    /// The stiffness of element `e`.
    #[inline]
    pub fn stiffness(&self, e: usize) -> f64 {
        self.of(e).0
    }

    /// The damping coefficient of element `e`.
    #[inline]
    pub(crate) fn damping(&self, e: usize) -> f64 {
        self.of(e).1
    }

    /// Whether any element's damping coefficient is nonzero.
    pub(crate) fn damped(&self) -> bool {
        self.table.iter().any(|&(_, c)| c != 0.0)
    }

    /// The same elements in a new order: element `i` of the result is element `order[i]`. The
    /// result keeps no lookup: it is built to be read (elements pushed to it get new entries).
    pub(crate) fn permuted(&self, order: &[u32]) -> Self {
        let index = if self.index.is_empty() {
            Vec::new()
        } else {
            permute(&self.index, order)
        };
        Self {
            table: self.table.clone(),
            index,
            len: order.len(),
            lookup: HashMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_element_reads_back_its_own_bits_from_a_table_of_distinct_values() {
        let values = [
            (1.0, 0.5),
            (2.0, 0.5),
            (1.0, 0.5),
            (-0.0, 0.0),
            (0.0, 0.0),
            (2.0, 0.5),
        ];
        let mut m = Materials::default();
        for &(k, c) in &values {
            m.push(k, c);
        }
        assert_eq!(m.len(), values.len());
        assert_eq!(m.table.len(), 4, "(1, .5), (2, .5), (-0, 0), (0, 0)");
        for (e, &(k, c)) in values.iter().enumerate() {
            assert_eq!(m.stiffness(e).to_bits(), f64::to_bits(k), "element {e}");
            assert_eq!(m.damping(e).to_bits(), f64::to_bits(c), "element {e}");
        }
        let p = m.permuted(&[5, 3, 0]);
        assert_eq!(p.len(), 3);
        assert_eq!((p.stiffness(0), p.damping(0)), (2.0, 0.5));
        assert_eq!(p.stiffness(1).to_bits(), (-0.0f64).to_bits());
        assert_eq!((p.stiffness(2), p.damping(2)), (1.0, 0.5));
        assert!(p.lookup.is_empty());
    }

    #[test]
    fn one_material_keeps_no_index_until_a_second_arrives() {
        let mut m = Materials::default();
        for _ in 0..5 {
            m.push(3.0, 0.25);
        }
        assert!(m.index.is_empty());
        assert_eq!(m.len(), 5);
        let p = m.permuted(&[4, 0]);
        assert_eq!((p.len(), p.stiffness(1), p.damping(1)), (2, 3.0, 0.25));
        assert!(p.index.is_empty());
        m.push(7.0, 0.0);
        m.push(3.0, 0.25);
        assert_eq!(m.index, vec![0, 0, 0, 0, 0, 1, 0]);
        let read: Vec<(f64, f64)> = (0..7).map(|e| (m.stiffness(e), m.damping(e))).collect();
        let mut want = vec![(3.0, 0.25); 7];
        want[5] = (7.0, 0.0);
        assert_eq!(read, want);
    }
}
