"""Fit the posterior q (q.py) to the training spikes with p fixed at the true GLM; writes q.pt.

The estimator is the original POGLM one: sample discrete hidden counts Z ~ Poisson(q's rates),
and ascend the surrogate ln p(X, Z) + sg(ln p - ln q) * ln q (the score-function / REINFORCE
gradient of the ELBO, no control variate). S = 5 samples per sequence, Adam 0.1, 20 epochs,
batches of 10 sequences.
"""

import numpy as np
import torch

from methods.poglm.glm import DTYPE, GLMParams, poisson_logpmf
from methods.poglm.inference import log_joint_poisson
from q import Q

EPOCHS, BATCH, SAMPLES, LR = 20, 10, 5, 0.1


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    true = np.load("data/p_true.npz")
    p = GLMParams(W=torch.as_tensor(true["W"], dtype=DTYPE), b=torch.as_tensor(true["b"], dtype=DTYPE),
                  n_vis=int(true["n_vis"]))
    x = torch.as_tensor(np.load("data/train.npz")["X"], dtype=DTYPE)
    q = Q()
    opt = torch.optim.Adam(q.parameters(), lr=LR)
    for epoch in range(EPOCHS):
        perm = torch.randperm(len(x))
        total = 0.0
        for start in range(0, len(x), BATCH):
            xb = x[perm[start : start + BATCH]]
            lam = q.rates(xb).expand(SAMPLES, *xb.shape[:-1], 2)
            z = torch.poisson(lam.detach())
            log_q = poisson_logpmf(z, lam).sum(dim=(-1, -2))
            log_p = log_joint_poisson(p, xb, z)
            log_w = (log_p - log_q).detach()
            loss = -(log_p + log_w * log_q).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(log_w.mean(0).sum())
        print(f"epoch {epoch + 1}: train ELBO {total / len(x):.2f} nats/sequence")
    torch.save(q.state_dict(), "q.pt")


if __name__ == "__main__":
    main()
