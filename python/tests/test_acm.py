"""The Python package against the command line, and on scenes built from numpy arrays."""

import json
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

import acm
from conftest import REPO, read_obj_positions

PROFILE = REPO / "profiles" / "sheet_on_sphere.toml"
OBA_STACK = REPO / "profiles" / "oba_stack.toml"
FRAMES = 4  # frames 0 .. 3 of the sheet dropped on a sphere: 0.12 s


def bits(a):
    """The exact bit patterns of a float64 array (so -0.0 differs from 0.0)."""
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


@pytest.fixture(scope="module")
def cli_frames(acm_bin, tmp_path_factory):
    """The command line's frames of the sheet on the sphere, on two threads."""
    out = tmp_path_factory.mktemp("cli")
    subprocess.run(
        [acm_bin, "run", PROFILE, "--frames", str(FRAMES), "--out", out, "--threads", "2"],
        check=True,
        capture_output=True,
    )
    paths = sorted(out.glob("frame_*.obj"))
    assert len(paths) == FRAMES
    return [read_obj_positions(p) for p in paths]


def test_frames_equal_the_command_lines_bit_for_bit(cli_frames):
    sim = acm.Simulation(acm.load(PROFILE), threads=1)
    frames = []
    sim.run_until((FRAMES - 1) * 0.04, on_frame=lambda i, t, x, v: frames.append((i, t, x)))
    assert [i for i, _, _ in frames] == list(range(FRAMES))
    assert [t for _, t, _ in frames] == pytest.approx([0.04 * i for i in range(FRAMES)])
    for (_, _, x), expected in zip(frames, cli_frames):
        assert x.dtype == np.float64 and x.shape == expected.shape
        assert np.array_equal(bits(x), bits(expected))
    # The sheet moved between the first and the last frame (the comparison is not vacuous).
    assert not np.array_equal(cli_frames[0], cli_frames[-1])
    # positions() at the last frame's time is that frame.
    assert np.array_equal(bits(sim.positions()), bits(cli_frames[-1]))


def test_run_until_in_pieces_and_step_reach_the_same_state(cli_frames):
    sim = acm.Simulation(acm.load(PROFILE))
    for t in (0.01, 0.05, 0.12):
        sim.run_until(t)
        assert sim.time == t
    assert np.array_equal(bits(sim.positions()), bits(cli_frames[-1]))
    event = sim.step()
    assert event is not None and event[0] >= 0.12 and isinstance(event[1], str)
    assert sim.time == event[0]


@pytest.mark.parametrize(
    "profile, settings, frames",
    [
        (OBA_STACK, {}, 4),
        (PROFILE, {"integrator": "sync"}, 3),
        (REPO / "profiles" / "sync_crushed_cylinder.toml", {"integrator": "implicit"}, 3),
    ],
    ids=["oba", "sync", "implicit"],
)
def test_every_method_runs_its_frames_as_the_command_line_does(
    acm_bin, tmp_path, profile, settings, frames
):
    sets = [a for key, value in settings.items() for a in ("--set", f"{key}={value}")]
    subprocess.run(
        [acm_bin, "run", profile, "--frames", str(frames), "--out", tmp_path, *sets],
        check=True,
        capture_output=True,
    )
    expected = [read_obj_positions(p) for p in sorted(tmp_path.glob("frame_*.obj"))]
    assert len(expected) == frames
    sim = acm.Simulation(acm.load(profile, set=settings))
    assert sim.method == settings.get("integrator", "oba")
    got = []
    end = (frames - 1) * acm.load(profile, set=settings).frame_interval
    sim.run_until(end, on_frame=lambda i, t, x, v: got.append((i, x)))
    assert [i for i, _ in got] == list(range(frames))
    for (_, x), want in zip(got, expected):
        assert np.array_equal(bits(x), bits(want))
    assert not np.array_equal(expected[0], expected[-1])  # something moved
    assert np.array_equal(bits(sim.positions()), bits(expected[-1]))
    cli_stats = json.loads((tmp_path / "stats.json").read_text())
    assert sorted(sim.stats) == sorted(cli_stats)  # the names of stats.json
    assert sim.check()["intersecting_pairs"] == 0


