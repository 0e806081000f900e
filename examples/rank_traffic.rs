//! What would cross MPI ranks if a scene ran distributed (`docs/distributed.md`): runs a profile
//! on one machine, partitions its free vertices into R ranks, and counts, per time window, the
//! data each rank would receive.
//!
//! `cargo run --release --example rank_traffic -- PROFILE --until T [--from S] --window W
//!  [--ranks 4,16,64] [--balance steps|vertices]`
//!
//! - **Partition**: recursive coordinate bisection of the free vertices at time `--from` (split
//!   the longest side of the bounding box at the weighted median). `--balance steps` (default)
//!   weighs each vertex by its kick rate `1 / h` (`Simulation::vertex_steps`): the work an AVI
//!   spends on it; `vertices` weighs all alike. Fixed and scripted vertices move as the scene
//!   says, so every rank holds them and they cost no traffic.
//! - **Ghosts** of a rank: vertices it does not own that share a spring, hinge or triangle with
//!   one it owns (elastic ghosts, fixed), or that contact may pair with one it owns (contact
//!   ghosts, per window): a side of a pair with a layer active at the window's start or end,
//!   or a vertex whose swept box (its start and end positions, grown by half of
//!   `1.1 eta1 + 1.5 L`, L the longest edge) meets the box of an owned vertex. Any vertex of a
//!   vertex-triangle or edge-edge pair closer than `1.1 eta1` is within `1.1 eta1 + 1.5 L` of
//!   a vertex on the other side.
//! - **Knots**: each time an event changes a vertex's velocity it re-bases the vertex (a new
//!   knot of its piecewise-linear trajectory). A rank receives every knot of its ghosts: 56 bytes
//!   (time, position, velocity as f64), plus 8 bytes (vertex id, knot count) per ghost that has
//!   knots in the window. Commit: one all-reduce of (time, flag), 16 bytes, per window, in
//!   `ceil(log2 R)` rounds.
//! - **Rounds**: the distinct times of a rank's ghost knots in a window: how often a rank that
//!   exchanges halos tick by tick must hear from its neighbours.
//! - **Computation**: a rank's kicks (knots of the vertices it owns), and per window the
//!   busiest rank's kicks over the mean (load imbalance).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use acm::events::EventKind;
use acm::prelude::{FrameSource, Stepper};
use acm::scene::profile;
use acm::state::VertexKind;
use acm::{NoFrames, Simulation};
use glam::DVec3;

const USAGE: &str = "usage: rank_traffic PROFILE --until T [--from S] --window W \
                     [--ranks 4,16,64] [--balance steps|vertices]";
/// Bytes of one trajectory knot: time, position and velocity as f64.
const KNOT_BYTES: u64 = 56;
/// Bytes naming a ghost in a window's message: vertex id and knot count, u32 each.
const GHOST_HEADER_BYTES: u64 = 8;
/// Bytes of one all-reduce contribution for the commit: a time and a flag.
const COMMIT_BYTES: u64 = 16;
/// A vertex no rank owns (fixed or scripted: every rank holds it).
const SHARED: u16 = u16::MAX;

