"""Print the Fréchet distance of sampler.py at 10 denoiser calls against the dev oracle.

The dev oracle is the exact Bayes denoiser of dev_oracle.npz, a 10-component Gaussian mixture
fitted to 8x8 digits in [-1, 1]. The task is scored the same way (n = 2000 samples, 10 calls,
2000 reference samples) against a hidden, differently arranged version of the same mixture, so
FD values carry over.
"""

import numpy as np

from fd import frechet_distance
from methods.bfn_solver.gmm import GMM, GMMOracle
from sampler import sample

N, NFE = 2000, 10


class Budget:
    """Counts calls and refuses an 11th, as the scorer does."""

    def __init__(self, denoise, cap: int) -> None:
        self.denoise, self.cap, self.calls = denoise, cap, 0

    def __call__(self, mu, t):
        self.calls += 1
        if self.calls > self.cap:
            raise RuntimeError(f"more than {self.cap} denoiser calls")
        if mu.shape != (N, 64):
            raise ValueError(f"mu must be ({N}, 64), got {mu.shape}")
        return self.denoise(mu, t)


def main() -> None:
    with np.load("dev_oracle.npz") as f:
        gmm = GMM(f["weights"], f["means"], f["covariances"])
    denoise = Budget(GMMOracle(gmm), NFE)
    x = sample(denoise, N, NFE, np.random.default_rng(0))
    ref = gmm.sample(N, np.random.default_rng(1))
    floor = frechet_distance(gmm.sample(N, np.random.default_rng(2)), ref)
    print(f"FD at {denoise.calls} calls: {frechet_distance(x, ref):.3f} (noise floor {floor:.3f})")


if __name__ == "__main__":
    main()
