"""A 2-D convolution layer (NHWC, "same"-style zero padding, stride, ReLU) in plain numpy.

The forward pass below walks over every image, every output position and every filter with
explicit Python loops. It is correct, and slow. ``scripts/eval.py`` imports this file, builds a
``Conv2DLayer`` with its own weights, and times ``forward`` on its own inputs.

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
        """(N, H, W, C_in) -> (N, H_out, W_out, F), float32."""
        n_images, height, width, _ = features_batch.shape
        k = self.kernel_matrices.shape[0]
        n_filters = self.kernel_matrices.shape[3]
        p, s = self.padding, self.stride
        padded = np.pad(features_batch, ((0, 0), (p, p), (p, p), (0, 0)))
        h_out = (height + 2 * p - k) // s + 1
        w_out = (width + 2 * p - k) // s + 1
        output = np.zeros((n_images, h_out, w_out, n_filters), dtype=np.float32)

        for n in range(n_images):
            image = padded[n]
            for i in range(h_out):
                for j in range(w_out):
                    top, left = i * s, j * s
                    window = image[top : top + k, left : left + k, :]
                    for f in range(n_filters):
                        kernel = self.kernel_matrices[:, :, :, f]
                        bias = self.biases[0, 0, 0, f]
                        output[n, i, j, f] = self.convolution_step(window, kernel, bias)

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
