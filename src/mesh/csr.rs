//! Compressed sparse rows.

/// Compressed sparse rows: row `i` is `items[offsets[i]..offsets[i + 1]]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Csr {
    /// Row start offsets into `items`; `rows() + 1` entries (empty for a default `Csr`).
    pub offsets: Vec<u32>,
    /// The items of all rows, concatenated.
    pub items: Vec<u32>,
}

impl Csr {
    /// Builds from `(row, item)` pairs; each row's items are sorted ascending (deterministic).
    /// Duplicate pairs are kept.
    ///
    /// # Panics
    /// If a row index is `>= rows` or there are more than `u32::MAX` pairs (programming errors).
    pub fn from_pairs(rows: usize, pairs: impl IntoIterator<Item = (u32, u32)>) -> Csr {
        let mut pairs: Vec<(u32, u32)> = pairs.into_iter().collect();
        pairs.sort_unstable();
        assert!(
            u32::try_from(pairs.len()).is_ok(),
            "Csr::from_pairs: more than u32::MAX items"
        );
        let mut offsets = vec![0u32; rows + 1];
        for &(r, _) in &pairs {
            assert!(
                (r as usize) < rows,
                "Csr::from_pairs: row {r} out of range ({rows} rows)"
            );
            offsets[r as usize + 1] += 1;
        }
        for i in 0..rows {
            offsets[i + 1] += offsets[i];
        }
        let items = pairs.into_iter().map(|(_, item)| item).collect();
        Csr { offsets, items }
    }

    /// The items of row `i`.
    ///
    /// # Panics
    /// If `i >= self.rows()`.
    #[inline]
    pub fn row(&self, i: usize) -> &[u32] {
        &self.items[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// Number of rows.
    #[inline]
    pub fn rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
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
    fn default_has_no_rows() {
        assert_eq!(Csr::default().rows(), 0);
        assert_eq!(Csr::from_pairs(0, []).rows(), 0);
    }
}
