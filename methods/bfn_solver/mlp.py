"""The second check: a small trained eps-network in place of the oracle.

An MLP 64(+2 time features) -> 256 -> 256 -> 64 with SiLU (sizes chosen here, not from the
report) predicts eps from (mu, t). It is trained on fresh GMM samples with the BFN
continuous-time loss -ln(sigma1) sigma1^{-2t} ||x - x_hat||^2, which in eps form is
(-ln sigma1 / gamma(t)) ||eps - eps_hat||^2, with t ~ U(eta, 1) to avoid the 1/gamma blow-up
near t = 0. As a denoiser it returns x_hat = (mu - sigma eps_hat) / alpha, and 0 below
t_min = 1e-6 (Graves' convention; the oracle returns the data mean there).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from methods.bfn_solver.gmm import GMM
from methods.bfn_solver.schedule import ETA, SIGMA1_SQ

T_MIN = 1e-6


class EpsNet(nn.Module):
    def __init__(self, d: int = 64, hidden: int = 256) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d + 2, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, d)
        )

    def forward(self, mu: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        gam = (-torch.expm1(t * float(np.log(SIGMA1_SQ)))).clamp_min(1e-12)
        feats = torch.stack([t, torch.log(gam)], dim=-1)
        return self.net(torch.cat([mu, feats], dim=-1))


def train_eps_net(
    gmm: GMM, *, steps: int = 2000, batch: int = 256, lr: float = 1e-3, eta: float = ETA,
    sigma1_sq: float = SIGMA1_SQ, seed: int = 0,
) -> EpsNet:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    net = EpsNet(gmm.dim)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    neg_log_sigma1 = -0.5 * np.log(sigma1_sq)
    for _ in range(steps):
        x = torch.from_numpy(gmm.sample(batch, rng)).float()
        t = eta + (1.0 - eta) * torch.rand(batch)
        g = -torch.expm1(t * np.log(sigma1_sq))  # gamma(t)
        eps = torch.randn_like(x)
        mu = g[:, None] * x + torch.sqrt(g * (1 - g))[:, None] * eps
        loss = (neg_log_sigma1 / g * ((net(mu, t) - eps) ** 2).sum(1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net.eval()


class MLPDenoiser:
    """D(mu, t) from an eps-network."""

    def __init__(self, net: EpsNet, sigma1_sq: float = SIGMA1_SQ) -> None:
        self.net = net.eval()
        self.sigma1_sq = sigma1_sq

    @torch.no_grad()
    def __call__(self, mu: np.ndarray, t) -> np.ndarray:
        n = mu.shape[0]
        tt = torch.as_tensor(np.broadcast_to(np.asarray(t, dtype=np.float64), (n,)).copy())
        g = -torch.expm1(tt * np.log(self.sigma1_sq))
        s = torch.sqrt(g * (1 - g))
        eps = self.net(torch.from_numpy(mu).float(), tt.float()).double()
        x_hat = (torch.from_numpy(mu) - s[:, None] * eps) / g.clamp_min(1e-300)[:, None]
        x_hat = torch.where((tt < T_MIN)[:, None], torch.zeros_like(x_hat), x_hat)
        return x_hat.numpy()


def load_eps_net(path: str | Path) -> EpsNet:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"denoiser: {str(path)!r} does not exist")
    net = EpsNet()
    net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return net.eval()
