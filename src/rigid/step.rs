//! One step of optimization-based animation (thesis Table 6.2) from `t` to `t + h`:
//! 1. **Blasts** due in the step give bodies their radial velocity.
//! 2. **Targets**: each free body's pose where its velocity would take it (`x + v h`, the
//!    rotation `w h`); scripted bodies at their scripted pose.
//! 3. **Position update** ([`position`]): the bodies as close to their targets as they can go
//!    without overlap.
//! 4. **Contacts** ([`contact_points`]) of the pairs within `oba.contact_distance`, and with
//!    `oba.bounce_at_distance` (§6.7.1) virtual contacts of the pairs apart whose velocities
//!    would bring them nearer than the gap within the next step.
//! 5. **Momentum update** ([`impulses`]): the first collisions one at a time (the office toy),
//!    then one QP per contact group with restitution (solved again, up to
//!    [`BOUNCE_ROUNDS`] times, while its velocities set further pairs on a collision course).
//!    Virtual contacts bounce at a distance; they take no part in static contact, so that
//!    gravity still brings bodies together.
//! 6. **Static contact**: gravity `g h` added, then the same QP with restitution 0.
//! 7. **Freezing** (§6.7.2) of bodies resting in a cold volume.

use std::time::Instant;

use glam::DVec3;
use hashbrown::HashSet;

use super::body::{Body, Pose};
use super::geometry::{contact_points, separation, slab_width, tangent_frame, WorldPart};
use super::impulses::{self, Contact, Update};
use super::position::{self, Memory, Unfinished};
use super::stats::StepRecord;
use super::world::World;
use crate::scene::rigid::BodyMotion;

/// Momentum solves a step with bounce at a distance takes at most: after each, the pairs its
/// velocities bring nearer than the gap in the next step join as virtual contacts, and the
/// momentum update is solved again from the velocities it started with.
const BOUNCE_ROUNDS: u32 = 4;

