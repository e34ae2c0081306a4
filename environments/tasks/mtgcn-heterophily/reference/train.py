"""Reference: MTGCN (16 layers, a = 0.9, hidden 64, 150 epochs, one self-training stage) on
each graph, through the labcoat library, writing submission_{i}.csv (node,class)."""

import csv
from pathlib import Path

import numpy as np
import torch

from methods.mtgcn.fit import FitConfig, fit
from methods.mtgcn.graph import load_graph


def main() -> None:
    torch.set_num_threads(1)
    for i in range(len(list(Path("data").glob("graph*.npz")))):
        g = load_graph(f"data/graph{i}.npz")
        result = fit(g, FitConfig(model="mtgcn", layers=16, a=0.9, hidden=64, epochs=150, seed=0))
        print(f"graph {i}: validation accuracy {result.val_acc:.3f}")
        with open(f"submission_{i}.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["node", "class"])
            for v in np.flatnonzero(g.test):
                w.writerow([int(v), int(result.predictions[v])])


if __name__ == "__main__":
    main()
