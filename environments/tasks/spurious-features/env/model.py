"""The fixed network: f(x) = w2^T ReLU(W1 x + b1) + b2, 20 inputs, 128 hidden units, 1 output.

Layers: ``net.hidden`` (Linear 20 -> 128) and ``net.out`` (Linear 128 -> 1); ``net.features(x)``
is the hidden ReLU output. Do not change it: eval copies your trained weights into this same
architecture. ``make_net(seed)`` builds one with PyTorch's default init after
torch.manual_seed(seed).
"""

from methods.spurious_boolean.model import Net
from methods.spurious_boolean.model import make_net as _make_net

DIM, WIDTH = 20, 128


def make_net(seed: int) -> Net:
    return _make_net(DIM, WIDTH, seed)
