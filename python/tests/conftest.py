"""Shared fixtures: the repository, the `acm` command, reading OBJ frames."""

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


def read_obj_positions(path):
    """The `v` lines of an OBJ file as a float64 (n, 3) array (Python reads the shortest
    round-trip decimals acm writes back to the same doubles)."""
    rows = [line.split()[1:4] for line in open(path) if line.startswith("v ")]
    return np.array(rows, dtype=np.float64)
