//! Compressed sparse rows.

/// Compressed sparse rows: row `i` is `items[offsets[i]..offsets[i + 1]]`. Items are `u32`
/// unless a table's items are known to be small (`u16` halves the table).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Csr<T = u32> {
    /// Row start offsets into `items`; `rows() + 1` entries (empty for a default `Csr`).
    pub offsets: Vec<u32>,
    /// The items of all rows, concatenated.
    pub items: Vec<T>,
}

impl<T: Copy + Default + Ord> Csr<T> {
    /// Builds from `(row, item)` pairs; each row's items are sorted ascending (deterministic).
    /// Duplicate pairs are kept.
    ///
    /// Two passes over `pairs` (a counting sort by row), so the only allocations are the
    /// result's, sized exactly: no list of pairs is collected.
    ///
    /// # Panics
    /// If a row index is `>= rows` or there are more than `u32::MAX` pairs (programming errors).
    pub(crate) fn from_pairs<I>(rows: usize, pairs: I) -> Self
    where
        I: IntoIterator<Item = (u32, T)>,
        I::IntoIter: Clone,
    {
        let pairs = pairs.into_iter();
        let mut offsets = vec![0u32; rows + 1];
        for (r, _) in pairs.clone() {
            assert!(
                (r as usize) < rows,
                "Csr::from_pairs: row {r} out of range ({rows} rows)"
            );
            let count = &mut offsets[r as usize + 1];
            *count = count
                .checked_add(1)
                .expect("Csr::from_pairs: more than u32::MAX items");
        }
        for i in 0..rows {
            offsets[i + 1] = offsets[i + 1]
                .checked_add(offsets[i])
                .expect("Csr::from_pairs: more than u32::MAX items");
        }
        // `next[r]`: where row r's next item goes.
        let mut next = offsets[..rows].to_vec();
        let mut items = vec![T::default(); offsets[rows] as usize];
        for (r, item) in pairs {
            let slot = &mut next[r as usize];
            items[*slot as usize] = item;
            *slot += 1;
        }
        for i in 0..rows {
            items[offsets[i] as usize..offsets[i + 1] as usize].sort_unstable();
        }
        Self { offsets, items }
    }

    /// The items of row `i`.
    ///
    /// # Panics
    /// If `i >= self.rows()`.
    #[inline]
    pub(crate) fn row(&self, i: usize) -> &[T] {
        &self.items[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// Number of rows.
    #[inline]
    pub(crate) fn rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
}

impl Csr {
    /// Per vertex of `vertices`, the indices of the `triangles` around it, ascending.
    pub(crate) fn vertex_triangles(vertices: usize, triangles: &[[u32; 3]]) -> Self {
        Self::from_pairs(
            vertices,
            triangles
                .iter()
                .enumerate()
                .flat_map(|(t, tri)| tri.map(|v| (v, t as u32))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sorted_and_complete() {
        let csr = Csr::from_pairs(4, [(2, 9), (0, 3), (2, 1), (0, 1), (2, 5)]);
        assert_eq!(csr.rows(), 4);
        assert_eq!(csr.row(0), &[1, 3]);
        assert_eq!(csr.row(1), &[] as &[u32]);
        assert_eq!(csr.row(2), &[1, 5, 9]);
        assert_eq!(csr.row(3), &[] as &[u32]);
        assert_eq!(csr.offsets, vec![0, 2, 2, 5, 5]);
    }

    #[test]
    fn duplicates_kept() {
        let csr = Csr::from_pairs(2, [(1, 4), (1, 2), (1, 4)]);
        assert_eq!(csr.row(0), &[] as &[u32]);
        assert_eq!(csr.row(1), &[2, 4, 4]);
    }

    #[test]
    fn small_items_keep_their_type_and_order() {
        let csr: Csr<u16> = Csr::from_pairs(2, [(1, 65535u16), (0, 7), (1, 3)]);
        assert_eq!(csr.row(0), &[7]);
        assert_eq!(csr.row(1), &[3, 65535]);
        assert_eq!(std::mem::size_of_val(&csr.items[0]), 2);
    }

    #[test]
    fn default_has_no_rows() {
        assert_eq!(Csr::<u32>::default().rows(), 0);
        assert_eq!(Csr::<u32>::from_pairs(0, []).rows(), 0);
    }
}
