"""Score route.py on fresh samples of the 24 *training* tasks (the held-out tasks are private)."""

import torch

from library import TrainingTasks, forward, load_base, load_experts
from route import route

base, (A, B) = load_base(), load_experts()
tasks = TrainingTasks(base=base)
mses = []
with torch.no_grad():
    for t in range(len(tasks)):
        x, y = tasks.sample(t, 200, seed=1000 + t)
        mses.append(float(((forward(base, A, B, x, route) - y) ** 2).mean()))
print(f"training-task MSE {sum(mses) / len(mses):.3f} (per task: {[round(m, 2) for m in mses]})")
