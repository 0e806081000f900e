//! The broad phase: sweep and prune over the parts' bounding boxes along x (thesis §3.1.5
//! keeps three sorted lists; one sorted list and a full box test is enough here).

use glam::DVec3;

/// The pairs of boxes (by index, smaller first, in increasing order) that overlap, skipping
/// pairs for which `skip(i, j)` holds.
pub(crate) fn overlapping_pairs(
    boxes: &[(DVec3, DVec3)],
    mut skip: impl FnMut(usize, usize) -> bool,
) -> Vec<(usize, usize)> {
    let mut order: Vec<usize> = (0..boxes.len()).collect();
    order.sort_by(|&a, &b| boxes[a].0.x.total_cmp(&boxes[b].0.x).then(a.cmp(&b)));
    let mut pairs = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        let (lo, hi) = boxes[i];
        for &j in &order[k + 1..] {
            let (lo_j, hi_j) = boxes[j];
            if lo_j.x > hi.x {
                break;
            }
            let overlap = lo.y <= hi_j.y && lo_j.y <= hi.y && lo.z <= hi_j.z && lo_j.z <= hi.z;
            if overlap && !skip(i.min(j), i.max(j)) {
                pairs.push((i.min(j), i.max(j)));
            }
        }
    }
    pairs.sort_unstable();
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_and_prune_finds_exactly_the_overlapping_boxes() {
        let mut rng = crate::test_rng::Rng(7);
        let boxes: Vec<(DVec3, DVec3)> = (0..60)
            .map(|_| {
                let lo = DVec3::new(
                    rng.uniform(0.0, 10.0),
                    rng.uniform(0.0, 10.0),
                    rng.uniform(0.0, 10.0),
                );
                (lo, lo + DVec3::splat(rng.uniform(0.1, 2.0)))
            })
            .collect();
        let found = overlapping_pairs(&boxes, |_, _| false);
        let mut brute = Vec::new();
        for i in 0..boxes.len() {
            for j in i + 1..boxes.len() {
                let (a, b) = (boxes[i], boxes[j]);
                if a.0.cmple(b.1).all() && b.0.cmple(a.1).all() {
                    brute.push((i, j));
                }
            }
        }
        assert_eq!(found, brute);
    }
}
