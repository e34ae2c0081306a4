"""Every hostile case, on every backend that claims to contain it."""

from __future__ import annotations

import pytest

from sandbox import SandboxLimits
from tests.fast_set import representatives
from tests.sandbox.backends import BACKEND_PARAMS, make_sandbox
from tests.sandbox.hostile import (
    CASES,
    LoopbackListener,
    make_context,
    run_case,
    secret_env_name,
)


@pytest.fixture
def listener():
    server = LoopbackListener()
    yield server
    server.close()


TIMED_OUT = {"fork-bomb", "busy-loop-past-timeout"}  # each waits out its timeout (~2 s)
PAIRS = [pytest.param(b.values[0], case, id=f"{b.id}-{case.name}", marks=b.marks)
         for case in CASES for b in BACKEND_PARAMS]


def _fast(pair_id: str) -> bool:
    """The timed-out cases run on local-bwrap and docker in the fast set, on all in the slow."""
    return not pair_id.endswith(tuple(TIMED_OUT)) or pair_id.startswith(("local-bwrap-", "docker-"))


@pytest.mark.parametrize(("backend", "case"), representatives(PAIRS, _fast))
def test_hostile_script_is_contained(backend, case, tmp_path, listener, monkeypatch):
    ctx = make_context(tmp_path, listener.port)
    (ctx.host_dir / "secret.txt").write_text(ctx.secret)
    monkeypatch.setenv(secret_env_name(), ctx.secret)
    monkeypatch.setenv("HOME", str(ctx.host_dir))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    limits = SandboxLimits(**{"timeout": 30, **case.limits})
    with make_sandbox(backend, workspace, limits) as sb:
        isolation = sb.describe()
        missing = [n for n in case.needs if not getattr(isolation, n)]
        if missing and backend == "local-plain":
            # The plain fallback says what it cannot contain; the test checks it says so.
            assert isolation.warnings
            return
        assert not missing, f"{backend} does not isolate {missing}"
        result = run_case(sb, case, ctx)
    (ctx.host_dir / "secret.txt").unlink()
    case.check(result, ctx)
    assert not listener.connected
