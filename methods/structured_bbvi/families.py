"""Location-scale variational families z = m + C·u, u ~ N(0, I), with C lower-triangular.

- ``meanfield``: C diagonal (d scale parameters).
- ``structured``: bordered block-diagonal C (Ko, Kim, Kim & Gardner, ICML 2024): a dense
  lower-triangular L_G on the globals, and for each group n a dense d_L×d_G border B_n onto the
  globals plus a lower-triangular L_n on its own block; O(N) parameters. It is stored as block
  tensors and applied block by block, so sampling costs O(N).
- ``full_rank``: dense lower-triangular C, d(d+1)/2 = O(N²) parameters.

C is parameterised directly by its free entries (a triangular mask applied to a raw tensor). The
map u ↦ m + C·u is then linear in the parameters (the "standardized" form whose ELBO is concave),
and there is no positivity projection: the entropy term is Σ_i log|C_ii|. Masked-out entries
get zero gradients and, starting at zero, stay zero under Adam, SGD or RMSprop.

All of a family's numbers live in one flat leaf tensor (``flat``) with named views: one tensor
per optimiser step instead of four, and Adam is elementwise, so the dynamics are those of
separate tensors. The reparameterisation gradient of the ELBO is written out
(:meth:`Family.neg_elbo_grad`), which is what autograd computes (a test checks it) at a fraction
of the per-iteration overhead; the training loop falls back to autograd for anything else.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Literal

import torch

from methods.structured_bbvi.problem import DTYPE, Dims, HierProblem

FamilyName = Literal["meanfield", "structured", "full_rank"]
FAMILIES: tuple[str, ...] = ("meanfield", "structured", "full_rank")


def n_scale_params(family: str, dims: Dims) -> int:
    dG, dL, N, d = dims.d_global, dims.d_local, dims.N, dims.d
    if family == "meanfield":
        return d
    if family == "structured":
        return dG * (dG + 1) // 2 + N * (dL * dG + dL * (dL + 1) // 2)
    if family == "full_rank":
        return d * (d + 1) // 2
    raise ValueError(f"families: unknown family {family!r}")


def structured_mask(dims: Dims) -> torch.Tensor:
    """The bordered block-diagonal sparsity pattern as a dense bool (d, d) matrix."""
    dG, dL = dims.d_global, dims.d_local
    mask = torch.zeros(dims.d, dims.d, dtype=torch.bool)
    mask[:dG, :dG] = torch.ones(dG, dG, dtype=torch.bool).tril()
    for n in range(dims.N):
        rows = slice(dG + n * dL, dG + (n + 1) * dL)
        mask[rows, :dG] = True
        mask[rows, rows] = torch.ones(dL, dL, dtype=torch.bool).tril()
    return mask


def initial_diagonal(dims: Dims, init: str, local_init: float) -> torch.Tensor:
    """The authors' init: √0.1 on the globals and ``local_init`` on the locals; or the identity."""
    diag = torch.ones(dims.d, dtype=DTYPE)
    if init == "authors":
        diag[: dims.d_global] = math.sqrt(0.1)
        diag[dims.d_global :] = local_init
    elif init != "identity":
        raise ValueError(f"init: unknown init {init!r}")
    return diag


