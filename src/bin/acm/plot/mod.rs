//! `acm plot`: PNG charts of a run's output directory, the analogues of thesis Fig. 6.7
//! (deeper penalty layers as a compactor closes) and CACM Fig. 2 (the spread of vertex time
//! steps).
//!
//! Reads `energy.csv` (required), `contact.csv` and `steps.csv` (written by ACM runs; a
//! synchronous run has neither, and their charts are skipped) and writes:
//!
//! * `energy.png`: energies, and linear momentum, over time;
//! * `contact.png`: pairs with a penalty layer active, and the deepest active layer, over time;
//! * `steps.png`: the histogram of vertex time steps over all frames.

mod charts;
mod error;
mod table;

pub(crate) use error::PlotError;

use std::path::{Path, PathBuf};

use charts::{Bar, Panel};
use table::Table;

/// What [`plot_dir`] did.
#[derive(Debug, Default)]
pub(crate) struct Plotted {
    /// The PNG files written.
    pub written: Vec<PathBuf>,
    /// Charts not drawn, and why.
    pub skipped: Vec<String>,
}

/// Reads the run output in `dir` and writes its charts there (see the module docs).
pub(crate) fn plot_dir(dir: &Path) -> Result<Plotted, PlotError> {
    if !dir.is_dir() {
        return Err(PlotError::Read {
            path: dir.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "not a directory of run output (acm run --out DIR)",
            ),
        });
    }
    let energy_path = dir.join("energy.csv");
    if !energy_path.exists() {
        return Err(PlotError::Read {
            path: dir.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "holds no energy.csv: run a scene into it first (acm run PROFILE --out {})",
                    dir.display()
                ),
            ),
        });
    }
    let mut plotted = Plotted::default();
    let energy = Table::read(&energy_path)?;
    let time = energy.column("time")?;
    let energies = ["kinetic", "elastic", "gravity", "penalty", "total"];
    let momenta = ["px", "py", "pz"];
    let panels = [
        Panel {
            title: "Energy",
            y_label: "energy (erg)",
            x: time,
            series: named_columns(&energy, &energies)?,
        },
        Panel {
            title: "Linear momentum",
            y_label: "momentum (g cm/s)",
            x: time,
            series: named_columns(&energy, &momenta)?,
        },
    ];
    draw(dir.join("energy.png"), &mut plotted, |p| {
        charts::lines(p, &panels)
    })?;

    match optional(&dir.join("contact.csv"))? {
        Some(contact) => {
            let time = contact.column("time")?;
            let panels = [
                Panel {
                    title: "Pairs with a penalty layer active",
                    y_label: "pairs",
                    x: time,
                    series: named_columns(&contact, &["active_pairs"])?,
                },
                Panel {
                    title: "Deepest active penalty layer",
                    y_label: "layer",
                    x: time,
                    series: named_columns(&contact, &["deepest_layer"])?,
                },
            ];
            draw(dir.join("contact.png"), &mut plotted, |p| {
                charts::lines(p, &panels)
            })?;
        }
        None => plotted
            .skipped
            .push("contact.png: no contact.csv (ACM runs write it)".into()),
    }

    match optional(&dir.join("steps.csv"))? {
        Some(steps) => {
            let bars = step_bars(&steps)?;
            draw(dir.join("steps.png"), &mut plotted, |p| {
                charts::log_histogram(
                    p,
                    "Vertex time steps, all frames",
                    "time step (s)",
                    "share of vertex-frames (%)",
                    &bars,
                )
            })?;
        }
        None => plotted
            .skipped
            .push("steps.png: no steps.csv (ACM runs write it)".into()),
    }
    Ok(plotted)
}

/// The columns `names` of `table`, with their names.
fn named_columns<'a>(
    table: &'a Table,
    names: &[&'a str],
) -> Result<Vec<(&'a str, &'a [f64])>, PlotError> {
    names
        .iter()
        .map(|&n| table.column(n).map(|c| (n, c)))
        .collect()
}

/// Reads `path` if it exists.
fn optional(path: &Path) -> Result<Option<Table>, PlotError> {
    if path.exists() {
        Table::read(path).map(Some)
    } else {
        Ok(None)
    }
}

/// Draws one chart into `path` and records it.
fn draw(
    path: PathBuf,
    plotted: &mut Plotted,
    chart: impl FnOnce(&Path) -> charts::Drawn,
) -> Result<(), PlotError> {
    chart(&path).map_err(|message| PlotError::Draw {
        path: path.clone(),
        message,
    })?;
    plotted.written.push(path);
    Ok(())
}

/// The histogram of `steps.csv` summed over frames, in percent: each column after `time` is a
/// bin named by its lower edge, and a bin ends where the next begins (the last is as wide, in
/// log10, as the one before it).
fn step_bars(steps: &Table) -> Result<Vec<Bar>, PlotError> {
    let mut edges = Vec::new();
    let mut totals = Vec::new();
    for (name, counts) in steps.after_first() {
        match name.parse::<f64>() {
            Ok(edge) if edge > 0.0 && edges.last().is_none_or(|&e| edge.log10() > e) => {
                edges.push(edge.log10());
            }
            _ => {
                return Err(steps.header_error(format!(
                    "column {name:?} is not a bin edge (increasing seconds > 0)"
                )))
            }
        }
        if let Some(row) = counts.iter().position(|&n| !is_count(n)) {
            return Err(steps.row_error(
                row,
                format!(
                    "{name} is {:?}, not a count of vertices (a whole number from 0 to 2^53)",
                    counts[row]
                ),
            ));
        }
        totals.push(counts.iter().sum::<f64>());
    }
    if edges.len() < 2 {
        return Err(steps.header_error("fewer than two bins".into()));
    }
    let width = edges[edges.len() - 1] - edges[edges.len() - 2];
    let all: f64 = totals.iter().sum::<f64>().max(1.0);
    Ok(edges
        .iter()
        .zip(&totals)
        .enumerate()
        .map(|(k, (&from, &count))| Bar {
            from,
            to: edges.get(k + 1).copied().unwrap_or(from + width),
            height: 100.0 * count / all,
        })
        .collect())
}

/// Whether `n` is a whole number from 0 to 2^53 (every such count is exact in `f64`).
fn is_count(n: f64) -> bool {
    (0.0..=9_007_199_254_740_992.0).contains(&n) && n.fract() == 0.0
}
