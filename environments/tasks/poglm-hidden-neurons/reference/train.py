"""Reference: fit the FB posterior with Gumbel-softmax pathwise gradients (tau 0.5, K = 5,
S = 5, Adam 0.1, 15 epochs, batches of 10), p fixed at the true GLM; writes q.pt."""

import numpy as np
import torch

from methods.poglm.glm import DTYPE, GLMParams
from methods.poglm.inference import fit
from q import Q


def main() -> None:
    torch.set_num_threads(1)
    true = np.load("data/p_true.npz")
    p = GLMParams(W=torch.as_tensor(true["W"], dtype=DTYPE), b=torch.as_tensor(true["b"], dtype=DTYPE),
                  n_vis=int(true["n_vis"]))
    x = torch.as_tensor(np.load("data/train.npz")["X"], dtype=DTYPE)
    out = fit(x, 2, q_kind="FB", estimator="gs_pathwise", tau=0.5, K=5, epochs=15, fixed_params=p, seed=0)
    print("train ELBO per epoch:", [round(v, 2) for v in out.curve])
    q = Q()
    q.load_state_dict(out.q.state_dict())
    torch.save(q.state_dict(), "q.pt")


if __name__ == "__main__":
    main()