struct Args {
    profile: PathBuf,
    from: f64,
    until: f64,
    window: f64,
    ranks: Vec<usize>,
    by_steps: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut profile = None;
    let (mut from, mut until, mut window) = (0.0, None, None);
    let mut ranks = vec![4, 16, 64];
    let mut by_steps = true;
    let mut it = args.iter();
    let seconds = |flag: &str, v: Option<&String>| -> Result<f64, String> {
        let v = v.ok_or(format!("{flag} needs a value"))?;
        match v.parse::<f64>() {
            Ok(s) if s.is_finite() && s >= 0.0 => Ok(s),
            _ => Err(format!("{flag} {v:?}: not a time in seconds (>= 0)")),
        }
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--from" => from = seconds(a, it.next())?,
            "--until" => until = Some(seconds(a, it.next())?),
            "--window" => window = Some(seconds(a, it.next())?),
            "--ranks" => {
                let v = it.next().ok_or("--ranks needs a value")?;
                ranks = v
                    .split(',')
                    .map(|r| match r.trim().parse::<usize>() {
                        Ok(n) if (1..SHARED as usize).contains(&n) => Ok(n),
                        _ => Err(format!(
                            "--ranks {v:?}: {r:?} is not a rank count (1 to 65534)"
                        )),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--balance" => match it.next().map(String::as_str) {
                Some("steps") => by_steps = true,
                Some("vertices") => by_steps = false,
                other => {
                    let other = other.map_or("nothing".into(), |o| format!("{o:?}"));
                    return Err(format!("--balance {other}: expected steps or vertices"));
                }
            },
            flag if flag.starts_with('-') => return Err(format!("unknown flag {flag:?}")),
            path if profile.is_none() => profile = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument {extra:?}")),
        }
    }
    let profile = profile.ok_or("missing PROFILE")?;
    let until = until.ok_or("missing --until")?;
    let window = window.ok_or("missing --window")?;
    if until <= from {
        return Err(format!("--until {until} must be after --from {from}"));
    }
    if window <= 0.0 {
        return Err("--window must be positive".into());
    }
    Ok(Args {
        profile,
        from,
        until,
        window,
        ranks,
        by_steps,
    })
}

/// Assigns `items` to ranks `first..first + count` by recursive coordinate bisection: split the
/// longest side of their bounding box where the weight on each side matches its share of ranks.
fn bisect(
    items: &mut [u32],
    x: &[DVec3],
    w: &[f64],
    first: usize,
    count: usize,
    owner: &mut [u16],
) {
    if count == 1 || items.len() <= 1 {
        items.iter().for_each(|&v| owner[v as usize] = first as u16);
        return;
    }
    let (lo, hi) = items.iter().fold((DVec3::MAX, DVec3::MIN), |(lo, hi), &v| {
        (lo.min(x[v as usize]), hi.max(x[v as usize]))
    });
    let axis = (hi - lo).max_position();
    items.sort_unstable_by(|&a, &b| {
        x[a as usize][axis]
            .total_cmp(&x[b as usize][axis])
            .then(a.cmp(&b))
    });
    let left = count / 2;
    let target = items.iter().map(|&v| w[v as usize]).sum::<f64>() * left as f64 / count as f64;
    let (mut sum, mut cut) = (0.0, 0);
    while cut < items.len() - 1 && sum + w[items[cut] as usize] <= target {
        sum += w[items[cut] as usize];
        cut += 1;
    }
    let (a, b) = items.split_at_mut(cut.max(1));
    bisect(a, x, w, first, left, owner);
    bisect(b, x, w, first + left, count - left, owner);
}

/// Pushes `(vertex, rank)` for each vertex of `stencil` and each other rank that owns a vertex of
/// it (that rank needs the vertex as a ghost); returns whether `stencil` spans ranks.
fn ghosts_of(stencil: &[u32], owner: &[u16], out: &mut Vec<(u32, u16)>) -> bool {
    let mut crosses = false;
    for &a in stencil {
        for &b in stencil {
            let (ra, rb) = (owner[a as usize], owner[b as usize]);
            if ra != rb && ra != SHARED && rb != SHARED {
                out.push((a, rb));
                crosses = true;
            }
        }
    }
    crosses
}

/// Pairs of free vertices whose swept boxes from `p0` to `p1`, grown by `reach / 2`, overlap.
fn close_pairs(free: &[u32], p0: &[DVec3], p1: &[DVec3], reach: f64) -> Vec<(u32, u32)> {
    let half = DVec3::splat(0.5 * reach);
    let boxes: Vec<(DVec3, DVec3)> = free
        .iter()
        .map(|&v| {
            (
                p0[v as usize].min(p1[v as usize]) - half,
                p0[v as usize].max(p1[v as usize]) + half,
            )
        })
        .collect();
    let cell = boxes
        .iter()
        .map(|(lo, hi)| (*hi - *lo).max_element())
        .fold(reach, f64::max);
    let key = |p: DVec3| (p / cell).floor().as_i64vec3().to_array();
    let mut grid: HashMap<[i64; 3], Vec<usize>> = HashMap::new();
    for (i, b) in boxes.iter().enumerate() {
        grid.entry(key(b.0)).or_default().push(i);
    }
    let mut pairs = Vec::new();
    for (i, (lo, hi)) in boxes.iter().enumerate() {
        let k = key(*lo);
        for d in 0..27 {
            let c = [k[0] + d % 3 - 1, k[1] + d / 3 % 3 - 1, k[2] + d / 9 - 1];
            for &j in grid.get(&c).into_iter().flatten().filter(|&&j| j > i) {
                let (lj, hj) = boxes[j];
                if lo.cmple(hj).all() && lj.cmple(*hi).all() {
                    pairs.push((free[i], free[j]));
                }
            }
        }
    }
    pairs
}

/// Mean and maximum over (window, rank) samples.
#[derive(Default, Clone, Copy)]
struct Summary {
    sum: f64,
    n: u64,
    max: f64,
}

impl Summary {
    fn add(&mut self, x: f64) {
        self.sum += x;
        self.n += 1;
        self.max = self.max.max(x);
    }
    fn show(&self, scale: f64, digits: usize) -> String {
        let mean = self.sum / self.n.max(1) as f64 / scale;
        format!("{mean:.digits$} ({:.digits$})", self.max / scale)
    }
}

/// One partition and what its ranks received, summed over the windows.
struct Partition {
    ranks: usize,
    owner: Vec<u16>,
    elastic: Vec<(u32, u16)>,
    ghosts: Summary,
    contact_ghosts: Summary,
    cross_pairs: Summary,
    knots_in: Summary,
    bytes_in: Summary,
    rounds: Summary,
    neighbours: Summary,
    kicks: Summary,
    imbalance: Summary,
    total_in: u64,
    total_kicks: u64,
}

/// The window just ended: its kicks `(vertex, time)`, contact pairs at its two ends, close pairs.
struct Window<'a> {
    kicks: &'a [(u32, f64)],
    penalized: &'a [Vec<u32>],
    close: &'a [(u32, u32)],
}

