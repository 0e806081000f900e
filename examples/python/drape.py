"""Drive acm from Python: load the built-in sheet-on-sphere scene, build one from numpy arrays,
read positions as numpy arrays, steer a vertex, and audit a configuration.

    pip install ./python        # once, from the repository root
    python examples/python/drape.py
"""

import numpy as np

import acm


# 1. A profile (here the built-in default; acm.load("profiles/NAME.toml") for a file), with
#    values overridden as `acm run --set` does.
sim = acm.Simulation(acm.load(set={"object.sheet.material.bend": 0.2}))
name, first, count = sim.objects[1]  # the sheet: global vertices first .. first + count - 1
lowest: list[float] = []
sim.run_until(0.2, on_frame=lambda index, time, x, v: lowest.append(float(x[first:, 1].min())))
print(f"{sim}: lowest point of the {name} per frame {np.round(lowest, 2)} cm")
print(f"{sim.stats['events_total']} events, audit {sim.check()}")

# 2. A scene from numpy arrays: a sheet held at one corner (a scripted vertex, at rest for now)
#    over a fixed floor, with contact.
vertices, triangles = acm.sheet(17, 17, 40.0, 40.0)  # in the XZ plane at y = 0
vertices += (0.0, 20.0, 0.0)
scene = acm.Scene(name="hanging", contact={"eta1": 0.1, "friction": 0.3})
scene.add_object("floor", [[-60, 0, -60], [60, 0, -60], [60, 0, 60], [-60, 0, 60]],
                 [[0, 2, 1], [0, 3, 2]], fixed=True)
scene.add_object("sheet", vertices, triangles, material={"density": 0.001, "drag": 0.5})
scene.script("sheet", [0], [(0.0, (0.0, 0.0, 0.0))])
sim = acm.Simulation(scene)
sim.run_until(0.5)
first = sim.objects[1][1]  # global index of the sheet's vertex 0
x = sim.positions()
print(f"t = {sim.time} s: sheet between y = {x[first:, 1].min():.2f} and {x[first:, 1].max():.2f} cm")

# 3. Steer: drag the held corner sideways at 20 cm/s, continue, read velocities.
sim.set_velocity([first], [20.0, 0.0, 0.0])
sim.run_until(0.7)
v = np.linalg.norm(sim.velocities()[first:], axis=1)
print(f"t = {sim.time} s: corner at {sim.positions()[first].round(2)} cm, "
      f"mean sheet speed {v.mean():.2f} cm/s")
