"""Calls a pipeline makes that once failed silently or with a bare error: callbacks after one
raised, the simulation called from inside `on_frame`, float indices, scripted vertices, times
before now, negative counts, bad arrays at `add_object`."""

import numpy as np
import pytest

import acm
from conftest import REPO

PROFILE = REPO / "profiles" / "sheet_on_sphere.toml"


def falling_sheet(scripted=True):
    """A 5 x 5 sheet falling under gravity, with its vertex 0 scripted to move along +x at
    1 cm/s until t = 1 s (unless not `scripted`)."""
    vertices, triangles = acm.sheet(5, 5, 20.0, 20.0)
    scene = acm.Scene(name="falling", frame_interval=0.05)
    scene.add_object("sheet", vertices, triangles)
    if scripted:
        scene.script("sheet", [0], [(0.0, (1.0, 0.0, 0.0)), (1.0, (0.0, 0.0, 0.0))])
    return scene


def test_callbacks_run_again_after_one_raised():
    sim = acm.Simulation(falling_sheet())

    def fail(index, time, positions, velocities):
        if index == 1:
            raise ValueError("once")

    with pytest.raises(ValueError, match="once"):
        sim.run_until(0.31, on_frame=fail)
    seen = []
    sim.run_until(0.31, on_frame=lambda index, time, x, v: seen.append((index, time)))
    assert [i for i, _ in seen] == list(range(2, 7))
    assert [t for _, t in seen] == pytest.approx([0.05 * i for i in range(2, 7)])


def test_on_frame_can_read_and_steer_the_simulation():
    sim = acm.Simulation(falling_sheet(scripted=False))
    free = np.arange(25)
    times, rising = [], []

    def steer(index, time, positions, velocities):
        times.append(sim.time)
        rising.append(velocities[free, 1].mean())
        assert np.array_equal(positions, sim.positions())
        sim.set_velocity(free, [0.0, 100.0, 0.0])

    sim.run_until(0.2, on_frame=steer)
    assert times == pytest.approx([0.0, 0.05, 0.1, 0.15, 0.2])
    # Each frame sees the sheet thrown up at 100 cm/s by the frame before, less what gravity
    # took in 0.05 s; unsteered it would fall at 49, 98, ... cm/s. Gravity kicks at its own
    # clock, which need not divide the frame interval: a frame falls inside a tick, so the
    # velocity it sees is within one kick (981 h) of that.
    h = sim.stats["clocks"]["gravity"]
    assert 0.0 < h < 0.05 / 4
    assert rising[0] <= 0.0
    assert rising[1:] == pytest.approx([100.0 - 981.0 * 0.05] * 4, abs=981.0 * h)


def test_indices_given_as_floats_are_refused():
    sim = acm.Simulation(falling_sheet())
    before = sim.velocities()
    with pytest.raises(acm.InputError, match=r"vertices: .*integer.*4\.7"):
        sim.set_velocity([4.7], [1.0, 0.0, 0.0])
    assert np.array_equal(sim.velocities(), before)
    vertices, triangles = acm.sheet(3, 3, 10.0, 10.0)
    scene = acm.Scene()
    with pytest.raises(acm.InputError, match=r"object\[0\]\.triangles: .*integer"):
        scene.add_object("s", vertices, triangles.astype(np.float64) + 0.5)
    scene.add_object("s", vertices, triangles)
    with pytest.raises(acm.InputError, match=r"vertices: .*integer"):
        scene.fix("s", [1.5])


def test_set_velocity_on_a_scripted_vertex_is_refused_while_its_script_runs():
    sim = acm.Simulation(falling_sheet())
    sim.run_until(0.1)
    with pytest.raises(acm.InputError, match=r"vertex 0 is scripted.*t = 1\.0 s"):
        sim.set_velocity([0], [0.0, 0.0, 5.0])
    assert np.array_equal(sim.velocities()[0], [1.0, 0.0, 0.0])
    # Once its last key has passed, a scripted vertex is steered: it keeps the velocity set.
    sim.run_until(1.0)
    sim.set_velocity([0], [0.0, 0.0, 5.0])
    x = sim.positions()[0]
    sim.run_until(1.2)
    assert np.allclose(sim.positions()[0], x + [0.0, 0.0, 1.0], rtol=0, atol=1e-9)


def test_run_until_a_time_already_passed_is_refused():
    sim = acm.Simulation(falling_sheet())
    sim.run_until(0.2)
    with pytest.raises(acm.InputError, match=r"0\.1 s is before the current time 0\.2 s"):
        sim.run_until(0.1)
    sim.run_until(0.2)  # now is fine: nothing to do
    assert sim.time == 0.2


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: acm.sheet(-3, 4, 10.0, 10.0), r"acm.sheet: `nx` must be at least 2, got -3"),
        (lambda: acm.sheet(3, -1, 10.0, 10.0), r"acm.sheet: `ny` must be at least 2, got -1"),
        (lambda: acm.icosphere(1.0, -2), r"acm.icosphere: `subdivisions` must be at least 0, got -2"),
        (lambda: acm.Simulation(falling_sheet(), threads=-2), r"threads must be at least 1, got -2"),
    ],
)
def test_negative_counts_raise_input_errors(call, message):
    with pytest.raises(acm.InputError, match=message):
        call()


@pytest.mark.parametrize(
    "vertices, triangles, message",
    [
        ([[0, 0, 0], [1, 0, 0], [0, 0, 1]], [[0, 1, 3]], r"object\[0\]\.triangles\[0\]: .*vertex 3, but the mesh has only 3 vertices"),
        ([[0, 0, 0], [1, np.nan, 0], [0, 0, 1]], [[0, 1, 2]], r"object\[0\]\.vertices\[1\]: .*non-finite"),
        ([[0, 0, 0], [1, 0, 0], [0, 0, 1]], [[0, 1, 1]], r"object\[0\]\.triangles\[0\]: .*same vertex"),
    ],
)
def test_add_object_refuses_bad_arrays_naming_the_argument(vertices, triangles, message):
    scene = acm.Scene()
    with pytest.raises(acm.InputError, match=message):
        scene.add_object("s", vertices, triangles)
    assert scene.objects == []


def test_the_version_is_the_packages():
    import tomllib

    pyproject = tomllib.loads((REPO / "python" / "pyproject.toml").read_text())
    assert acm.__version__ == pyproject["project"]["version"]