class Family(ABC):
    """One family: a flat parameter tensor, its layout, and the maps the training loop needs."""

    name: str

    def __init__(self, dims: Dims, flat: torch.Tensor | None = None) -> None:
        self.dims = dims
        self.flat = torch.zeros(self.size(), dtype=DTYPE) if flat is None else flat
        # views are made once: building them costs more than the arithmetic at these sizes
        self._parts = self.views(self.flat)
        self._grad = torch.zeros_like(self.flat)
        self._grad_parts = self.views(self._grad)
        self._diag = self.diagonal_views(self._parts)
        self._grad_diag = self.diagonal_views(self._grad_parts)

    @classmethod
    def create(cls, name: str, dims: Dims, init: str = "authors", local_init: float = 1.0) -> Family:
        kind = {"meanfield": MeanField, "structured": Structured, "full_rank": FullRank}.get(name)
        if kind is None:
            raise ValueError(f"families: unknown family {name!r}")
        q = kind(dims)
        q.set_diagonal(initial_diagonal(dims, init, local_init))
        return q

    # layout ------------------------------------------------------------------------------
    @abstractmethod
    def layout(self) -> list[tuple[str, tuple[int, ...]]]:
        ...

    def size(self) -> int:
        return sum(math.prod(shape) for _, shape in self.layout())

    def views(self, flat: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Named views into ``flat`` (default: the parameters; also used on gradients)."""
        if flat is None:
            return self._parts
        out, offset = {}, 0
        for name, shape in self.layout():
            size = math.prod(shape)
            out[name] = flat[offset : offset + size].view(shape)
            offset += size
        return out

    @property
    def params(self) -> dict[str, torch.Tensor]:
        return self.views()

    def leaves(self) -> list[torch.Tensor]:
        return [self.flat]

    # diag(C) -------------------------------------------------------------------------------
    @abstractmethod
    def diagonal_views(self, parts: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        """Views into ``parts`` whose flattened concatenation is diag(C), in variable order."""
        ...

    def diagonal(self) -> torch.Tensor:
        if len(self._diag) == 1:
            return self._diag[0]
        return torch.cat([v.reshape(-1) for v in self._diag])

    def _add_to_diagonal(self, views: list[torch.Tensor], values: torch.Tensor) -> None:
        offset = 0
        for view in views:
            view += values[offset : offset + view.numel()].reshape(view.shape)
            offset += view.numel()

    def set_diagonal(self, diag: torch.Tensor) -> None:
        with torch.no_grad():
            self._add_to_diagonal(self._diag, diag - self.diagonal())

    # maps ----------------------------------------------------------------------------------

    @abstractmethod
    def sample(self, u: torch.Tensor) -> torch.Tensor:
        """m + C·u for a batch u (S, d)."""
        ...

    def log_abs_det(self) -> torch.Tensor:
        """Σ_i log|C_ii| (C is triangular): the entropy up to a constant."""
        return torch.log(torch.abs(self.diagonal())).sum()

    def elbo_terms(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.sample(u), self.log_abs_det()

    @abstractmethod
    def dense(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(m, C) as a vector and a dense matrix, detached, for the exact KL."""
        ...

    @abstractmethod
    def scale_grad(self, g: torch.Tensor, u: torch.Tensor, out: dict[str, torch.Tensor]) -> None:
        """Write ∂/∂(scale params) of mean_s g_sᵀ C u_s into ``out`` (masked to the family)."""
        ...

    def neg_elbo_grad(self, problem: HierProblem, u: torch.Tensor) -> torch.Tensor:
        """The flat gradient of −ELBO estimated with the samples u (pathwise estimator).

        ∇_m = mean_s ∇log p(θ_s); ∇_C = mask ⊙ mean_s ∇log p(θ_s) u_sᵀ + diag(1/C_ii).
        """
        with torch.no_grad():
            g = problem.grad_log_joint(self.sample(u))
            parts = self._grad_parts
            torch.mean(g, 0, out=parts["m"])
            self.scale_grad(g, u, parts)
            # the entropy term Σ log|C_ii|, whose derivative is 1/C_ii on the diagonal
            self._add_to_diagonal(self._grad_diag, 1.0 / self.diagonal())
            return self._grad.neg()

    def clamp_diagonal(self, minimum: float) -> None:
        """Projection used by the SGD option: diag(C) ≥ minimum."""
        with torch.no_grad():
            self.set_diagonal(self.diagonal().clamp(min=minimum))


class MeanField(Family):
    name = "meanfield"

    def layout(self):
        return [("m", (self.dims.d,)), ("diag", (self.dims.d,))]

    def diagonal_views(self, parts):
        return [parts["diag"]]

    def sample(self, u):
        p = self.views()
        return p["m"] + u * p["diag"]

    def dense(self):
        p = self.views(self.flat.detach())
        return p["m"], torch.diag(p["diag"])

    def scale_grad(self, g, u, out):
        out["diag"].copy_((g * u).mean(0))


class FullRank(Family):
    name = "full_rank"

    def layout(self):
        return [("m", (self.dims.d,)), ("L", (self.dims.d, self.dims.d))]

    def diagonal_views(self, parts):
        return [torch.diagonal(parts["L"])]

    def sample(self, u):
        p = self.views()
        return p["m"] + u @ torch.tril(p["L"]).T

    def dense(self):
        p = self.views(self.flat.detach())
        return p["m"], torch.tril(p["L"])

    def scale_grad(self, g, u, out):
        out["L"].copy_(torch.tril(g.T @ u).div_(u.shape[0]))


class Structured(Family):
    """Blocks: LG (d_G, d_G) lower; B (N, d_L, d_G) dense border; L (N, d_L, d_L) lower."""

    name = "structured"

    def layout(self):
        dG, dL, N = self.dims.d_global, self.dims.d_local, self.dims.N
        return [("m", (self.dims.d,)), ("LG", (dG, dG)), ("B", (N, dL, dG)), ("L", (N, dL, dL))]

    def diagonal_views(self, parts):
        return [torch.diagonal(parts["LG"]), torch.diagonal(parts["L"], dim1=-2, dim2=-1)]

    def sample(self, u):
        dG, dL, N = self.dims.d_global, self.dims.d_local, self.dims.N
        p = self.views()
        u_g = u[:, :dG]
        u_l = u[:, dG:].reshape(-1, N, dL).permute(1, 2, 0)  # (N, dL, S)
        z_g = u_g @ torch.tril(p["LG"]).T
        border = u_g @ p["B"].reshape(N * dL, dG).T  # (S, N*dL): B_n u_G for every n
        own = torch.bmm(torch.tril(p["L"]), u_l).permute(2, 0, 1).reshape(-1, N * dL)  # L_n u_n
        return p["m"] + torch.cat([z_g, border + own], dim=1)

    def dense(self):
        dG, dL, N = self.dims.d_global, self.dims.d_local, self.dims.N
        p = self.views(self.flat.detach())
        C = torch.zeros(self.dims.d, self.dims.d, dtype=DTYPE)
        C[:dG, :dG] = torch.tril(p["LG"])
        C[dG:, :dG] = p["B"].reshape(N * dL, dG)
        C[dG:, dG:] = torch.block_diag(*torch.tril(p["L"]))
        return p["m"], C

    def scale_grad(self, g, u, out):
        dG, dL, N = self.dims.d_global, self.dims.d_local, self.dims.N
        S = u.shape[0]
        u_g, g_g = u[:, :dG], g[:, :dG]
        g_l = g[:, dG:]
        out["LG"].copy_(torch.tril(g_g.T @ u_g).div_(S))
        out["B"].copy_((g_l.T @ u_g).div_(S).reshape(N, dL, dG))
        own = torch.bmm(g_l.reshape(S, N, dL).permute(1, 2, 0), u[:, dG:].reshape(S, N, dL).transpose(0, 1))
        out["L"].copy_(torch.tril(own).div_(S))
