"""Fixtures the method tests share."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def one_thread():
    """Torch on one thread: the method tests compare numbers run to run, and on this 2-core
    machine several test processes share the cores (more threads only contend). A module opts
    in with ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    import torch

    torch.set_num_threads(1)