/// Takes the step from `t` to `t_next`: the bodies move and their velocities change. Returns
/// what it did and the wall seconds of its three stages (position update, momentum update,
/// static contact with freezing).
///
/// # Errors
///
/// [`Unfinished::Stuck`] when no overlap-free poses exist (prescribed motion pushes bodies
/// together), [`Unfinished::Interrupted`] when `stop` said so during the position update; the
/// bodies and `memory` are then as they were at the step's start.
pub(super) fn take(
    world: &World,
    bodies: &mut [Body],
    memory: &mut Memory,
    gravity: DVec3,
    (t, t_next): (f64, f64),
    stop: &dyn Fn() -> bool,
) -> Result<(StepRecord, [f64; 3]), Unfinished> {
    let started = Instant::now();
    let h = t_next - t;
    let s = &world.settings;
    let before: Vec<Motion> = bodies.iter().map(Motion::of).collect();
    blast(world, bodies, t, t_next);
    let movable: Vec<bool> = bodies.iter().map(|b| b.is_dynamic() && !b.frozen).collect();
    let targets = targets(bodies, &movable, t, t_next);
    let outcome =
        position::update(world, bodies, &targets, &movable, memory, stop).inspect_err(|_| {
            for (b, m) in bodies.iter_mut().zip(&before) {
                m.restore(b);
            }
        })?;
    let position_done = Instant::now();
    let mut record = StepRecord {
        time: t_next,
        close_pairs: outcome.close_pairs,
        qps: outcome.qps,
        position_qps: outcome.qps,
        rollbacks: outcome.rollbacks,
        iterations: outcome.iterations,
        fallback: outcome.fallback,
        min_separation: outcome.min_separation,
        ..StepRecord::default()
    };
    let poses: Vec<Pose> = bodies.iter().map(|b| b.pose).collect();
    let parts = world.pose_parts(bodies, &poses);
    let mut contacts: Vec<Contact> = (outcome.pairs.iter())
        .flat_map(|pair| {
            let normal = pair.separation.normal;
            pair_contacts(world, &parts, pair.parts, normal, 0.0)
        })
        .collect();
    record.contacts = contacts.len() as u32;
    // The pairs bounce at a distance leaves out (only it reads them).
    let mut known: HashSet<(usize, usize)> = if s.bounce_at_distance {
        outcome.pairs.iter().map(|p| p.parts).collect()
    } else {
        HashSet::new()
    };
    let touching = contacts.len();
    let ahead = Ahead {
        h,
        moving: &movable,
        now: &parts,
    };
    if s.bounce_at_distance {
        let found = ahead.virtual_contacts(world, bodies, &mut known);
        record.virtual_contacts += found.len() as u32;
        contacts.extend(found);
    }
    let tolerance = 1e-3 * s.contact_distance / h;
    record.collisions = contacts
        .iter()
        .filter(|c| c.colliding(bodies, tolerance))
        .count() as u32;
    // Momentum update: sequential collisions first (they may revive frozen bodies).
    let dynamic: Vec<bool> = bodies.iter().map(Body::is_dynamic).collect();
    let free_bodies = movable.iter().filter(|&&m| m).count();
    let limit = s.sequential_collisions.unwrap_or(if free_bodies <= 50 {
        free_bodies as u32
    } else {
        record.contacts / 10
    });
    record.sequential = impulses::sequential(
        bodies,
        &contacts,
        &dynamic,
        s.restitution,
        s.friction,
        limit,
        tolerance,
    );
    let g = gravity.length() * h;
    for b in bodies.iter_mut().filter(|b| b.frozen) {
        if b.kinetic_energy() > 0.5 * b.mass * g * g {
            b.frozen = false;
            b.rest_steps = 0;
        } else {
            b.velocity = DVec3::ZERO;
            b.angular_velocity = DVec3::ZERO;
        }
    }
    let free: Vec<bool> = bodies.iter().map(|b| b.is_dynamic() && !b.frozen).collect();
    let start: Vec<Motion> = bodies.iter().map(Motion::of).collect();
    let collide = |bodies: &mut [Body], contacts: &[Contact]| {
        let update = Update::Momentum;
        impulses::solve(
            world,
            bodies,
            contacts,
            &free,
            s.restitution,
            tolerance,
            update,
        )
    };
    let mut momentum = collide(bodies, &contacts);
    let rounds = if s.bounce_at_distance {
        BOUNCE_ROUNDS
    } else {
        1
    };
    for _ in 1..rounds {
        let found = ahead.virtual_contacts(world, bodies, &mut known);
        if found.is_empty() {
            break;
        }
        record.virtual_contacts += found.len() as u32;
        contacts.extend(found);
        record.qps += momentum.qps;
        for (b, m) in bodies.iter_mut().zip(&start) {
            m.restore(b);
        }
        momentum = collide(bodies, &contacts);
    }
    let momentum_done = Instant::now();
    for (b, _) in bodies.iter_mut().zip(&free).filter(|(_, &f)| f) {
        b.velocity += gravity * h;
    }
    let touching = &contacts[..touching];
    let resting = impulses::solve(
        world,
        bodies,
        touching,
        &free,
        0.0,
        tolerance,
        Update::Static,
    );
    for o in [momentum, resting] {
        record.qps += o.qps;
        record.restitution_fallbacks += o.restitution_fallbacks;
        record.projections += o.projections;
        record.skipped_groups += o.skipped;
    }
    if let Some(after) = s.freeze_after {
        freeze(world, bodies, &contacts, &free, g, after);
    }
    record.frozen = bodies.iter().filter(|b| b.frozen).count() as u32;
    let done = Instant::now();
    record.seconds = done.duration_since(started).as_secs_f64();
    let stages = [
        position_done.duration_since(started).as_secs_f64(),
        momentum_done.duration_since(position_done).as_secs_f64(),
        done.duration_since(momentum_done).as_secs_f64(),
    ];
    Ok((record, stages))
}

/// What a step changes of a body before its position update (blasts, scripted velocities,
/// revivals), kept to leave the body as it was when the update ends without poses.
struct Motion {
    velocity: DVec3,
    angular_velocity: DVec3,
    frozen: bool,
    rest_steps: u32,
}

impl Motion {
    fn of(b: &Body) -> Self {
        Self {
            velocity: b.velocity,
            angular_velocity: b.angular_velocity,
            frozen: b.frozen,
            rest_steps: b.rest_steps,
        }
    }

    fn restore(&self, b: &mut Body) {
        b.velocity = self.velocity;
        b.angular_velocity = self.angular_velocity;
        b.frozen = self.frozen;
        b.rest_steps = self.rest_steps;
    }
}

/// Gives the dynamic bodies within reach of each blast due in `[t, t_next)` its radial
/// velocity, and revives them.
fn blast(world: &World, bodies: &mut [Body], t: f64, t_next: f64) {
    let due = world
        .settings
        .blasts
        .iter()
        .filter(|b| (t..t_next).contains(&b.time));
    for blast in due {
        for b in bodies.iter_mut().filter(|b| b.is_dynamic()) {
            let d = b.pose.position - blast.center;
            if d.length() < blast.radius && d.length() > 0.0 {
                b.velocity += blast.speed * (1.0 - d.length() / blast.radius) * d.normalize();
                b.frozen = false;
                b.rest_steps = 0;
            }
        }
    }
}

