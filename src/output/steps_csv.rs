//! `steps.csv`: the distribution of vertex time steps per frame (CACM Fig. 2's histogram).

use std::fmt::Write as _;
use std::path::Path;

use crate::{Frame, FrameSink, RunError};

use super::files::CsvFile;

/// Bins per decade of time step.
const BINS_PER_DECADE: i32 = 4;
/// The first bin's lower edge is `10^FIRST_DECADE` s.
const FIRST_DECADE: i32 = -10;
/// The last bin's upper edge is `10^LAST_DECADE` s.
const LAST_DECADE: i32 = 0;
/// Number of bins.
const BINS: i32 = (LAST_DECADE - FIRST_DECADE) * BINS_PER_DECADE;

/// Appends a row per frame: the time, then how many free vertices have their time step (see
/// [`crate::FrameSource::vertex_steps`]) in each bin. The header names each bin by its lower
/// edge in seconds; bins are a quarter decade wide from 1e-10 s to 1 s, and steps outside that
/// range count in the first or last bin.
#[derive(Debug)]
pub struct StepsCsv {
    out: CsvFile,
    /// The row being written.
    row: String,
    steps: Vec<f64>,
    counts: Vec<u64>,
}

/// The lower edge of bin `k` (s).
fn lower_edge(k: i32) -> f64 {
    10f64.powf(f64::from(FIRST_DECADE) + f64::from(k) / f64::from(BINS_PER_DECADE))
}

impl StepsCsv {
    /// Creates (truncates) the file and writes the header.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let edges: Vec<String> = (0..BINS)
            .map(|k| format!("{:.3e}", lower_edge(k)))
            .collect();
        Ok(Self {
            out: CsvFile::create(path, &format!("time,{}", edges.join(",")))?,
            row: String::new(),
            steps: Vec::new(),
            counts: vec![0; BINS as usize],
        })
    }
}

impl FrameSink for StepsCsv {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        frame.source.vertex_steps(&mut self.steps);
        self.counts.fill(0);
        for &h in self.steps.iter().filter(|h| h.is_finite()) {
            let k = ((h.log10() - f64::from(FIRST_DECADE)) * f64::from(BINS_PER_DECADE)).floor();
            self.counts[k.clamp(0.0, f64::from(BINS - 1)) as usize] += 1;
        }
        self.row.clear();
        let _ = write!(self.row, "{}", frame.time);
        for c in &self.counts {
            let _ = write!(self.row, ",{c}");
        }
        self.out.row(format_args!("{}", self.row))?;
        Ok(())
    }
}
