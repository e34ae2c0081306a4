"""The CPU-scale library: a frozen MLP, task families, private LoRAs, MBC, cluster experts, Arrow.

Every expert of one kind is trained *at once*: parameters are stacked along a leading expert
axis and the loss is the sum of the experts' own losses. Adam is elementwise, so this is the
same as training each alone, at the cost of one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from methods.lora_library.arrow import arrow_prototypes, arrow_route, mixture_delta
from methods.lora_library.mbc import MBCResult, mbc_cluster

IN, HIDDEN, OUT = 32, 64, 8
SUBSPACE = 3


def make_base(seed: int = 0) -> nn.ModuleList:
    """The frozen base: Linear(32, 64) -> tanh -> Linear(64, 8), built under manual_seed."""
    torch.manual_seed(seed)
    base = nn.ModuleList([nn.Linear(IN, HIDDEN), nn.Linear(HIDDEN, OUT)])
    base.requires_grad_(False)
    return base


@dataclass
class Family:
    P: torch.Tensor  # (32, 3) orthonormal
    mu: torch.Tensor  # (32,)
    U: torch.Tensor  # (8, 3)


@dataclass
class Task:
    family: int
    U: torch.Tensor
    gen: torch.Generator  # draws this task's samples after U

    def sample(self, fam: Family, base: nn.ModuleList, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """x ~ N(mu_k, I); y = base(x) + U P_k^T x."""
        x = fam.mu + torch.randn(n, IN, generator=self.gen)
        with torch.no_grad():
            y = base_forward(base, x) + (x @ fam.P) @ self.U.T
        return x, y


def make_families(n: int, seed: int = 0) -> list[Family]:
    fams = []
    for k in range(n):
        g = torch.Generator().manual_seed(10_000 * seed + 1000 + k)
        P, _ = torch.linalg.qr(torch.randn(IN, SUBSPACE, generator=g))
        fams.append(Family(P, 4.0 * P[:, 0], 0.8 * torch.randn(OUT, SUBSPACE, generator=g)))
    return fams


def make_task(fam: Family, family: int, task_seed: int) -> Task:
    g = torch.Generator().manual_seed(task_seed)
    return Task(family, fam.U + 0.3 * torch.randn(OUT, SUBSPACE, generator=g), g)


def base_forward(base: nn.ModuleList, x: torch.Tensor) -> torch.Tensor:
    return base[1](torch.tanh(base[0](x)))


@dataclass
class LoRAStack:
    """E experts' LoRA factors for both layers: A[l] (E, in, r), B[l] (E, r, out)."""

    A: list[torch.Tensor]
    B: list[torch.Tensor]

    @property
    def n(self) -> int:
        return self.A[0].shape[0]

    def vectors(self) -> np.ndarray:
        """Each expert's parameters flattened (every A and B, every layer): MBC's input."""
        parts = [t.detach().reshape(self.n, -1) for pair in zip(self.A, self.B) for t in pair]
        return torch.cat(parts, dim=1).numpy()


def init_lora(n: int, rank: int, shared_init: bool, seed: int = 0) -> LoRAStack:
    """A ~ N(0, 1)/sqrt(in), B = 0. With ``shared_init`` every expert starts from the same A
    (generator seeded by in_features, as in the prototype), which MBC relies on."""
    A, B = [], []
    for fan_in, fan_out in ((IN, HIDDEN), (HIDDEN, OUT)):
        if shared_init:
            g = torch.Generator().manual_seed(fan_in)
            a = (torch.randn(fan_in, rank, generator=g) / fan_in**0.5).expand(n, -1, -1).clone()
        else:
            g = torch.Generator().manual_seed(10_000 * seed + 7 + fan_in)
            a = torch.randn(n, fan_in, rank, generator=g) / fan_in**0.5
        A.append(a.requires_grad_(True))
        B.append(torch.zeros(n, rank, fan_out, requires_grad=True))
    return LoRAStack(A, B)


def stacked_forward(base: nn.ModuleList, lora: LoRAStack, x: torch.Tensor) -> torch.Tensor:
    """Expert e applied to its own inputs x[e]: (E, b, in) -> (E, b, out)."""
    h = torch.tanh(base[0](x) + (x @ lora.A[0]) @ lora.B[0])
    return base[1](h) + (h @ lora.A[1]) @ lora.B[1]