/// Each body's target at `t_next`: where a movable body's velocities take it, a scripted
/// body's scripted pose (its velocities set to the script's), the others where they are.
fn targets(bodies: &mut [Body], movable: &[bool], t: f64, t_next: f64) -> Vec<Pose> {
    let h = t_next - t;
    bodies
        .iter_mut()
        .zip(movable)
        .map(|(b, &free)| {
            if free {
                b.pose.perturbed(b.velocity * h, b.angular_velocity * h)
            } else if matches!(b.motion, BodyMotion::Scripted(_)) {
                (b.velocity, b.angular_velocity) = b.scripted_velocity(t);
                b.scripted_pose(t_next)
            } else {
                b.pose
            }
        })
        .collect()
}

/// The contacts of parts `p` and `q` (posed in `parts`) along `normal`, one at each contact
/// point of their extreme features, each with the `closing` speed given.
fn pair_contacts(
    world: &World,
    parts: &[WorldPart],
    (p, q): (usize, usize),
    normal: DVec3,
    closing: f64,
) -> impl Iterator<Item = Contact> {
    let points = contact_points(
        &parts[p],
        &parts[q],
        normal,
        world.settings.contact_distance,
    );
    let bodies = (world.parts[p].0, world.parts[q].0);
    points.into_iter().map(move |point| Contact {
        bodies,
        point,
        normal,
        tangents: tangent_frame(normal),
        closing,
    })
}

/// How the bodies would move in a step `h` at their velocities now; `moving` marks the free
/// bodies that are not frozen, and `now` is every part at the bodies' poses.
struct Ahead<'a> {
    h: f64,
    moving: &'a [bool],
    now: &'a [WorldPart],
}

impl Ahead<'_> {
    /// Bounce at a distance (§6.7.1): virtual contacts of the pairs of parts not in `known`,
    /// now farther apart than the contact distance, whose slab along their separation normal
    /// the next step would narrow below the gap; their pairs join `known`. Their points are
    /// the contact points of the parts' extreme features now, and each may close its distance
    /// down to the gap within the step ([`Contact::closing`]).
    fn virtual_contacts(
        &self,
        world: &World,
        bodies: &[Body],
        known: &mut HashSet<(usize, usize)>,
    ) -> Vec<Contact> {
        let (s, h, now) = (&world.settings, self.h, self.now);
        let next: Vec<Pose> = bodies
            .iter()
            .map(|b| b.pose.perturbed(b.velocity * h, b.angular_velocity * h))
            .collect();
        let later = world.pose_parts(bodies, &next);
        let swept = World::swept_boxes(now, &later, 0.0);
        let mut contacts = Vec::new();
        for (p, q) in world.candidates(&swept, self.moving) {
            if known.contains(&(p, q)) {
                continue;
            }
            // The slab along the normal now, not the distance then: a thin body passed
            // through within the step is apart again at its end.
            let apart = separation(&now[p], &now[q]);
            if apart.distance <= s.contact_distance
                || slab_width(&later[p], &later[q], apart.normal) >= s.gap
            {
                continue;
            }
            known.insert((p, q));
            let closing = (apart.distance - s.gap) / h;
            contacts.extend(pair_contacts(world, now, (p, q), apart.normal, closing));
        }
        contacts
    }
}

/// Counts resting steps and freezes the bodies past `after` (§6.7.2): at most the kinetic
/// energy gravity gives in a step (`g` is `|g| h`), touching a fixed or frozen body, inside a
/// cold volume.
fn freeze(
    world: &World,
    bodies: &mut [Body],
    contacts: &[Contact],
    free: &[bool],
    g: f64,
    after: u32,
) {
    let cold = &world.settings.cold;
    let mut supported = vec![false; bodies.len()];
    for c in contacts {
        let (a, b) = c.bodies;
        if !free[b] {
            supported[a] = true;
        }
        if !free[a] {
            supported[b] = true;
        }
    }
    for (i, b) in bodies.iter_mut().enumerate() {
        if !free[i] {
            continue;
        }
        let x = b.pose.position;
        let inside = cold.is_empty()
            || cold
                .iter()
                .any(|(lo, hi)| x.cmpge(*lo).all() && x.cmple(*hi).all());
        if inside && supported[i] && b.kinetic_energy() < 0.5 * b.mass * g * g {
            b.rest_steps += 1;
            if b.rest_steps > after {
                b.frozen = true;
                b.velocity = DVec3::ZERO;
                b.angular_velocity = DVec3::ZERO;
            }
        } else {
            b.rest_steps = 0;
        }
    }
}
