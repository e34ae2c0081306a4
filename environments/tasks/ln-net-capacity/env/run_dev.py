"""Mean training accuracy of net.json on 3 development datasets (public seeds 0, 1, 2).

Each dataset: 256 points X ~ N(0, I_8) with uniformly random binary labels (independent of X).
The evaluation uses 5 datasets drawn the same way from private seeds.
"""

import torch

import lnlib

M, D = 256, 8


def dataset(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0 if seed == 0 else 100 + seed)
    return torch.randn(M, D), torch.randint(0, 2, (M,))


def main() -> None:
    spec = lnlib.load_spec("net.json")
    accs = []
    for seed in range(3):
        X, y = dataset(seed)
        r = lnlib.train_accuracy(spec, X, y, seed=seed)
        accs.append(r["train_acc"])
        print(f"dev {seed}: train_acc {r['train_acc']:.4f}  ({r['n_params']} params, "
              f"{r['cpu_seconds']:.1f} s CPU)")
    print(f"mean train_acc {sum(accs) / len(accs):.4f}")


if __name__ == "__main__":
    main()
