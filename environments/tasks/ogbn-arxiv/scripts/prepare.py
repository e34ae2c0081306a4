"""Generate the ogbn-arxiv task's data: a seeded synthetic citation graph with homophily.

Papers belong to one of a few subject areas. Each paper cites earlier papers, mostly from its
own area (homophily), with a heavy-tailed number of citations; the graph is used undirected.
Each paper has a feature vector (think: an averaged word embedding of its abstract) that is a
weak, noisy signal of its area, and a publication year. Papers up to 2017 are for training,
2018 for validation, 2019-2020 for testing (a time split, as in ogbn-arxiv).

The private splits (task.toml [splits]): ``test`` is the 2019-2020 papers among the first 5,000,
drawn as they always were. ``search`` and ``select`` are 500 more 2019-2020 papers each, drawn
afterwards from the same generator (so the first 5,000 papers and their citations are
unchanged) as ids 5000-5999, shuffled between the two splits; each cites earlier papers of the
5,000 the same way. They are in test_idx too, with hidden labels.

Writes (current directory = the task copy's ``scripts/``):
  ../env/graph.npz   features (N, D) float32, year (N,), edges (E, 2) int64 (undirected, each
                     pair once), labels (N,) int64 with -1 on test papers, train_idx, val_idx,
                     test_idx
  answers.csv        node,label   (private; read by eval.py): the test split
  search_answers.csv, select_answers.csv   node,label of the search and select splits
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SEED = 1_729
N_NODES = 5000
N_CLASSES = 8
N_FEATURES = 32
HOMOPHILY = 0.75
SIGNAL = 0.32
N_SPLIT = 500  # new papers in each of search and select
HERE = Path(__file__).resolve().parent
ENV = HERE.parent / "env"


def main() -> None:
    rng = np.random.default_rng(SEED)
    class_p = rng.dirichlet(np.full(N_CLASSES, 4.0))
    labels = rng.choice(N_CLASSES, size=N_NODES, p=class_p)
    years = np.arange(2005, 2021)
    growth = np.exp(0.15 * (years - years[0]))  # more papers every year
    year = np.sort(rng.choice(years, size=N_NODES, p=growth / growth.sum()))  # order = time
    labels = labels[rng.permutation(N_NODES)]

    centers = rng.normal(0.0, 1.0, size=(N_CLASSES, N_FEATURES))
    features = SIGNAL * centers[labels] + rng.normal(0.0, 1.0, size=(N_NODES, N_FEATURES))

    by_class = [np.flatnonzero(labels == c) for c in range(N_CLASSES)]
    edges = set()
    for v in range(1, N_NODES):
        n_refs = min(v, int(np.ceil(rng.lognormal(1.2, 0.7))))
        for _ in range(n_refs):
            if rng.random() < HOMOPHILY:
                pool = by_class[labels[v]]
                pool = pool[pool < v]
                if len(pool) == 0:
                    continue
                u = int(pool[rng.integers(len(pool))])
            else:
                u = int(rng.integers(v))
            edges.add((u, v))
    edges = np.array(sorted(edges), dtype=np.int64)

    train_idx = np.flatnonzero(year <= 2017)
    val_idx = np.flatnonzero(year == 2018)
    test_idx = np.flatnonzero(year >= 2019)
    new = new_papers(rng, class_p, centers, labels, year)
    split_of = rng.permutation(np.repeat(["search", "select"], N_SPLIT))
    new_ids = N_NODES + np.arange(2 * N_SPLIT)
    labels = np.concatenate([labels, new["labels"]])
    features = np.concatenate([features, new["features"]])
    year = np.concatenate([year, new["year"]])
    edges = np.concatenate([edges, new["edges"]])
    public_labels = labels.copy()
    public_labels[test_idx] = -1
    public_labels[new_ids] = -1

    ENV.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        ENV / "graph.npz", features=features.astype(np.float32), year=year, edges=edges,
        labels=public_labels, train_idx=train_idx, val_idx=val_idx,
        test_idx=np.concatenate([test_idx, new_ids]),
    )
    np.savetxt(HERE / "answers.csv", np.column_stack([test_idx, labels[test_idx]]),
               delimiter=",", header="node,label", comments="", fmt="%d")
    for split in ("search", "select"):
        ids = new_ids[split_of == split]
        np.savetxt(HERE / f"{split}_answers.csv", np.column_stack([ids, labels[ids]]),
                   delimiter=",", header="node,label", comments="", fmt="%d")
    print(f"ogbn-arxiv: {N_NODES} papers, {len(edges)} citations, "
          f"{len(train_idx)}/{len(val_idx)}/{len(test_idx)} train/val/test and "
          f"{N_SPLIT}/{N_SPLIT} search/select papers in {ENV}")


def new_papers(rng: np.random.Generator, class_p: np.ndarray, centers: np.ndarray,
               labels: np.ndarray, year: np.ndarray) -> dict[str, np.ndarray]:
    """The search and select papers (ids from N_NODES on): drawn like the test papers (areas,
    2019-2020 years in the same proportions, features), each citing papers of the first
    N_NODES published no later than itself, mostly from its own area."""
    n = 2 * N_SPLIT
    new_labels = rng.choice(N_CLASSES, size=n, p=class_p)
    test_years = year[year >= 2019]
    new_year = rng.choice(test_years, size=n)
    features = SIGNAL * centers[new_labels] + rng.normal(0.0, 1.0, size=(n, N_FEATURES))
    earlier_by_year = {y: np.flatnonzero(year <= y) for y in np.unique(new_year)}
    edges = set()
    for k in range(n):
        earlier = earlier_by_year[new_year[k]]
        same = earlier[labels[earlier] == new_labels[k]]
        for _ in range(int(np.ceil(rng.lognormal(1.2, 0.7)))):
            pool = same if rng.random() < HOMOPHILY and len(same) else earlier
            edges.add((int(pool[rng.integers(len(pool))]), N_NODES + k))
    return {"labels": new_labels, "year": new_year, "features": features,
            "edges": np.array(sorted(edges), dtype=np.int64)}


if __name__ == "__main__":
    main()
