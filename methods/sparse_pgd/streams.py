"""Per-sample random streams, keyed by (seed, sample index, tag).

Why not one ``torch.Generator``: an attack's outcome for a sample must not depend on which
batch it sits in, or on which other samples are still active. Only then do the sAA cascade
and its stand-alone stages agree sample by sample (the cascade can only remove survivors),
which the tests check. A ``torch.Generator`` per sample would need a Python loop per query in
Sparse-RS; instead every random number is a counter-based hash (SplitMix64's finaliser) of
``(seed, sample id, tag, slot)``, computed for the whole batch at once in numpy uint64, whose
multiplication wraps modulo 2^64 by definition.
"""

from __future__ import annotations

import numpy as np
import torch

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _mix_int(z: int) -> int:
    """SplitMix64's finaliser on a Python int (for tags and seeds)."""
    z = (z + _GOLDEN) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _mix(z: np.ndarray) -> np.ndarray:
    """The same finaliser on a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = z + np.uint64(_GOLDEN)
        z = (z ^ (z >> _S30)) * _C1
        z = (z ^ (z >> _S27)) * _C2
    return z ^ (z >> _S31)


def tag(*parts: int) -> int:
    """Fold small integers (stage code, iteration, ...) into one 64-bit stream tag."""
    h = 0x12345678
    for p in parts:
        h = _mix_int(h ^ _mix_int(int(p) & _M64))
    return h


class SampleStreams:
    """Random numbers for a batch of samples, each from its own stream.

    ``ids`` are the samples' global indices in the dataset; any subset of the batch draws the
    same numbers it would draw inside the full batch.
    """

    def __init__(self, seed: int, ids: torch.Tensor | np.ndarray) -> None:
        ids_np = np.asarray(torch.as_tensor(ids).reshape(-1).cpu().numpy(), dtype=np.uint64)
        self._base = _mix(ids_np ^ np.uint64(_mix_int(int(seed) & _M64)))

    def subset(self, index: torch.Tensor) -> SampleStreams:
        """The streams of a sub-batch (``index`` into this batch)."""
        out = SampleStreams.__new__(SampleStreams)
        out._base = self._base[np.asarray(torch.as_tensor(index).cpu().numpy())]
        return out

    def __len__(self) -> int:
        return int(self._base.size)

    def _bits(self, stream_tag: int, n: int) -> np.ndarray:
        key = _mix(self._base ^ np.uint64(stream_tag & _M64))[:, None]
        with np.errstate(over="ignore"):
            slots = np.arange(1, n + 1, dtype=np.uint64)[None, :] * np.uint64(_GOLDEN)
        return _mix(key ^ slots)

    def bits(self, stream_tag: int, n: int) -> torch.Tensor:
        """(B, n) int64 values uniform on [0, 2^32)."""
        return torch.from_numpy((self._bits(stream_tag, n) >> np.uint64(32)).astype(np.int64))

    def uniform(self, stream_tag: int, n: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """(B, n) uniform on [0, 1) (53-bit resolution before the cast)."""
        u = (self._bits(stream_tag, n) >> np.uint64(11)).astype(np.float64) / 2.0**53
        return torch.from_numpy(u).to(dtype)

    def normal(self, stream_tag: int, n: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """(B, n) standard normal by Box-Muller on two independent uniform streams."""
        u1 = ((self._bits(stream_tag, n) >> np.uint64(11)).astype(np.float64) + 1.0) / 2.0**53
        u2 = (self._bits(stream_tag ^ 0x5BD1E995, n) >> np.uint64(11)).astype(np.float64) / 2.0**53
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
        return torch.from_numpy(z).to(dtype)

    def randint(self, stream_tag: int, n: int, high: int) -> torch.Tensor:
        """(B, n) integers uniform on [0, high) (high < 2^32)."""
        return (self.bits(stream_tag, n) * int(high)) >> 32

    def random_subset(self, stream_tag: int, eligible: torch.Tensor, count: int) -> torch.Tensor:
        """(B, count) indices drawn without replacement among ``eligible`` (B, P) positions.

        Random keys sorted per row: ineligible positions get key 2 and are never picked as long
        as every row has at least ``count`` eligible positions.
        """
        keys = self.uniform(stream_tag, eligible.shape[1], dtype=torch.float64)
        keys = torch.where(eligible, keys, torch.full_like(keys, 2.0))
        return torch.topk(keys, count, dim=1, largest=False).indices
