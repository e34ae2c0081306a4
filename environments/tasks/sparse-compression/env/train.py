"""Baseline: gradient descent on the exact population loss of the linear decoder.

Given the support mask m of x, Bx is Gaussian, so E‖x - A sign(Bx)‖² has a closed form (arcsine
law); each step averages it over 16 random masks and updates (A, B) jointly with Adam.
Writes model.pt = {"B": (96, 96) tensor, "decoder": Decoder state_dict}.
"""

import torch

from data import D, N_BITS, P
from methods.sparse_autoencoder.data import generator
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
    print(f"population loss: first {history[0]:.4f}, last {history[-1]:.4f}")
    decoder = Decoder()
    with torch.no_grad():
        decoder.linear.weight.copy_(A.float())
    torch.save({"B": B.float(), "decoder": decoder.state_dict()}, "model.pt")
    print("wrote model.pt")


if __name__ == "__main__":
    main()
