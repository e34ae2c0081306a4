"""A 2-D convolution layer (NHWC, zero padding, stride, ReLU) in numpy, vectorised.

Reference solution: the forward pass is one im2col matrix product instead of Python loops.
``scripts/eval.py`` imports this file, builds a ``Conv2DLayer`` with its own weights, and
times ``forward`` on its own inputs.

Run ``python train.py`` to time the forward pass on a random batch yourself.
"""

from __future__ import annotations

import time

import numpy as np

BATCH_SIZE = 16
IMAGE_SIZE = 32
INPUT_CHANNELS = 3
NUM_FILTERS = 8
KERNEL_SIZE = 3
STRIDE = 1
PADDING = 1


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


class Conv2DLayer:
    """A convolution layer: ``kernel_matrices`` (k, k, C_in, F) and ``biases`` (1, 1, 1, F)."""

    def __init__(
        self,
        input_channels: int,
        num_filters: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        activation: str | None = "relu",
        seed: int = 0,
    ) -> None:
        rng = np.random.default_rng(seed)
        shape = (kernel_size, kernel_size, input_channels, num_filters)
        self.kernel_matrices = rng.standard_normal(shape).astype(np.float32)
        self.biases = rng.standard_normal((1, 1, 1, num_filters)).astype(np.float32)
        self.stride = stride
        self.padding = padding
        self.activation = activation

    def convolution_step(self, image_portion: np.ndarray, kernel: np.ndarray, bias: float) -> float:
        """One output value: the window times one filter, summed, plus that filter's bias."""
        return float(np.sum(image_portion * kernel) + bias)

    def forward(self, features_batch: np.ndarray) -> np.ndarray:
        """(N, H, W, C_in) -> (N, H_out, W_out, F), float32.

        Vectorised: every k x k x C_in window is viewed (no copy) with a strided view, and all
        windows of all images meet all filters in one matrix product.
        """
        k = self.kernel_matrices.shape[0]
        n_filters = self.kernel_matrices.shape[3]
        p, s = self.padding, self.stride
        x = features_batch.astype(np.float32, copy=False)
        padded = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
        # windows: (N, H_out, W_out, C_in, k, k) after striding
        windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(1, 2))
        windows = windows[:, ::s, ::s]
        n, h_out, w_out = windows.shape[:3]
        # reorder to (N, H_out, W_out, k, k, C_in) to match the kernel layout, then flatten
        cols = windows.transpose(0, 1, 2, 4, 5, 3).reshape(n * h_out * w_out, -1)
        weights = self.kernel_matrices.reshape(-1, n_filters)
        output = cols @ weights + self.biases.reshape(1, n_filters)
        output = output.reshape(n, h_out, w_out, n_filters).astype(np.float32, copy=False)

        if self.activation == "relu":
            output = relu(output)
        return output


if __name__ == "__main__":
    rng = np.random.default_rng(1)
    batch = rng.standard_normal((BATCH_SIZE, IMAGE_SIZE, IMAGE_SIZE, INPUT_CHANNELS))
    batch = batch.astype(np.float32)
    layer = Conv2DLayer(INPUT_CHANNELS, NUM_FILTERS, KERNEL_SIZE, STRIDE, PADDING, "relu")
    start = time.perf_counter()
    out = layer.forward(batch)
    elapsed = time.perf_counter() - start
    print(f"forward pass of {BATCH_SIZE} images -> {out.shape}: {elapsed:.4f} s")