def test_rigid_bodies_read_back_as_poses_of_their_surfaces():
    sim = acm.Simulation(acm.load(OBA_STACK))
    start = sim.bodies()
    sim.run_until(0.2)
    bodies = sim.bodies()
    k = len(bodies["names"])
    assert bodies["names"] == start["names"] == [name for name, _, _ in sim.objects]
    assert bodies["positions"].shape == (k, 3) and bodies["orientations"].shape == (k, 4)
    assert bodies["velocities"].shape == bodies["angular_velocities"].shape == (k, 3)
    assert np.allclose(np.linalg.norm(bodies["orientations"], axis=1), 1.0, rtol=0, atol=1e-12)
    # A cube's vertices average to its centre of mass, wherever the run has moved it.
    x = sim.positions()
    cubes = [b for b, (name, first, count) in enumerate(sim.objects) if count == 8]
    assert cubes
    for b in cubes:
        _, first, count = sim.objects[b]
        centre = x[first:first + count].mean(axis=0)
        assert np.allclose(centre, bodies["positions"][b], rtol=0, atol=1e-9)
    moved = np.linalg.norm(bodies["positions"] - start["positions"], axis=1)
    assert moved.max() > 0.1  # the cubes fell, so the check above is not of the start


def test_stats_and_audit():
    sim = acm.Simulation(acm.load(PROFILE, set={"scene.frame_interval": 0.02}))
    sim.run_until(0.06)
    stats = sim.stats
    assert stats["scene"] == "sheet_on_sphere"
    assert stats["frames"] == 4  # 0, 0.02, 0.04, 0.06
    assert stats["events_total"] == sum(stats["events"].values()) > 0
    assert stats["model"]["vertices"] == sim.positions().shape[0]
    report = sim.check(cutoff=1.0)
    assert report["intersecting_pairs"] == 0 and report["first_bad"] is None
    assert 0.0 < report["min_distance"] < 1.0


def test_check_finds_an_intersection():
    sim = acm.Simulation(acm.load(PROFILE))
    x = sim.positions()
    sphere = sim.objects[0]
    assert sphere[0] == "sphere"
    # Push the sheet down through the sphere (radius 20 cm, the sheet starts 2 cm above it).
    x[sphere[2]:, 1] -= 10.0
    report = sim.check(x)
    assert report["intersecting_pairs"] > 0
    assert report["min_distance"] == 0.0
    assert report["first_bad"]["frame"] == 0


def test_positions_later_follow_the_current_velocities():
    sim = acm.Simulation(acm.load(PROFILE))
    sim.run_until(0.05)
    x, v = sim.positions(), sim.velocities()
    later = sim.positions(sim.time + 0.001)
    assert np.allclose(later, x + 0.001 * v, rtol=0, atol=1e-12)
    assert sim.time == 0.05  # reading positions does not advance the simulation


def test_a_scene_from_numpy_arrays():
    vertices, triangles = acm.sheet(9, 9, 40.0, 40.0)
    vertices += (0.0, 10.0, 0.0)
    scene = acm.Scene(name="from_numpy", frame_interval=0.05, contact={"eta1": 0.1})
    assert scene.add_object("floor", [[-50, 0, -50], [50, 0, -50], [50, 0, 50], [-50, 0, 50]],
                            [[0, 2, 1], [0, 3, 2]], fixed=True) == 0
    assert scene.add_object("sheet", vertices, triangles, material={"density": 0.002, "bend": 0.2}) == 1
    scene.fix("sheet", [0])
    scene.script("sheet", [8], [(0.0, (0.0, 0.0, 5.0))])
    assert scene.objects == ["floor", "sheet"] and scene.vertex_count == 4 + 81
    sim = acm.Simulation(scene, threads=2)
    frames = []
    sim.run_until(0.5, on_frame=lambda i, t, x, v: frames.append(i))
    assert frames == list(range(11))
    x = sim.positions()
    sheet_x = x[4:]
    assert np.array_equal(sheet_x[0], vertices[0])  # pinned
    assert np.array_equal(sheet_x[8], vertices[8] + [0.0, 0.0, 2.5])  # scripted: 5 cm/s for 0.5 s
    assert sheet_x[:, 1].min() < 5.0  # the rest fell towards the floor
    assert sheet_x[:, 1].min() > 0.0  # and did not pass through it
    assert sim.check(x)["intersecting_pairs"] == 0


