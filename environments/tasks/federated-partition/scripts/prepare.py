"""Build the federated-partition task's data from a private seed.

The hidden population is an MDM that differs from the fed_mdm tool's built-in truth: K = 4
(two half-split components, a sparse one and a near-IID one), classes permuted by the private
seed, alphas jittered, and client size linked to the component (the near-IID clients are
larger). The actor sees what a federated server could: a cohort of 150 clients' label counts
and population aggregates (totals, size histogram, mean proportions). The 2000 clients that
score a submission are private (held-out, next to this script): one set of 2000 per private split
(search, select, test; environments/task/splits.py), test's the set scored before the splits.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

from methods.fed_mdm.synthetic import sample_clients

PRIVATE_SEED = 80_512
N_POPULATION = 20_000
N_COHORT = 150
N_HELDOUT = 2_000  # per split (eval.py's split_members numbers them)
SIZE_EDGES = [1, 10, 20, 30, 40, 60, 80, 101]

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from eval import heldout_file  # noqa: E402


def hidden_mdm(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    e = 0.05
    alphas = np.array([[2.5] * 5 + [e] * 5, [e] * 5 + [2.5] * 5, [0.1] * 10, [6.0] * 10])
    alphas = alphas * rng.uniform(0.8, 1.25, size=alphas.shape)
    alphas = alphas[:, rng.permutation(10)]
    phi = np.array([0.3, 0.3, 0.25, 0.15])
    size_ranges = np.array([[8, 31], [8, 31], [8, 31], [40, 101]])
    return phi, alphas, size_ranges


def main() -> None:
    rng = np.random.default_rng(PRIVATE_SEED)
    phi, alphas, ranges = hidden_mdm(rng)
    population, _ = sample_clients(phi, alphas, N_POPULATION, rng, ranges)
    heldout = population[:N_HELDOUT]
    cohort = population[N_HELDOUT:N_HELDOUT + N_COHORT]
    rest = population[N_HELDOUT:]  # everyone but the scoring clients: what aggregates cover
    data = HERE.parent / "env" / "data"
    data.mkdir(parents=True, exist_ok=True)
    np.save(data / "cohort_counts.npy", cohort.astype(np.int64))
    np.save(data / "central_labels.npy", load_digits().target.astype(np.int64))
    sizes = rest.sum(axis=1)
    props = rest / sizes[:, None]
    aggregates = {
        "n_clients": int(len(rest)),
        "label_totals": rest.sum(axis=0).tolist(),
        "size_bin_edges": SIZE_EDGES,
        "size_hist": np.histogram(sizes, bins=SIZE_EDGES)[0].tolist(),
        "mean_size": float(sizes.mean()),
        "mean_proportions": np.round(props.mean(axis=0), 6).tolist(),
        "mean_squared_proportions": np.round((props**2).mean(axis=0), 6).tolist(),
    }
    (data / "aggregates.json").write_text(json.dumps(aggregates, indent=1))
    np.save(HERE / heldout_file("test"), heldout.astype(np.int64))
    # search's and select's held-out clients: drawn after the population from the same hidden MDM
    # (so test's clients and the aggregates are as before), outside the aggregates like test's
    extra, _ = sample_clients(phi, alphas, 2 * N_HELDOUT, rng, ranges)
    for k, split in enumerate(("search", "select")):
        np.save(HERE / heldout_file(split), extra[k * N_HELDOUT:(k + 1) * N_HELDOUT].astype(np.int64))
    print(f"prepared: cohort {cohort.shape}, held-out {heldout.shape} per split, "
          f"aggregates over {len(rest)} clients")


if __name__ == "__main__":
    main()
