"""Peak autograd-saved bytes per training step: global BP vs local learning vs local + SGR.

Run: ``python tests/benchmarks/bench_sgr_memory.py``. For 4, 8 and 16 modules (width 64, batch
64, digits-sized input), counts the bytes packed through
``torch.autograd.graph.saved_tensors_hooks`` during one step (each storage once per graph, the
maximum over the step's graphs) and prints the ratio to BP. The paper claims more than 40%
memory saving for local learning with SGR at its (CIFAR/ImageNet) scale; this prints what the
reconstruction saves on an MLP. Not collected by pytest.
"""

from __future__ import annotations

import torch

from methods.sgr_local import LocalNet, SavedTensorMeter, local_rule, sgr_rule
from methods.sgr_local.training import bp_step, local_step

WIDTH, BATCH, N_IN, N_CLASSES = 64, 64, 64, 10


def saved_bytes(depth: int, method: str) -> int:
    torch.manual_seed(0)
    model = LocalNet(N_IN, WIDTH, depth, N_CLASSES, seed=0)
    x, y = torch.rand(BATCH, N_IN), torch.randint(0, N_CLASSES, (BATCH,))
    meter = SavedTensorMeter()
    if method == "bp":
        bp_step(model, x, y, meter)
    else:
        local_step(model, x, y, local_rule if method == "local" else sgr_rule, meter)
    return meter.peak


def main() -> None:
    torch.set_num_threads(1)
    print(f"{'modules':>7} {'BP bytes':>10} {'local bytes':>12} {'SGR bytes':>10} "
          f"{'local/BP':>9} {'SGR/BP':>7} {'SGR saving':>11}")
    for depth in (4, 8, 16):
        bp, local, sgr = (saved_bytes(depth, m) for m in ("bp", "local", "sgr"))
        print(f"{depth:>7} {bp:>10} {local:>12} {sgr:>10} {local / bp:>9.3f} {sgr / bp:>7.3f} "
              f"{1 - sgr / bp:>10.0%}")


if __name__ == "__main__":
    main()
