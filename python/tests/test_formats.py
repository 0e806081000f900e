"""Frames as other tools read them: PLY frames through trimesh, meshio and plyfile, and the USD
stage through Pixar's own library, against the OBJ frames and the engine's velocities."""

import subprocess

import meshio
import numpy as np
import plyfile
import pytest
import trimesh
from pxr import Usd, UsdGeom

import acm
from conftest import REPO, read_obj_positions

PROFILE = REPO / "profiles" / "sheet_on_sphere.toml"
FRAMES = 3
SPHERE = 642  # the sphere's vertices come first, then the sheet's 1,024


@pytest.fixture(scope="module")
def runs(acm_bin, tmp_path_factory):
    """The same run written as OBJ, PLY and USD; the OBJ frames' positions, the triangles,
    and each frame's velocities from the Python module (the same engine, bit for bit)."""
    root = tmp_path_factory.mktemp("formats")
    for fmt in ["obj", "ply", "usd"]:
        subprocess.run([acm_bin, "run", PROFILE, "--frames", str(FRAMES), "--format", fmt,
                        "--out", root / fmt], check=True, capture_output=True)
    positions = [read_obj_positions(root / "obj" / f"frame_{i:05}.obj") for i in range(FRAMES)]
    sim = acm.Simulation(acm.load(PROFILE))
    velocities = []
    sim.run_until((FRAMES - 1) * 0.04, on_frame=lambda i, t, x, v: velocities.append(v))
    assert len(velocities) == FRAMES and np.abs(velocities[-1]).max() > 10.0
    return root, positions, sim.triangles(), velocities


def f32(a):
    return np.asarray(a, dtype=np.float64).astype(np.float32)


def test_trimesh_reads_the_ply_frames_faces_and_positions(runs):
    root, positions, triangles, _ = runs
    for i in range(FRAMES):
        mesh = trimesh.load(root / "ply" / f"frame_{i:05}.ply", process=False)
        assert np.array_equal(mesh.faces, triangles)
        assert np.array_equal(f32(mesh.vertices), f32(positions[i]))


def test_meshio_reads_the_ply_frames_with_velocities(runs):
    root, positions, triangles, velocities = runs
    for i in range(FRAMES):
        mesh = meshio.read(root / "ply" / f"frame_{i:05}.ply")
        assert [c.type for c in mesh.cells] == ["triangle"]
        assert np.array_equal(mesh.cells[0].data, triangles)
        assert np.array_equal(f32(mesh.points), f32(positions[i]))
        v = np.stack([mesh.point_data[k] for k in ("vx", "vy", "vz")], axis=1)
        assert np.array_equal(v, f32(velocities[i]))


def test_plyfile_reads_the_ply_frames_elements(runs):
    root, positions, triangles, velocities = runs
    for i in range(FRAMES):
        ply = plyfile.PlyData.read(root / "ply" / f"frame_{i:05}.ply")
        assert [e.name for e in ply.elements] == ["vertex", "face"]
        vertex = ply["vertex"]
        assert np.array_equal(np.stack([vertex[k] for k in "xyz"], axis=1), f32(positions[i]))
        assert np.array_equal(np.stack([vertex[k] for k in ("vx", "vy", "vz")], axis=1),
                              f32(velocities[i]))
        assert np.array_equal(np.stack(ply["face"]["vertex_indices"]), triangles)


def test_the_usd_stage_holds_every_frame_as_time_samples(runs):
    root, positions, triangles, velocities = runs
    stage = Usd.Stage.Open(str(root / "usd" / "frames.usda"))
    assert UsdGeom.GetStageMetersPerUnit(stage) == 0.01
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.y
    assert stage.GetTimeCodesPerSecond() == 25.0  # a frame every 0.04 s
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (0, FRAMES - 1)
    root_prim = stage.GetDefaultPrim()
    assert root_prim.GetName() == "sheet_on_sphere"
    sphere = UsdGeom.Mesh(root_prim.GetChild("sphere"))
    sheet = UsdGeom.Mesh(root_prim.GetChild("sheet"))
    # The fixed sphere: its points once, no samples.
    assert sphere.GetPointsAttr().GetTimeSamples() == []
    assert np.array_equal(np.array(sphere.GetPointsAttr().Get()), f32(positions[0][:SPHERE]))
    assert sheet.GetPointsAttr().GetTimeSamples() == list(range(FRAMES))
    for mesh, first, count in [(sphere, 0, SPHERE), (sheet, SPHERE, 1024)]:
        local = np.array(mesh.GetFaceVertexIndicesAttr().Get()).reshape(-1, 3) + first
        mine = triangles[(triangles[:, 0] >= first) & (triangles[:, 0] < first + count)]
        assert np.array_equal(local, mine)
        assert list(mesh.GetFaceVertexCountsAttr().Get()) == [3] * len(mine)
    for i in range(FRAMES):
        assert np.array_equal(np.array(sheet.GetPointsAttr().Get(i)), f32(positions[i][SPHERE:]))
        assert np.array_equal(np.array(sheet.GetVelocitiesAttr().Get(i)), f32(velocities[i][SPHERE:]))
