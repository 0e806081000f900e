"""Asynchronous Contact Mechanics: cloth and thin shells that never interpenetrate.

Type stubs of the compiled module `acm`. Units are cgs: cm, g, s.
"""

from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from typing import Any, Optional, TypedDict, Union

import numpy as np
import numpy.typing as npt

__version__: str

Floats = npt.NDArray[np.float64]
"""A float64 array: positions (cm) or velocities (cm/s) of shape (n, 3)."""
Indices = npt.NDArray[np.int64]
"""An int64 array: triangles of shape (m, 3)."""
ArrayLike = npt.ArrayLike
IndexLike = Union[Sequence[int], Sequence[Sequence[int]], npt.NDArray[np.integer[Any]]]
"""Vertex indices, or triangles as rows of three: integers only (floats are refused, not
truncated)."""
Vector = tuple[float, float, float]
FrameCallback = Callable[[int, float, Floats, Floats], object]
"""`on_frame(index, time, positions, velocities)`: the frame's number from 0, its time (s),
and new (n, 3) arrays of positions (cm) and velocities (cm/s). It may call the simulation."""

class Bodies(TypedDict):
    """Rigid bodies now, in the profile's `[[body]]` order (`Simulation.bodies`)."""

    names: list[str]
    positions: Floats
    """Centres of mass (cm), shape (k, 3)."""
    orientations: Floats
    """Unit quaternions `(x, y, z, w)`, scalar last, shape (k, 4)."""
    velocities: Floats
    """Linear velocities (cm/s), shape (k, 3)."""
    angular_velocities: Floats
    """Angular velocities (rad/s, world frame), shape (k, 3)."""

class InputError(ValueError):
    """Bad input: a profile, scene, argument or array that acm cannot use (the message names it)."""

class RunError(RuntimeError):
    """A run that stopped early: it diverged, made no progress, or broke an invariant."""

class Scene:
    """What to simulate: objects (triangle meshes with a material), pinned and scripted vertex
    sets, gravity and contact."""

    def __init__(
        self,
        name: str = "scene",
        duration: float = 1.0,
        frame_interval: float = 0.04,
        gravity: Vector = (0.0, -981.0, 0.0),
        contact: Optional[Mapping[str, Union[float, bool]]] = None,
    ) -> None: ...
    def add_object(
        self,
        name: str,
        vertices: ArrayLike,
        triangles: IndexLike,
        material: Optional[Mapping[str, float]] = None,
        fixed: bool = False,
        velocity: Vector = (0.0, 0.0, 0.0),
    ) -> int:
        """Adds an object (vertices (n, 3) cm, triangles (m, 3) 0-based) and returns its index."""
    def fix(self, object: str, vertices: IndexLike) -> None:
        """Pins `vertices` (local indices) of the object called `object`."""
    def script(self, object: str, vertices: IndexLike, keys: Sequence[tuple[float, Vector]]) -> None:
        """From each key `(time, (vx, vy, vz))` on, `vertices` move with that velocity (cm/s)."""
    @property
    def name(self) -> str: ...
    @property
    def duration(self) -> float: ...
    @property
    def frame_interval(self) -> float: ...
    @property
    def objects(self) -> list[str]: ...
    @property
    def vertex_count(self) -> int: ...

class Simulation:
    """A running simulation of a `Scene` by the method its `integrator.method` names, on
    `threads` worker threads (default: one per core)."""

    def __init__(self, scene: Scene, threads: Optional[int] = None) -> None: ...
    def run_until(self, t: float, on_frame: Optional[FrameCallback] = None) -> None:
        """Processes every event up to and including time `t` (s), not before now (a
        fixed-step method takes every step that ends by `t`)."""
    def step(self, on_frame: Optional[FrameCallback] = None) -> Optional[tuple[float, str]]:
        """Processes the next event: `(time, kind)`, or `None` when no event is left (ACM)."""
    @property
    def method(self) -> str:
        """The method: `"acm"`, `"sync"`, `"implicit"` or `"oba"`."""
    @property
    def time(self) -> float:
        """The current simulated time (s)."""
    @property
    def stats(self) -> dict[str, Any]:
        """What the run did so far, with the names of `stats.json`."""
    def positions(self, t: Optional[float] = None) -> Floats:
        """Every vertex's position (cm) at time `t` (default: now; later only under ACM),
        shape (n, 3)."""
    def velocities(self) -> Floats:
        """Every vertex's velocity now (cm/s), shape (n, 3)."""
    def triangles(self) -> Indices:
        """The triangles over all objects (global vertex indices), shape (m, 3)."""
    @property
    def objects(self) -> list[tuple[str, int, int]]:
        """Per object: `(name, first_vertex, vertex_count)`."""
    def set_velocity(self, vertices: IndexLike, v: ArrayLike) -> None:
        """Sets the velocity (cm/s) of `vertices` from now on: one (3,) or one each (k, 3)
        (ACM)."""
    def bodies(self) -> Bodies:
        """The rigid bodies now (`integrator = "oba"` only)."""
    def check(self, positions: Optional[ArrayLike] = None, cutoff: float = 1.0) -> dict[str, Any]:
        """The exact intersection audit of `positions` (default: now), as `acm check` reports."""

def load(
    path: Union[str, PathLike[str], None] = None,
    set: Optional[Mapping[str, Any]] = None,
) -> Scene:
    """Loads a profile (TOML), or without `path` the built-in default scene; `set` overrides
    profile keys as `acm run --set` does."""

def sheet(nx: int, ny: int, width: float, depth: float) -> tuple[Floats, Indices]:
    """A flat sheet of `nx * ny` vertices in the XZ plane: `(vertices, triangles)`."""

def icosphere(radius: float, subdivisions: int) -> tuple[Floats, Indices]:
    """A sphere of `radius` (cm) at the origin: `(vertices, triangles)`."""
