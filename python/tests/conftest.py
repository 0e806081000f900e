"""Shared fixtures: the repository, the `acm` command, a sheet made with numpy."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def acm_bin():
    """The `acm` command line (ACM_BIN, or the release build of this repository, built if missing)."""
    path = pathlib.Path(os.environ.get("ACM_BIN", REPO / "target" / "release" / "acm"))
    if not path.exists():
        subprocess.run(["cargo", "build", "--release", "--bin", "acm"], cwd=REPO, check=True)
    return path


def sheet(n, size, height):
    """A horizontal square sheet of n x n quads, `size` cm wide, centred above the origin at
    `height` cm: (vertices, triangles)."""
    s = np.linspace(-size / 2, size / 2, n + 1)
    x, z = np.meshgrid(s, s, indexing="ij")
    vertices = np.stack([x.ravel(), np.full(x.size, height), z.ravel()], axis=1)
    k = np.arange(n)
    i, j = np.meshgrid(k, k, indexing="ij")
    a = (i * (n + 1) + j).ravel()
    b, c, d = a + 1, a + n + 1, a + n + 2
    triangles = np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1)])
    return vertices, triangles


def read_obj_positions(path):
    """The `v` lines of an OBJ file as a float64 (n, 3) array (Python reads the shortest
    round-trip decimals acm writes back to the same doubles)."""
    rows = [line.split()[1:4] for line in open(path) if line.startswith("v ")]
    return np.array(rows, dtype=np.float64)