def test_the_generators_give_the_librarys_meshes():
    vertices, triangles = acm.sheet(3, 2, 10.0, 4.0)
    assert vertices.dtype == np.float64 and triangles.dtype == np.int64
    assert vertices.shape == (6, 3) and triangles.shape == (4, 3)
    assert np.array_equal(vertices[[0, 2, 5]], [[-5, 0, -2], [5, 0, -2], [5, 0, 2]])
    sphere, faces = acm.icosphere(2.0, 1)
    assert sphere.shape == (42, 3) and faces.shape == (80, 3)
    assert np.allclose(np.linalg.norm(sphere, axis=1), 2.0)
    with pytest.raises(acm.InputError, match="nx"):
        acm.sheet(1, 2, 10.0, 4.0)


def test_set_velocity_steers_vertices_and_refuses_fixed_ones():
    vertices, triangles = acm.sheet(5, 5, 20.0, 20.0)
    scene = acm.Scene(gravity=(0, 0, 0))
    scene.add_object("sheet", vertices, triangles)
    scene.fix("sheet", [0])
    sim = acm.Simulation(scene)
    sim.run_until(0.1)
    sim.set_velocity([3, 4], [1.0, 2.0, 3.0])
    sim.set_velocity(np.array([5, 6]), np.array([[1.0, 0, 0], [0, 1.0, 0]]))
    v = sim.velocities()
    assert np.array_equal(v[[3, 4]], [[1.0, 2.0, 3.0]] * 2)
    assert np.array_equal(v[[5, 6]], [[1.0, 0, 0], [0, 1.0, 0]])
    before = sim.velocities()
    with pytest.raises(acm.InputError, match="vertex 0 is fixed"):
        sim.set_velocity([7, 0], [1.0, 0, 0])
    with pytest.raises(acm.InputError, match="no vertex 25"):
        sim.set_velocity([25], [1.0, 0, 0])
    with pytest.raises(acm.InputError, match=r"expected shape \(3,\) or \(2, 3\)"):
        sim.set_velocity([1, 2], [[1.0, 0, 0]])
    assert np.array_equal(sim.velocities(), before)  # a refused call changes nothing
    sim.run_until(0.2)
    assert sim.positions()[3][0] > vertices[3][0]


def test_set_velocity_refuses_speeds_contact_cannot_resolve():
    vertices, triangles = acm.sheet(5, 5, 20.0, 20.0)
    scene = acm.Scene(gravity=(0, 0, 0), contact={"eta1": 0.1})
    scene.add_object("sheet", vertices, triangles)
    sim = acm.Simulation(scene)
    before = sim.velocities()
    # eta1 / (1e-8 (1 + duration)): 5e6 cm/s here.
    with pytest.raises(acm.InputError, match="the speed of vertex 4, 6.000e6 cm/s, is beyond"):
        sim.set_velocity([3, 4], np.array([[1.0, 0, 0], [6e6, 0, 0]]))
    assert np.array_equal(sim.velocities(), before)
    sim.set_velocity([4], [4e6, 0, 0])
    assert sim.velocities()[4][0] == 4e6


def test_the_frame_callbacks_exception_stops_the_run():
    class Stop(Exception):
        pass

    def on_frame(index, time, positions, velocities):
        if index == 1:
            raise Stop("enough")

    sim = acm.Simulation(acm.load(PROFILE))
    with pytest.raises(Stop, match="enough"):
        sim.run_until(0.2, on_frame=on_frame)
    assert sim.time < 0.2


def test_ctrl_c_stops_a_run_between_two_events():
    sim = acm.Simulation(acm.load(PROFILE))
    # Ctrl-C from another thread 0.3 s into a run that takes seconds: it lands while the engine
    # runs (a Ctrl-C during a frame callback is Python's own KeyboardInterrupt in the callback).
    ctrl_c = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    # Python's own handler, whatever this process inherited: a shell without job control
    # starts background jobs with SIGINT ignored, and Python then installs none.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            ctrl_c.start()
            sim.run_until(1.0)
    finally:
        ctrl_c.join()
        signal.signal(signal.SIGINT, previous)
    assert 0.0 < sim.time < 1.0
    assert sim.stats["interrupted"]
    # The simulation can go on from where it stopped.
    t = sim.time + 0.01
    sim.run_until(t)
    assert sim.time == t


