//! The chapter-8 speed switches (thesis ch. 8, DESIGN §8): one flag per optimization, so that
//! each one's effect can be measured (`[speed]` in a profile, documented in `profiles/README.md`).

/// Which of the thesis's chapter-8 optimizations are on. None of them changes safety; the
/// trajectory changes only where a flag's documentation says so.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpeedSettings {
    /// Super-elements (§8.2): one event per elastic force family (stretching, bending) at the
    /// family's smallest stable clock, and one gravity event for every vertex. Off: one event
    /// per element at its own stable clock and one gravity event per vertex (classic AVI,
    /// §5.2). Changes the trajectory: the elements' clocks change.
    pub super_elements: bool,
    /// Clock bins for super-elements: each force family is split into power-of-two bins of
    /// its elements' stable clocks (`[h_min 2^b, h_min 2^(b+1))`, ticking at `h_min 2^b`; §8.2:
    /// "events running with roughly the same clock are combined"), and gravity ticks at the
    /// median vertex's elastic step instead of the smallest. Off: one event per family at its
    /// smallest clock, gravity at that pace. Needs `super_elements`. Changes the trajectory:
    /// elements tick at their bins' clocks.
    pub clock_bins: bool,
    /// Penalty-layer super-events (§8.1): one event per layer ticks every pair with the layer
    /// active, from the state before the tick. Off: one event per pair and layer, on the same
    /// layer clocks; pairs ticked at the same time then see each other's impulses, so the
    /// trajectory differs in rounding where they share a vertex.
    pub layer_super_events: bool,
    /// Adaptive k-DOP axis ordering (§8.1, "bounding plane ordering"): the broad phase's overlap tests try first the axis
    /// that separated last. Changes only when certificates look: frames are bit-identical.
    pub axis_ordering: bool,
    /// Fuzzy trajectories (§8.2, "vague trajectories"): a separation slab is scheduled at
    /// `QL * now + (1 - QL) * failure` and tolerates, until then, any kicks that keep each of
    /// its vertices closing on it no faster than a per-vertex budget; a kick within budget
    /// re-times nothing. Changes only when certificates look: frames are bit-identical,
    /// except that a pair closing too fast for exact schedules to resolve in `f64` time (a
    /// "time resolution exhausted" stop) is caught, because slabs are looked at before they
    /// fail.
    pub fuzzy_trajectories: bool,
    /// The quality loss `QL` in `[0, 1)` of fuzzy trajectories: larger looks at each slab
    /// earlier and tolerates larger kicks.
    pub quality_loss: f64,
    /// A near-future heap plus a parking area (§8.1): slab certificates that fail after the
    /// next all-vertex event (a whole-mesh force tick) stay out of the event queue, since that
    /// event re-times every slab anyway. Changes only when certificates look: frames are
    /// bit-identical. Only with exact schedules: fuzzy trajectories keep a slab's time across
    /// all-vertex events, so with them nothing is parked.
    pub parking: bool,
    /// Short-circuited scheduling (§8.1): the separation list computes a node pair's
    /// certificate only up to the next all-vertex event rather than to the horizon's end, and
    /// re-times the pairs it cut short at that event. Changes only when certificates look:
    /// frames are bit-identical. Off by default: this broad phase does not otherwise re-time
    /// its pairs at all-vertex events, so the re-timing costs far more than the short tests
    /// save (`benches/README.md`).
    pub short_circuit: bool,
    /// Triangle-pair contact (§8.3, "triangle-triangle penalty forces"): the contact pairs
    /// are the vertex-disjoint triangle pairs containing the broad phase's VT and EE pairs,
    /// each with one separation slab and one penalty-layer membership for its fifteen feature
    /// pairs; a feature pair lying in `k` triangle pairs gets `1/k` of its impulse from each.
    /// Changes the trajectory in rounding: a feature's impulse arrives as `k` shares.
    pub triangle_pairs: bool,
}

/// The default quality loss: the fastest value of the sweeps in `benches/README.md`
/// (the thesis found 0.7 best on its bunny compactor, Fig. 8.3).
pub(super) const DEFAULT_QUALITY_LOSS: f64 = 0.3;

impl SpeedSettings {
    /// Every optimization on (`speed.preset = "all"`).
    pub const ALL: Self = Self {
        super_elements: true,
        clock_bins: true,
        layer_super_events: true,
        axis_ordering: true,
        fuzzy_trajectories: true,
        quality_loss: DEFAULT_QUALITY_LOSS,
        parking: true,
        short_circuit: true,
        triangle_pairs: true,
    };

    /// The default: every optimization that pays, that is all but
    /// [`short_circuit`](Self::short_circuit) and [`triangle_pairs`](Self::triangle_pairs).
    pub const DEFAULT: Self = Self {
        short_circuit: false,
        triangle_pairs: false,
        ..Self::ALL
    };

    /// Every optimization off: the unoptimized engine the table of `benches/README.md` starts
    /// from.
    pub const NONE: Self = Self {
        super_elements: false,
        clock_bins: false,
        layer_super_events: false,
        axis_ordering: false,
        fuzzy_trajectories: false,
        quality_loss: DEFAULT_QUALITY_LOSS,
        parking: false,
        short_circuit: false,
        triangle_pairs: false,
    };

    /// The switch names, in the order the table of `benches/README.md` turns them on.
    pub const NAMES: [&'static str; 8] = [
        "super_elements",
        "clock_bins",
        "layer_super_events",
        "axis_ordering",
        "fuzzy_trajectories",
        "parking",
        "short_circuit",
        "triangle_pairs",
    ];

    /// The flag called `name` (one of [`NAMES`](Self::NAMES)).
    pub fn flag_mut(&mut self, name: &str) -> Option<&mut bool> {
        match name {
            "super_elements" => Some(&mut self.super_elements),
            "clock_bins" => Some(&mut self.clock_bins),
            "layer_super_events" => Some(&mut self.layer_super_events),
            "axis_ordering" => Some(&mut self.axis_ordering),
            "fuzzy_trajectories" => Some(&mut self.fuzzy_trajectories),
            "parking" => Some(&mut self.parking),
            "short_circuit" => Some(&mut self.short_circuit),
            "triangle_pairs" => Some(&mut self.triangle_pairs),
            _ => None,
        }
    }
}

impl Default for SpeedSettings {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_has_a_flag_and_the_presets_differ_in_each() {
        for name in SpeedSettings::NAMES {
            let mut all = SpeedSettings::ALL;
            let mut none = SpeedSettings::NONE;
            let (a, n) = (*all.flag_mut(name).unwrap(), *none.flag_mut(name).unwrap());
            assert!(a && !n, "{name}");
        }
        let mut all = SpeedSettings::ALL;
        assert!(all.flag_mut("fuzzy").is_none());
        assert!(all.flag_mut("quality_loss").is_none());
    }
}
