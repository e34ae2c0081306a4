"""Variational posteriors q(Z | X) over the hidden spike trains.

Every rate is a sigmoid of a linear filter of spikes, with q's own weights psi (zero-initialised,
so lambda^q = 0.5 at the start):

- **F**: lambda^q_t = sigmoid(W_F c^vis_t + b_q), the past visible history only;
- **FB** (the paper's proposal): adds W_B cbar^vis_t, the *future* visible spikes filtered
  backwards; still parallel in t;
- **FS** (the report's reading): F plus W_S c^hid_t from q's own sampled hidden history, hence
  sequential in t. Slow: at T = 100 the default tool run may exceed 60 s.

``rates(x_vis, z)`` gives (..., T, H) rates; FS needs the hidden train ``z`` (teacher forcing:
its rate at t only reads z_{<t}). Sampling goes through :meth:`sample_gs` (relaxed counts) or
:meth:`sample_poisson` (discrete counts), both sequential for FS.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from methods.poglm.glm import DTYPE, history, future
from methods.poglm.relax import log_pi, sample_log_y, soft_count

QKind = Literal["F", "FS", "FB"]


class Posterior(nn.Module):
    def __init__(self, kind: QKind, n_vis: int, n_hid: int) -> None:
        super().__init__()
        if kind not in ("F", "FS", "FB"):
            raise ValueError(f"q: unknown posterior {kind!r}; choose F, FS or FB")
        self.kind = kind
        self.n_vis, self.n_hid = n_vis, n_hid
        self.W_F = nn.Parameter(torch.zeros(n_hid, n_vis, dtype=DTYPE))
        self.b_q = nn.Parameter(torch.zeros(n_hid, dtype=DTYPE))
        if kind == "FB":
            self.W_B = nn.Parameter(torch.zeros(n_hid, n_vis, dtype=DTYPE))
        if kind == "FS":
            self.W_S = nn.Parameter(torch.zeros(n_hid, n_hid, dtype=DTYPE))

    @property
    def autoregressive(self) -> bool:
        return self.kind == "FS"

    def _visible_drive(self, x: torch.Tensor) -> torch.Tensor:
        drive = self.b_q + history(x) @ self.W_F.T
        if self.kind == "FB":
            drive = drive + future(x) @ self.W_B.T
        return drive

    def rates(self, x: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        """(..., T, H) Poisson rates of the hidden units given visible spikes x (..., T, V)."""
        drive = self._visible_drive(x)
        if self.kind == "FS":
            if z is None:
                raise ValueError("q: the FS posterior needs the hidden spikes to give its rates")
            drive = drive + history(z) @ self.W_S.T
        return torch.sigmoid(drive)

    def _sequential(self, x: torch.Tensor, S: int, draw) -> tuple[torch.Tensor, ...]:
        """FS sampling: one bin at a time, each rate reading the hidden counts drawn so far.

        ``x`` is (B, T, V); every output of ``draw`` gets a time axis at position 2.
        """
        drive = self._visible_drive(x).expand(S, *x.shape[:-1], self.n_hid)
        T = x.shape[-2]
        z = torch.zeros_like(drive)
        outs = []
        for t in range(T):
            c_hid = history(z[..., : t + 1, :])[..., t, :]
            lam = torch.sigmoid(drive[..., t, :] + c_hid @ self.W_S.T)
            out = draw(lam)
            z = z.clone()
            z[..., t, :] = out[0]
            outs.append(out)
        return tuple(torch.stack([o[i] for o in outs], dim=2) for i in range(len(outs[0])))

    def sample_gs(
        self, x: torch.Tensor, S: int, tau: float, K: int, gen: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(log y, ln pi^q), each (S, B, T, H, K): relaxed hidden counts and q's categories."""
        if self.kind != "FS":
            lp = log_pi(self.rates(x), K).expand(S, *x.shape[:-1], self.n_hid, K)
            return sample_log_y(lp, tau, gen), lp

        def draw(lam: torch.Tensor):
            lp = log_pi(lam, K)
            ly = sample_log_y(lp, tau, gen)
            return soft_count(ly), ly, lp

        _, ly, lp = self._sequential(x, S, draw)
        return ly, lp

    def sample_poisson(self, x: torch.Tensor, S: int, gen: torch.Generator | None = None) -> torch.Tensor:
        """(S, B, T, H) discrete hidden counts z ~ Poisson(lambda^q)."""
        if self.kind != "FS":
            lam = self.rates(x).expand(S, *x.shape[:-1], self.n_hid)
            return torch.poisson(lam.detach(), generator=gen)

        def draw(lam: torch.Tensor):
            return (torch.poisson(lam.detach(), generator=gen),)

        (z,) = self._sequential(x, S, draw)
        return z
