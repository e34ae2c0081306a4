"""Write data/graph{0..6}.npz into the workspace: the task graphs without their test labels
(graphs 0-2 are the test split's; 3-6 the search and select splits', eval.py: SPLIT_GRAPHS)."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval import N_ALL, graph  # noqa: E402  (the seeds live in eval.py only)


def main() -> None:
    out = Path(__file__).resolve().parent.parent / "env" / "data"
    out.mkdir(parents=True, exist_ok=True)
    for i in range(N_ALL):
        g = graph(i)
        g.y = np.where(g.test, -1, g.y)
        g.save(out / f"graph{i}.npz")
        print(f"wrote graph{i}.npz: {g.n} nodes, {g.edges.shape[1]} edges")


if __name__ == "__main__":
    main()