impl Partition {
    fn new(sim: &Simulation, ranks: usize, weight: &[f64], x: &[DVec3]) -> Self {
        let state = sim.model().state();
        let mut owner = vec![SHARED; state.len()];
        let mut free: Vec<u32> = (0..state.len() as u32)
            .filter(|&v| state.kind[v as usize] == VertexKind::Free)
            .collect();
        bisect(&mut free, x, weight, 0, ranks, &mut owner);
        let mut elastic = Vec::new();
        let (springs, hinges) = (
            &sim.model().springs().kernel.ends,
            &sim.model().hinges().kernel.verts,
        );
        for s in springs {
            ghosts_of(s, &owner, &mut elastic);
        }
        for h in hinges {
            ghosts_of(h, &owner, &mut elastic);
        }
        for t in sim.model().triangles() {
            ghosts_of(t, &owner, &mut elastic);
        }
        elastic.sort_unstable();
        elastic.dedup();
        let z = Summary::default();
        Partition {
            ranks,
            owner,
            elastic,
            ghosts: z,
            contact_ghosts: z,
            cross_pairs: z,
            knots_in: z,
            bytes_in: z,
            rounds: z,
            neighbours: z,
            kicks: z,
            imbalance: z,
            total_in: 0,
            total_kicks: 0,
        }
    }

