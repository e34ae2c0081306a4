"""Partition the central labels with partition.py and print a summary (no score: the held-out
clients are private). Use it to check speed and validity before submitting."""

import time

import numpy as np

from partition import partition

labels = np.load("data/central_labels.npy")
start = time.perf_counter()
for seed in range(10):
    clients = partition(labels, seed)
    flat = np.concatenate([np.asarray(c) for c in clients])
    assert len(np.unique(flat)) == len(flat), "indices must be disjoint"
    print(f"seed {seed}: {len(clients)} clients, {len(flat)} of {len(labels)} examples used")
print(f"10 calls in {time.perf_counter() - start:.1f} s")
