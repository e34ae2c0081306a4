"""Reference: the baseline's population GD, then fit the denoiser's Bussgang scalars.

c and σ² are fitted on 20,000 fresh *training* samples (never the test set).
"""

import torch

from data import D, N_BITS, P
from methods.sparse_autoencoder.data import generator
from methods.sparse_autoencoder.decoders import bussgang_fit
from methods.sparse_autoencoder.training import initial_decoder, initial_encoder, train_population
from model import Decoder

SEED = 0
STEPS, LR, MASKS_PER_STEP = 300, 2e-2, 16


def main() -> None:
    torch.set_num_threads(1)
    init = generator(SEED, 1)
    B = initial_encoder("gaussian", N_BITS, D, init)
    A = initial_decoder(N_BITS, D, init)
    B, A, history = train_population(B, A, P, STEPS, LR, MASKS_PER_STEP, seed=SEED)
    fit = bussgang_fit(A, B, "bg", P, 20_000, generator(SEED, 3))
    print(f"population loss {history[-1]:.4f}; Bussgang c = {fit['c']:.4f}, "
          f"sigma2 = {fit['sigma2']:.4f}")
    decoder = Decoder()
    with torch.no_grad():
        decoder.linear.weight.copy_(A.float())
        decoder.c.fill_(fit["c"])
        decoder.sigma2.fill_(fit["sigma2"])
    torch.save({"B": B.float(), "decoder": decoder.state_dict()}, "model.pt")
    print("wrote model.pt")


if __name__ == "__main__":
    main()
