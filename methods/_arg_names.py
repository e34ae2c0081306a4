"""The shared vocabulary of method-tool argument names, checked mechanically over the registry.

Agents read every tool's schema side by side; a name that means one thing in one tool and
another elsewhere (``k`` as a pixel budget here and a cluster count there) is a trap for them.
So a name used by two or more tools must be in :data:`SHARED`, which gives its one meaning and
the JSON types it may take; :data:`RETIRED` names (ambiguous single letters and spellings that
were unified) may not be used at all. Names used by a single tool are free, as long as they
follow :func:`pattern_problems`. ``docs/adding-a-method.md`` explains the rules in prose;
``tests/methods/test_arg_names.py`` applies :func:`violations` to every registered tool.

Pure data and logic (no pydantic, no torch): it runs on the JSON schemas the tools publish.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ArgName:
    """One shared argument name: what it means in every tool, and its allowed JSON types."""

    meaning: str
    types: frozenset[str]


def _arg(meaning: str, *types: str) -> ArgName:
    return ArgName(meaning, frozenset(types))


SHARED: dict[str, ArgName] = {
    # randomness
    "seed": _arg("the tool's main random seed (every stream it does not name separately)", "integer"),
    "seeds": _arg("independent repetitions: an int n means seeds 0..n-1, or an explicit list",
                  "integer", "array"),
    "init_seed": _arg("seed of the random initial state (images, assignments)", "integer"),
    # run length
    "steps": _arg("run length: optimiser updates or iterations of the method (not data passes)",
                  "integer", "null"),
    "epochs": _arg("run length: full passes over a fixed training set", "integer"),
    "eval_every": _arg("steps between two evaluation checks", "integer"),
    # files
    "out": _arg("path of the one file the tool writes, relative to the working directory",
                "string", "null"),
    "data": _arg("the dataset: a built-in name (listed in the description) or an .npz path",
                 "string"),
    "checkpoint": _arg("path of a torch state_dict loaded with weights_only=True", "string", "null"),
    # models and optimisers
    "model": _arg("the network: 'pkg.module:Name' of an nn.Module class/factory, or a built-in name",
                  "string", "null"),
    "model_kwargs": _arg("keyword arguments passed to `model`", "object"),
    "method": _arg("which algorithm the tool runs (a named choice)", "string"),
    "init": _arg("how the method's state is initialised (a named scheme)", "string"),
    "lr": _arg("learning rate of the optimiser", "number", "null"),
    "batch_size": _arg("samples (or sequences) per optimiser step", "integer"),
    "mc_samples": _arg("Monte-Carlo samples per stochastic estimate", "integer"),
    "width": _arg("hidden width of the network's layers", "integer"),
    "depth": _arg("number of layers (or modules) of the network", "integer"),
    # problem sizes
    "d": _arg("input dimension", "integer"),
    "n_points": _arg("number of data points", "integer"),
    "n_test": _arg("number of test samples", "integer"),
    "horizon": _arg("number of time steps of one episode or sequence of decisions", "integer"),
    "synthetic": _arg("settings of the built-in synthetic problem, used when no file is given",
                      "object", "null"),
    "size_bins": _arg("client-size bin edges", "array", "null"),
}
"""Name -> its one meaning across all tools. A name two tools share must be listed here."""

RETIRED: dict[str, str] = {
    "k": "say what is counted: l0_budget, n_clusters, top_k, ...",
    "K": "say what is counted: n_components, n_categories, ...",
    "N": "say what is counted: n_groups, n_tables, ...",
    "n": "say what is counted: n_samples, n_episodes, ...",
    "m": "say what is counted: n_points, n_resources, ...",
    "T": "horizon (decision steps) or n_bins (time bins)",
    "lam": "name the weight or probability: sgr_weight, spurious_prob, lam_kl, ...",
    "eps": "name the tolerance: linf_bound, norm_eps, kl_tolerance, ...",
    "iters": "steps",
    "batch": "batch_size",
    "kmeans_seed": "seed",
    "random_state": "seed",
    "rng": "seed",
    "labels_path": "data",
}
"""Name -> what to use instead; these names may not appear in any tool's arguments."""


def json_types(prop: Mapping[str, Any]) -> set[str]:
    """The JSON types one schema property admits (``anyOf`` unions flattened; a nested model,
    reached through ``$ref``, counts as ``object``)."""
    if "anyOf" in prop:
        return set().union(*(json_types(p) for p in prop["anyOf"]))
    if "$ref" in prop or "allOf" in prop:
        return {"object"}
    kind = prop.get("type")
    if kind is None:
        return {"object"} if "properties" in prop else set()
    return set(kind) if isinstance(kind, list) else {kind}


def pattern_problems(name: str, types: set[str]) -> list[str]:
    """Rules every name follows, shared or not: seeds are integers, seed lists are arrays."""
    problems = []
    if name.endswith("_seed") and not types <= {"integer", "null"}:
        problems.append(f"{name}: a *_seed is an integer, got {sorted(types)}")
    if name.endswith("_seeds") and not types <= {"array", "integer", "null"}:
        problems.append(f"{name}: a *_seeds is a list of seeds, got {sorted(types)}")
    return problems


def violations(schemas: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Every breach of the conventions over ``{tool name: its args JSON schema}``; empty = ok."""
    users: dict[str, list[str]] = {}
    problems: list[str] = []
    for tool, schema in schemas.items():
        for name, prop in schema.get("properties", {}).items():
            users.setdefault(name, []).append(tool)
            types = json_types(prop)
            if name in RETIRED:
                problems.append(f"{tool}.{name}: retired name; instead: {RETIRED[name]}")
            problems += [f"{tool}.{p}" for p in pattern_problems(name, types)]
            shared = SHARED.get(name)
            if shared is not None and not types <= shared.types:
                problems.append(f"{tool}.{name}: types {sorted(types)} outside "
                                f"{sorted(shared.types)} ({shared.meaning})")
    for name, tools in sorted(users.items()):
        if len(tools) > 1 and name not in SHARED:
            problems.append(f"{name}: used by {', '.join(tools)} but has no shared meaning in SHARED")
    return problems


def unused_shared(schemas: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """Shared names that no tool uses any more (the table should not grow stale)."""
    used: Iterable[str] = (n for s in schemas.values() for n in s.get("properties", {}))
    return set(SHARED) - set(used)
