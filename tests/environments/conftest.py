"""Fixtures shared by the environments tests."""

from __future__ import annotations

import pytest

from environments.scoring import score_scratch


@pytest.fixture
def scorer_stats(monkeypatch):
    """What each ``score_steps`` call's StepScorer did (its ``stats`` when it closed)."""
    seen = []
    original = score_scratch.StepScorer.close

    def spy(self):
        if any(self.stats.values()):
            seen.append(dict(self.stats))
        original(self)

    monkeypatch.setattr(score_scratch.StepScorer, "close", spy)
    return seen
