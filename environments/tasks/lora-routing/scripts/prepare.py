"""Build the lora-routing task: the frozen base, the 4 MBC cluster experts, the 24 training
tasks' definitions (public), and 8 held-out tasks (2 per family, private seeds) for scoring, per
private split (search, select, test: environments/task/splits.py; disjoint task seeds)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch

from methods.lora_library.synthetic import build_library, make_task

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "inputs"), str(HERE)]
from eval import FAMILIES, PRIVATE_SEED, SPLITS, heldout_file, task_indices  # noqa: E402
from routed import inputs_file  # noqa: E402

HELDOUT_SAMPLES = 500


def main() -> None:
    torch.set_num_threads(1)
    lib = build_library(families=FAMILIES, seed=0)
    env = HERE.parent / "env"
    torch.save(lib.base.state_dict(), env / "base.pt")
    torch.save({"A": [a.clone() for a in lib.experts.A], "B": [b.clone() for b in lib.experts.B]},
               env / "experts.pt")
    torch.save({"P": torch.stack([f.P for f in lib.families]), "mu": torch.stack([f.mu for f in lib.families]),
                "family": torch.tensor([t.family for t in lib.tasks]),
                "U": torch.stack([t.U for t in lib.tasks])}, env / "tasks.pt")
    for name in ("base.pt", "experts.pt"):  # the trusted phase recomputes the forward pass
        shutil.copyfile(env / name, HERE / name)
    (HERE / "inputs").mkdir(exist_ok=True)
    for split in SPLITS:
        heldout = []
        for k, fam in enumerate(lib.families):
            for j in task_indices(split):
                task = make_task(fam, k, PRIVATE_SEED + 10 * k + j)
                x, y = task.sample(fam, lib.base, HELDOUT_SAMPLES)
                heldout.append({"family": k, "x": x, "y": y})
        torch.save(heldout, HERE / heldout_file(split))
        # what the submission phase may see (produce.py): the inputs, not the targets
        torch.save([t["x"] for t in heldout], HERE / "inputs" / inputs_file(split))
    print(f"prepared: {lib.experts.n} experts, {len(lib.tasks)} training tasks, "
          f"{len(heldout)} held-out tasks per split ({', '.join(SPLITS)})")


if __name__ == "__main__":
    main()
