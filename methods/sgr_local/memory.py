"""Bytes of autograd-saved tensors, per graph, through ``torch.autograd.graph.saved_tensors_hooks``.

What local learning saves is activation memory: a module's graph is freed before the next
module's forward, so the peak is one module's graph (plus, for SGR, the double-backprop graph),
against all L modules for end-to-end backprop. Each storage counts once per graph (a ReLU output
saved by the ReLU and by the next Linear is one buffer).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


class SavedTensorMeter:
    """Counts packed storages; call :meth:`graph` around everything one graph saves."""

    def __init__(self) -> None:
        self.per_graph: list[int] = []
        self._seen: set[tuple[int, int]] = set()

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        try:
            storage = t.untyped_storage()
        except (RuntimeError, NotImplementedError):  # tensors without a plain storage
            return t
        key = (storage.data_ptr(), storage.nbytes())
        if key not in self._seen:
            self._seen.add(key)
            self.per_graph[-1] += storage.nbytes()
        return t

    @contextlib.contextmanager
    def graph(self) -> Iterator[None]:
        self.per_graph.append(0)
        self._seen = set()
        with torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t):
            yield

    @property
    def peak(self) -> int:
        return max(self.per_graph, default=0)
