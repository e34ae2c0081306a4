"""Train with rule.py on 80% of data/train.npz and report accuracy on the other 20%.

The scored run (eval) trains on all of data/train.npz with seeds 0, 1, 2 and tests on held-out
images you do not have.
"""

import sys

import torch

import harness
import rule

SEEDS = [int(a) for a in sys.argv[1:]] or [0]


def main() -> None:
    X, y = harness.load_npz("data/train.npz")
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(1234))
    cut = int(0.8 * len(y))
    tr, va = perm[:cut], perm[cut:]
    for seed in SEEDS:
        report = harness.run(rule, X[tr], y[tr], X[va], y[va], seed=seed, verbose=True)
        problems = harness.gate_failures(report)
        print(f"seed {seed}: validation error {100 * (1 - report['test_acc']):.2f}%  "
              f"saved-memory ratio {report['saved_bytes_ratio']:.3f}  "
              f"isolation {'ok' if report['isolation_ok'] else 'BROKEN'}  "
              f"cpu {report['cpu_seconds']:.1f} s")
        for p in problems:
            print("  GATE FAILS:", p)


if __name__ == "__main__":
    main()
