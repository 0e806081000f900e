//! The objects' colours, shared by the page and the pictures.

/// The colour (RGB, 0 to 1) of object `index`, the same in the page and the pictures.
pub(crate) fn object_colour(index: usize) -> [f32; 3] {
    const PALETTE: [[f32; 3]; 6] = [
        [0.55, 0.57, 0.62], // grey: the first object is usually the obstacle
        [0.85, 0.33, 0.22],
        [0.20, 0.50, 0.80],
        [0.90, 0.70, 0.20],
        [0.35, 0.70, 0.40],
        [0.65, 0.40, 0.75],
    ];
    PALETTE[index % PALETTE.len()]
}
