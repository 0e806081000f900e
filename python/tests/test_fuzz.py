"""Fuzzing the Python API: random sequences of calls with random (often hostile) arguments on
small scenes. Whatever the sequence, every call returns or raises `acm.InputError`,
`acm.RunError`, or `TypeError` for an argument of the wrong Python type (or the exception the
frame callback raised itself), never another error, a panic or a hang, and what it returns is
finite where it must be.

CI runs a fixed seed and a small budget; a longer run:
`ACM_PY_FUZZ_CASES=5000 ACM_PY_FUZZ_SEED=7 python -m pytest python/tests/test_fuzz.py`.
"""

import math
import os
import random

import numpy as np
import pytest

import acm

CASES = int(os.environ.get("ACM_PY_FUZZ_CASES", "300"))
SEED = int(os.environ.get("ACM_PY_FUZZ_SEED", "1"))
CALLS = 12  # calls per case


class CallbackRaised(Exception):
    """What a fuzzed frame callback raises on purpose."""


ALLOWED = (acm.InputError, acm.RunError, TypeError, CallbackRaised)


def number(rng):
    """A float that is usually sensible and sometimes hostile."""
    return rng.choice([
        rng.uniform(-5.0, 5.0), rng.uniform(0.0, 0.1), 0.0, -0.0, -1.0, 1e-300, 1e300,
        math.inf, -math.inf, math.nan, 4.7, 2.0**53,
    ])


def index(rng, n):
    """A vertex index: valid, or now and then out of range, negative, huge, or a float."""
    return hostile(rng, rng.randrange(n), rng.choice([n, -1, 2**40, rng.randrange(n) + 0.5]))


def indices(rng, n):
    k = hostile(rng, rng.choice([1, 2, 3]), 0)
    return [index(rng, n) for _ in range(k)]


def vector(rng):
    return tuple(number(rng) if rng.random() < 0.2 else rng.uniform(-50.0, 50.0) for _ in range(3))


def hostile(rng, good, bad):
    """`good` most of the time, `bad` (a hostile value) one time in seven."""
    return bad if rng.random() < 1 / 7 else good


def attempt(f, *args, **kwargs):
    """Calls `f`, which may refuse its arguments with an allowed error."""
    try:
        f(*args, **kwargs)
    except ALLOWED:
        pass


def scene(rng):
    """A small scene, its values and arrays sometimes damaged (each refused call leaves the
    scene as it was, and the build goes on)."""
    s = acm.Scene(
        name=rng.choice(["fuzz", "", "a b"]),
        duration=hostile(rng, 1.0, number(rng)),
        frame_interval=hostile(rng, rng.choice([0.01, 0.02]), number(rng)),
        gravity=hostile(rng, (0.0, -981.0, 0.0), vector(rng)),
        contact=rng.choice([None, {"eta1": 0.1}, {"cor": 1.0, "eta1": 0.05},
                            hostile(rng, None, {"eta1": number(rng)})]),
    )
    n = rng.choice([2, 3, 4])
    vertices, triangles = acm.sheet(n, n, 4.0, 4.0)
    vertices = vertices + (0.0, 2.0, 0.0)
    damaged_vertices, damaged_triangles = vertices.copy(), triangles.copy()
    damaged_vertices[rng.randrange(len(vertices)), rng.randrange(3)] = number(rng)
    damaged_triangles[rng.randrange(len(triangles)), rng.randrange(3)] = rng.choice([-1, n * n, 0])
    for v, t in [(damaged_vertices, triangles), (vertices, damaged_triangles),
                 (vertices, triangles.astype(np.float64) + 0.5)]:
        if rng.random() < 0.1:
            attempt(s.add_object, "bad", v, t)
    s.add_object("sheet", vertices, triangles,
                 material=hostile(rng, rng.choice([None, {"density": 0.001}, {"drag": 0.5}]),
                                  {rng.choice(["density", "stretch", "bend"]): number(rng)}),
                 velocity=hostile(rng, (0.0, 0.0, 0.0), vector(rng)))
    if rng.random() < 0.5:
        s.add_object("floor", [[-9, 0, -9], [9, 0, -9], [9, 0, 9], [-9, 0, 9]], [[0, 2, 1], [0, 3, 2]],
                     fixed=True)
    for _ in range(rng.choice([0, 1, 2])):
        attempt(s.fix, hostile(rng, "sheet", rng.choice(["floor", "none"])), indices(rng, n * n))
    for _ in range(rng.choice([0, 1, 2])):
        keys = [(rng.choice([0.0, 0.01, 0.03, hostile(rng, 0.05, number(rng))]), vector(rng))
                for _ in range(rng.choice([1, 2]))]
        attempt(s.script, "sheet", indices(rng, n * n), keys)
    return s


def call(rng, sim, n, finite):
    """One random call on `sim`, with random arguments; what it reads must be `finite` unless
    a run stopped early before (a run that diverged stops with its state as it was)."""
    kind = rng.randrange(9)
    # Hostile times are before now or not finite; a finite time far ahead is a long run, not
    # misuse.
    t = sim.time + rng.choice([0.0, 0.005, 0.02, -0.01, -1e300, math.nan, math.inf, -math.inf])
    if kind == 0:
        sim.run_until(t)
    elif kind == 1:
        def on_frame(index, time, positions, velocities):
            assert positions.shape == velocities.shape == (n, 3)
            assert np.isfinite(positions).all() and np.isfinite(velocities).all()  # frames always
            what = rng.randrange(4)
            if what == 0:
                raise CallbackRaised("from the callback")
            if what == 1:
                assert sim.time == time
            if what == 2:
                try:
                    sim.set_velocity(indices(rng, n), vector(rng))
                except acm.InputError:
                    pass
        sim.run_until(min(t, sim.time + 0.02), on_frame=on_frame)
    elif kind == 2:
        sim.step(on_frame=rng.choice([None, lambda *frame: None]))
    elif kind == 3:
        sim.set_velocity(indices(rng, n), vector(rng) if rng.random() < 0.8 else [number(rng)])
    elif kind == 4:
        x = sim.positions(rng.choice([None, t]))
        assert x.shape == (n, 3) and (np.isfinite(x).all() or not finite)
    elif kind == 5:
        v = sim.velocities()
        assert v.shape == (n, 3) and (np.isfinite(v).all() or not finite)
    elif kind == 6:
        x = sim.positions()
        if rng.random() < 0.5:
            x[rng.randrange(n), rng.randrange(3)] = number(rng)
        if rng.random() < 0.2:
            x = x[:-1]
        sim.check(x, cutoff=rng.choice([1.0, 0.0, number(rng)]))
    elif kind == 7:
        assert sim.stats["events_total"] >= 0 and sim.time >= 0.0
    else:
        sim.triangles()


@pytest.mark.parametrize("case", range(CASES))
def test_random_call_sequences_raise_only_clear_errors(case):
    rng = random.Random(SEED * 1_000_003 + case)
    try:
        sim = acm.Simulation(scene(rng), threads=hostile(rng, rng.choice([None, 1, 2]), rng.choice([0, -1])))
    except ALLOWED:
        return
    n = sim.positions().shape[0]
    stopped = False
    for _ in range(CALLS):
        before = sim.time
        try:
            call(rng, sim, n, finite=not stopped)
        except acm.RunError:
            stopped = True
        except ALLOWED:
            pass
        assert sim.time >= before, "time never runs backwards"
