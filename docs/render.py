"""Renders a frame of the built-in default scene (the sheet dropped on a sphere) to a PNG, as
shown at the top of the README:

    pip install ./python matplotlib
    python docs/render.py 0.6 docs/sheet_on_sphere.png
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # noqa: E402

import acm  # noqa: E402

t, path = float(sys.argv[1]), sys.argv[2]
sim = acm.Simulation(acm.load())
sim.run_until(t)
x, triangles = sim.positions(), sim.triangles()
sheet = sim.objects[1][1]  # the sheet's first vertex: triangles using it on are the sheet's

corners = x[triangles]  # (m, 3, 3)
normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
normals /= np.linalg.norm(normals, axis=1, keepdims=True)
light = np.array([0.4, 1.0, 0.6]) / np.linalg.norm([0.4, 1.0, 0.6])
shade = 0.35 + 0.65 * np.abs(normals @ light)  # the sheet's two sides are lit alike
is_sheet = triangles.min(axis=1) >= sheet
base = np.where(is_sheet[:, None], [0.85, 0.35, 0.25], [0.6, 0.65, 0.7])
colours = np.clip(base * shade[:, None], 0, 1)

fig = plt.figure(figsize=(6, 4.5), dpi=100)
ax = fig.add_subplot(projection="3d", computed_zorder=False)
# Axes: x right, z (depth) into the picture, y (up) as matplotlib's vertical axis.
# The sphere first, then the sheet over it (each sorted back to front within itself).
for part in (~is_sheet, is_sheet):
    faces = corners[part][:, :, [0, 2, 1]]
    ax.add_collection3d(
        Poly3DCollection(faces, facecolors=colours[part], edgecolors=colours[part], linewidths=0.3)
    )
ax.set(xlim=(-32, 32), ylim=(-32, 32), zlim=(-22, 26))
ax.set_box_aspect((64, 64, 48), zoom=1.15)
ax.view_init(elev=22, azim=-60)
ax.set_axis_off()
fig.subplots_adjust(0, 0, 1, 1)
fig.savefig(path)
print(f"{path}: t = {sim.time} s, {sim.check()['intersecting_pairs']} intersecting pairs")
