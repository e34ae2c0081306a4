"""Reference posterior: the paper's FB form, which also reads the *future* visible spikes,
lambda_t = sigmoid(W_F c_t + W_B cbar_t + b), cbar_t = sum_j phi_j x_{t+j}."""

import torch

from methods.poglm.posterior import Posterior

N_VIS, N_HID = 3, 2


class Q(Posterior):
    def __init__(self) -> None:
        super().__init__("FB", N_VIS, N_HID)

    def rates(self, x_vis: torch.Tensor, z_prefix: torch.Tensor | None = None) -> torch.Tensor:
        return super().rates(x_vis)