    fn record(&mut self, w: &Window<'_>) {
        let r = self.ranks;
        let mut ghost = self.elastic.clone();
        let mut cross = 0;
        for pair in w.penalized {
            cross += ghosts_of(pair, &self.owner, &mut ghost) as usize;
        }
        for &(a, b) in w.close {
            ghosts_of(&[a, b], &self.owner, &mut ghost);
        }
        ghost.sort_unstable();
        ghost.dedup();
        self.cross_pairs.add(cross as f64 / 2.0); // sampled at both ends of the window
        let mut knots = vec![0u64; self.owner.len()];
        let mut kicks = vec![0u64; r];
        for &(v, _) in w
            .kicks
            .iter()
            .filter(|&&(v, _)| self.owner[v as usize] != SHARED)
        {
            knots[v as usize] += 1;
            kicks[self.owner[v as usize] as usize] += 1;
        }
        let busiest = kicks.iter().copied().max().unwrap_or(0) as f64;
        let mean = kicks.iter().sum::<u64>() as f64 / r as f64;
        if mean > 0.0 {
            self.imbalance.add(busiest / mean);
        }
        let (mut count, mut contact, mut bytes, mut knots_in) =
            (vec![0u64; r], vec![0u64; r], vec![0u64; r], vec![0u64; r]);
        let mut senders = vec![Vec::new(); r];
        for &(v, rank) in &ghost {
            let k = rank as usize;
            count[k] += 1;
            contact[k] += self.elastic.binary_search(&(v, rank)).is_err() as u64;
            knots_in[k] += knots[v as usize];
            bytes[k] += knots[v as usize] * KNOT_BYTES
                + (knots[v as usize] > 0) as u64 * GHOST_HEADER_BYTES;
            senders[k].push(self.owner[v as usize]);
        }
        let mut is_ghost = vec![false; self.owner.len()];
        ghost.iter().for_each(|&(v, _)| is_ghost[v as usize] = true);
        let mut times = vec![Vec::new(); r];
        for &(v, t) in w.kicks.iter().filter(|&&(v, _)| is_ghost[v as usize]) {
            let lo = ghost.partition_point(|&(g, _)| g < v);
            for &(_, rank) in ghost[lo..].iter().take_while(|&&(g, _)| g == v) {
                times[rank as usize].push(t);
            }
        }
        let commit = COMMIT_BYTES * (r as f64).log2().ceil() as u64;
        for k in 0..r {
            times[k].sort_unstable_by(f64::total_cmp);
            times[k].dedup();
            senders[k].sort_unstable();
            senders[k].dedup();
            self.ghosts.add(count[k] as f64);
            self.contact_ghosts.add(contact[k] as f64);
            self.knots_in.add(knots_in[k] as f64);
            self.bytes_in.add((bytes[k] + commit) as f64);
            self.rounds.add(times[k].len() as f64);
            self.neighbours.add(senders[k].len() as f64);
            self.kicks.add(kicks[k] as f64);
            self.total_in += knots_in[k];
            self.total_kicks += kicks[k];
        }
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("rank_traffic: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let scene = match profile::load(&args.profile, &[]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rank_traffic: {e}");
            return ExitCode::from(2);
        }
    };
    let sim = match Simulation::new(&scene) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rank_traffic: {e}");
            return ExitCode::from(2);
        }
    };
    let free = sim
        .model()
        .state()
        .kind
        .iter()
        .filter(|&&k| k == VertexKind::Free)
        .count();
    if let Some(&r) = args.ranks.iter().find(|&&r| r > free) {
        eprintln!("rank_traffic: --ranks {r}: more ranks than the {free} free vertices");
        return ExitCode::from(2);
    }
    match run(&args, sim, scene.contact.eta1) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rank_traffic: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &Args, mut sim: Simulation, eta1: f64) -> Result<(), Box<dyn std::error::Error>> {
    let kind = sim.model().state().kind.clone();
    let free: Vec<u32> = (0..kind.len() as u32)
        .filter(|&v| kind[v as usize] == VertexKind::Free)
        .collect();
    sim.run_until(args.from, &mut NoFrames)?;
    let mut p0 = Vec::new();
    sim.model().positions_at(args.from, &mut p0);
    let mut weight = vec![1.0; p0.len()];
    if args.by_steps {
        sim.vertex_steps(&mut weight);
        weight
            .iter_mut()
            .for_each(|h| *h = if h.is_finite() { 1.0 / *h } else { 0.0 });
    }
    let mut parts: Vec<Partition> = args
        .ranks
        .iter()
        .map(|&r| Partition::new(&sim, r, &weight, &p0))
        .collect();
    let longest = sim
        .model()
        .triangles()
        .iter()
        .filter(|t| t.iter().any(|&v| kind[v as usize] == VertexKind::Free))
        .flat_map(|t| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])])
        .map(|(a, b)| p0[a as usize].distance(p0[b as usize]))
        .fold(0.0, f64::max);
    let reach = 1.1 * eta1 + 1.5 * longest;
    let penalized = |sim: &Simulation| {
        sim.penalty_pairs()
            .map(|(v, _)| v.to_vec())
            .collect::<Vec<_>>()
    };

    let mut last_t = sim.model().state().t.clone();
    let (mut kicks, mut pairs) = (Vec::new(), penalized(&sim));
    let (mut windows, mut events, mut engine) = (0u64, 0u64, 0.0);
    let count = ((args.until - args.from) / args.window - 1e-9).ceil() as u64;
    let end = |k: u64| (args.from + (k + 1) as f64 * args.window).min(args.until);
    let mut p1 = Vec::new();
    loop {
        let started = Instant::now();
        let event = sim.step(&mut NoFrames)?;
        engine += started.elapsed().as_secs_f64();
        let time = event.map_or(f64::INFINITY, |e| e.time);
        while windows < count && time >= end(windows) {
            // The event at `time` is done: a vertex it kicked is extrapolated back to the
            // window's end with its new velocity (off by one kick over time - end).
            sim.model().positions_at(end(windows), &mut p1);
            pairs.extend(penalized(&sim));
            let close = close_pairs(&free, &p0, &p1, reach);
            let w = Window {
                kicks: &kicks,
                penalized: &pairs,
                close: &close,
            };
            parts.iter_mut().for_each(|p| p.record(&w));
            windows += 1;
            std::mem::swap(&mut p0, &mut p1);
            kicks.clear();
            pairs = penalized(&sim);
        }
        let Some(event) = event.filter(|_| windows < count) else {
            break;
        };
        events += 1;
        if matches!(
            event.kind,
            EventKind::Force | EventKind::Penalty | EventKind::Script
        ) {
            for (v, (last, &t)) in last_t.iter_mut().zip(&sim.model().state().t).enumerate() {
                if *last != t {
                    *last = t;
                    kicks.push((v as u32, t));
                }
            }
        }
    }

    let total_kicks = parts.first().map_or(0, |p| p.total_kicks);
    println!(
        "{}: {} free of {} vertices, {:.4} to {:.4} s in {windows} windows of {} s; {events} events, \
         {total_kicks} kicks, engine {:.0} ns a kick on one machine; deepest layer {}; balance by {}; reach {reach:.3} cm",
        sim.model().name(),
        free.len(),
        sim.model().state().len(),
        args.from,
        args.until,
        args.window,
        engine / total_kicks.max(1) as f64 * 1e9,
        sim.stats().contact.as_ref().map_or(0, |c| c.deepest_layer),
        if args.by_steps { "kick rate" } else { "vertex count" },
    );
    println!(
        "\nper rank and window, mean (max); cross-rank pairs: in the whole scene, per window\n"
    );
    println!("| ranks | ghosts | of them contact | cross-rank pairs | knots in | KiB in | rounds | neighbours | kicks | knots in / kick | busiest / mean kicks |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for p in &parts {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3} | {} |",
            p.ranks,
            p.ghosts.show(1.0, 0),
            p.contact_ghosts.show(1.0, 0),
            p.cross_pairs.show(1.0, 1),
            p.knots_in.show(1.0, 0),
            p.bytes_in.show(1024.0, 1),
            p.rounds.show(1.0, 0),
            p.neighbours.show(1.0, 1),
            p.kicks.show(1.0, 0),
            p.total_in as f64 / p.total_kicks.max(1) as f64,
            p.imbalance.show(1.0, 2),
        );
    }
    Ok(())
}
