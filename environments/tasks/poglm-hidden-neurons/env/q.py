"""The variational posterior the task scores: q(Z | X) over the two hidden neurons' spikes.

eval.py builds Q() with no arguments, loads q.pt into it and reads `rates`. With
`autoregressive = False` it calls rates(x_vis, None) once; with True it calls it T times,
passing the hidden spikes it has sampled so far as z_prefix (B, t, 2) and using row t.
Rates are Poisson rates of the hidden counts in each bin; they must be positive and finite.
"""

import torch
from torch import nn

from methods.poglm.glm import DTYPE, history

N_VIS, N_HID = 3, 2


class Q(nn.Module):
    """The F posterior: lambda_t = sigmoid(W_F c_t + b), c_t the filtered *past* visible spikes."""

    autoregressive = False

    def __init__(self) -> None:
        super().__init__()
        self.W_F = nn.Parameter(torch.zeros(N_HID, N_VIS, dtype=DTYPE))
        self.b = nn.Parameter(torch.zeros(N_HID, dtype=DTYPE))

    def rates(self, x_vis: torch.Tensor, z_prefix: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, 3) visible spikes -> (B, T, 2) hidden rates."""
        return torch.sigmoid(history(x_vis) @ self.W_F.T + self.b)
