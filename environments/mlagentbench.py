"""What labcoat knows of MLAgentBench's own tasks, so their folders need no ``task.toml``.

MLAgentBench keeps a task's metric and direction in its code (``scripts/eval.py`` returns a
number; its benchmark runner knows whether lower is better). A folder without ``task.toml``
named like one of MLAgentBench's ``benchmarks/<task>/`` gets these defaults; a ``task.toml``
overrides them. Source: each task's ``eval.py`` in MLAgentBench (``get_score``'s return value).
"""

from __future__ import annotations

# folder name -> task.toml defaults
DEFAULTS: dict[str, dict[str, str]] = {
    "vectorization": {"metric": "runtime_seconds", "direction": "lower"},
    "llama-inference": {"metric": "tokens_per_second", "direction": "higher"},
    "house-price": {"metric": "mae", "direction": "lower"},
    "spaceship-titanic": {"metric": "accuracy", "direction": "higher"},
    "imdb": {"metric": "accuracy", "direction": "higher"},
    "ogbn-arxiv": {"metric": "accuracy", "direction": "higher"},
    "cifar10": {"metric": "accuracy", "direction": "higher"},
    "CLRS": {"metric": "accuracy", "direction": "higher"},
    "babylm": {"metric": "perplexity", "direction": "lower"},
    "fathomnet": {"metric": "map_at_20", "direction": "higher"},
    "feedback": {"metric": "mcrmse", "direction": "lower"},
    "identify-contrails": {"metric": "dice", "direction": "higher"},
    "amp-parkinsons-disease-progression-prediction": {"metric": "smape", "direction": "lower"},
}


def defaults_for(folder_name: str) -> dict[str, str]:
    """The defaults for an MLAgentBench task folder named ``folder_name`` (empty if unknown)."""
    return dict(DEFAULTS.get(folder_name, {}))