def train_stack(base: nn.ModuleList, lora: LoRAStack, batch_fn, steps: int, lr: float = 1e-2) -> LoRAStack:
    """Adam on all experts at once; ``batch_fn(step)`` returns stacked (x, y) of shape (E, b, .)."""
    opt = torch.optim.Adam([*lora.A, *lora.B], lr=lr)
    for step in range(steps):
        x, y = batch_fn(step)
        loss = ((stacked_forward(base, lora, x) - y) ** 2).mean(dim=(1, 2)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    for t in [*lora.A, *lora.B]:
        t.requires_grad_(False)
    return lora


def routed_forward(base: nn.ModuleList, lora: LoRAStack, x: torch.Tensor, weights_fn) -> torch.Tensor:
    """W0 h + sum_e w_e h A_e B_e at each layer; ``weights_fn(h, layer)`` gives (n, E)."""
    h = x
    for layer in range(2):
        lin = base[layer]
        out = lin(h) + mixture_delta(h, weights_fn(h, layer), lora.A[layer], lora.B[layer])
        h = torch.tanh(out) if layer == 0 else out
    return h


@dataclass
class Library:
    base: nn.ModuleList
    families: list[Family]
    tasks: list[Task]
    private: LoRAStack
    mbc: MBCResult
    experts: LoRAStack | None = None
    expert_of_family: list[int] = field(default_factory=list)
    heldout: list[tuple[int, torch.Tensor, torch.Tensor]] = field(default_factory=list)


def adjusted_rand(labels_true, labels_pred) -> float:
    from sklearn.metrics import adjusted_rand_score

    return float(adjusted_rand_score(labels_true, labels_pred))


def build_library(
    families: int = 4, tasks_per_family: int = 6, rank: int = 4, private_steps: int = 150,
    cluster_steps: int = 400, shared_init: bool = True, heldout_samples: int = 500, seed: int = 0,
    train_experts: bool = True, batch: int = 64, n_components: int = 64, sparsity: float = 0.8,
) -> Library:
    """The whole pipeline: private LoRAs -> MBC (k = families) -> one LoRA per cluster."""
    torch.set_num_threads(1)
    base = make_base(seed)
    fams = make_families(families, seed)
    tasks = [make_task(fams[k], k, 100 * k + j + 100_000 * seed)
             for k in range(families) for j in range(tasks_per_family)]

    def private_batch(_: int):
        xs, ys = zip(*(t.sample(fams[t.family], base, batch) for t in tasks))
        return torch.stack(xs), torch.stack(ys)

    private = train_stack(base, init_lora(len(tasks), rank, shared_init, seed), private_batch, private_steps)
    clusters = mbc_cluster(private.vectors(), families, sparsity=sparsity, n_components=n_components)
    lib = Library(base, fams, tasks, private, clusters)
    if not train_experts:
        return lib
    members = [[i for i, c in enumerate(clusters.labels) if c == e] for e in range(families)]
    members = [m if m else [0] for m in members]

    def cluster_batch(step: int):
        picks = [tasks[m[step % len(m)]] for m in members]  # round-robin over the cluster's tasks
        xs, ys = zip(*(t.sample(fams[t.family], base, batch) for t in picks))
        return torch.stack(xs), torch.stack(ys)

    lib.experts = train_stack(base, init_lora(families, rank, shared_init, seed), cluster_batch, cluster_steps)
    fam_of_task = np.array([t.family for t in tasks])
    lib.expert_of_family = [int(np.bincount(clusters.labels[fam_of_task == k], minlength=families).argmax())
                            for k in range(families)]
    for k in range(families):
        task = make_task(fams[k], k, 9999 + k + 100_000 * seed)
        x, y = task.sample(fams[k], base, heldout_samples)
        lib.heldout.append((k, x, y))
    return lib


def evaluate_library(lib: Library, top_k: int = 2, temperature: float = 1.0,
                     scale_by_sigma: bool = False, modes: tuple[str, ...] = ("base", "uniform", "arrow", "oracle")
                     ) -> dict:
    """Held-out MSE per mode (averaged over families) and Arrow's top-1 routing accuracy per
    layer against the oracle expert (layer 2 scored on the base model's hidden state)."""
    experts = lib.experts
    e = experts.n
    protos = [arrow_prototypes(experts.A[l], experts.B[l], scale_by_sigma) for l in range(2)]
    weight_fns = {
        "base": lambda h, l: torch.zeros(len(h), e),
        "uniform": lambda h, l: torch.full((len(h), e), 1.0 / e),
        "arrow_top1": lambda h, l: arrow_route(h, protos[l], 1, temperature),
        f"arrow_top{top_k}": lambda h, l: arrow_route(h, protos[l], top_k, temperature),
    }
    wanted = [m for m in weight_fns if m.split("_")[0] in modes]
    mse: dict[str, list[float]] = {m: [] for m in wanted}
    if "oracle" in modes:
        mse["oracle"] = []
    hits = [[], []]
    with torch.no_grad():
        for k, x, y in lib.heldout:
            for m in wanted:
                mse[m].append(float(((routed_forward(lib.base, experts, x, weight_fns[m]) - y) ** 2).mean()))
            target = lib.expert_of_family[k]
            if "oracle" in modes:
                one_hot = torch.zeros(len(x), e)
                one_hot[:, target] = 1.0
                mse["oracle"].append(float(((routed_forward(lib.base, experts, x, lambda h, l, w=one_hot: w) - y) ** 2).mean()))
            hidden = torch.tanh(lib.base[0](x))
            for layer, h in enumerate((x, hidden)):
                top1 = arrow_route(h, protos[layer], 1, temperature).argmax(dim=1)
                hits[layer].append(float((top1 == target).float().mean()))
    return {
        "mse": {m: float(np.mean(v)) for m, v in mse.items()},
        "routing_accuracy": {"layer1": float(np.mean(hits[0])), "layer2": float(np.mean(hits[1]))},
        "prototypes": protos,
    }
