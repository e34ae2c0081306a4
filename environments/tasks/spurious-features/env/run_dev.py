"""Train with train.py on the two dev runs (public seeds and permutations); print worst-group accuracy.

Usage: python run_dev.py
"""

import time

import data
import torch
from train import train

from methods.spurious_boolean.metrics import evaluate
from methods.spurious_boolean.model import Net

torch.set_num_threads(1)


def main() -> None:
    wgas = []
    for seed, stream_seed, bal_seed, test_seed, perm_seed in data.DEV_RUNS:
        perm = data.permutation_from_seed(perm_seed)
        stream = data.Stream(stream_seed, perm)
        bal = data.balanced_batch(bal_seed, perm, data.N_BALANCED)
        test = data.balanced_batch(test_seed, perm, data.N_TEST)
        start = time.process_time()
        net = train(stream, (bal.x, bal.y), seed)
        scored = Net()
        scored.load_state_dict(net.state_dict())
        with torch.no_grad():
            stats = evaluate(scored(test.x), test)
        wgas.append(stats["worst_group_acc"])
        print(f"seed {seed}: worst-group acc {stats['worst_group_acc']:.3f}, avg acc "
              f"{stats['avg_acc']:.3f}, groups {stats['group_acc']}, {stream.used} samples, "
              f"{time.process_time() - start:.1f}s CPU")
    print(f"mean worst-group accuracy: {sum(wgas) / len(wgas):.3f}")


if __name__ == "__main__":
    main()