def test_the_engine_runs_with_the_gil_released():
    # With a long switch interval a thread keeps the GIL until it blocks or releases it, so the
    # main thread wakes while the other is still inside run_until only if the engine releases it.
    sim = acm.Simulation(acm.load(PROFILE), threads=1)
    started, done = threading.Event(), threading.Event()

    def run():
        started.set()
        sim.run_until(0.3)
        done.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        thread = threading.Thread(target=run)
        thread.start()
        started.wait()
        running_meanwhile = not done.is_set()
        thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert running_meanwhile
    assert done.is_set() and sim.time == 0.3


def test_two_simulations_on_two_python_threads_equal_one_alone():
    alone = acm.Simulation(acm.load(PROFILE), threads=1)
    alone.run_until(0.04)
    sims = [acm.Simulation(acm.load(PROFILE), threads=1) for _ in range(2)]
    threads = [threading.Thread(target=s.run_until, args=(0.04,)) for s in sims]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in sims:
        assert np.array_equal(bits(s.positions()), bits(alone.positions()))


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: acm.load(REPO / "no_such.toml"), "no_such.toml: cannot read the profile"),
        (lambda: acm.load(PROFILE, set={"object.sheet.material.density": -1.0}),
         r"sheet_on_sphere\.toml: --set object\.sheet\.material\.density=-1\.0: "
         r"object\[1\]\.material\.density \(object \"sheet\"\): must be a finite number > 0"),
        (lambda: acm.Simulation(acm.load(PROFILE), threads=0), "threads must be at least 1"),
        (lambda: acm.Simulation(acm.load(PROFILE), threads=10**6),
         r"threads 1000000 is more than this machine can use: it has \d+ logical cores; "
         r"use at most \d+"),
        (lambda: acm.Simulation(acm.load(OBA_STACK)).step(),
         r"oba_stack: step\(\) needs ACM's event loop; integrator = oba advances in fixed steps"),
        (lambda: acm.Simulation(acm.load(PROFILE, set={"integrator": "sync"}))
         .set_velocity([0], [0.0, 0.0, 0.0]),
         r"sheet_on_sphere: set_velocity\(\) needs ACM's event loop; integrator = sync"),
        (lambda: acm.Simulation(acm.load(PROFILE)).bodies(),
         r"sheet_on_sphere: bodies\(\) reads rigid bodies, which integrator = oba moves"),
        (lambda: acm.Simulation(acm.load(OBA_STACK)).positions(t=0.5),
         r"t = 0.5 s: integrator = oba has positions at the end of its last step \(0 s\) only"),
        (lambda: acm.Scene().add_object("s", np.zeros((3, 2)), [[0, 1, 2]]),
         r"object\[0\].vertices: expected shape \(n, 3\)"),
        (lambda: acm.Scene().add_object("s", np.zeros((3, 3)), [[0, 1, -2]]),
         r"object\[0\].triangles\[0\]: -2 is not a vertex index"),
        (lambda: acm.Scene().add_object("s", np.zeros((3, 3)), [[0, 1, 2]], material={"densty": 1}),
         r"object\[0\].material.densty: unknown key; expected one of density"),
        (lambda: acm.Scene(contact={"eta": 0.1}), "contact.eta: unknown key"),
        (lambda: acm.Scene(contact={"eta1": "thin"}), "contact.eta1: "),
        (lambda: acm.Scene().fix("cloth", [0]), 'no object named "cloth"'),
    ],
)
def test_bad_input_raises_with_the_field_named(build, message):
    with pytest.raises(acm.InputError, match=message):
        build()


def test_an_invalid_scene_raises_when_built():
    vertices, triangles = acm.sheet(3, 3, 10.0, 10.0)
    scene = acm.Scene(name="bad")
    scene.add_object("s", vertices, triangles, material={"density": float("nan")})
    with pytest.raises(ValueError, match=r"object\[0\].material.density"):
        acm.Simulation(scene)


def test_bad_times_raise():
    sim = acm.Simulation(acm.load(PROFILE))
    sim.run_until(0.01)
    with pytest.raises(acm.InputError, match="t must be a time >= 0, got -1"):
        sim.run_until(-1.0)
    with pytest.raises(acm.InputError, match="t must be a time >= the current time 0.01 s"):
        sim.positions(0.0)
    with pytest.raises(acm.InputError, match="positions: expected 1666 rows"):
        sim.check(np.zeros((3, 3)))
    with pytest.raises(acm.InputError, match="non-finite"):
        x = sim.positions()
        x[5, 0] = np.nan
        sim.check(x)
