"""Reading an MLAgentBench-style ``submission.csv`` against a task's hidden answers.

The CSV tasks (house-price, imdb, ogbn-arxiv, spaceship-titanic, parkinsons, digits) each score
one predicted value per test row against hidden answers of the same shape. What differs between
them is the two column names, how a cell is read and the metric; the checks (the file is there,
it has the columns, every cell reads, no test row is left out) are one contract, so they live
here once and every such task fails the same way. A task's ``scripts/eval.py`` runs in the
sandbox's trusted phase, where only ``methods.*`` is importable besides the task folder: this is
why the helper is a ``methods`` module and not part of ``environments/``.

A missing submission is a :class:`FileNotFoundError` (scored ``no_submission``); anything
malformed or incomplete is a :class:`ValueError` that names the file, the row and the reason.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")

SUBMISSION = "submission.csv"


def as_int(cell: str) -> int:
    """An integer cell, also when a writer spelled it as a float (``3.0``)."""
    return int(float(cell))


def as_id(cell: str) -> str:
    """A numeric id as a canonical string key (``"0017"``, ``"17.0"`` and ``"17"`` agree)."""
    return str(as_int(cell))


def as_key(cell: str) -> str:
    """A textual id key, surrounding blanks ignored."""
    return cell.strip()


def finite_float(cell: str) -> float:
    """A real number; NaN and infinities would poison a mean, so they are refused."""
    value = float(cell)
    if not math.isfinite(value):
        raise ValueError(f"non-finite value {cell!r}")
    return value


def binary_label(cell: str) -> int:
    """A class label that must be 0 or 1."""
    label = as_int(cell)
    if label not in (0, 1):
        raise ValueError(f"label must be 0 or 1, got {label}")
    return label


_TRUE, _FALSE = {"true", "1", "1.0"}, {"false", "0", "0.0"}


def as_bool(cell: str) -> bool:
    """``True``/``False`` in any case, or ``1``/``0``."""
    value = (cell or "").strip().lower()
    if value not in _TRUE | _FALSE:
        raise ValueError(f"must be True or False, got {cell!r}")
    return value in _TRUE


def read_column(path: Path, key: str, value: str, parse: Callable[[str], V],
                key_of: Callable[[str], K]) -> dict[K, V]:
    """``{key_of(row[key]): parse(row[value])}`` over the rows of the CSV file ``path``."""
    if not path.exists():
        raise FileNotFoundError(f"{path.name} not found; run train.py to write it")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if not {key, value} <= set(reader.fieldnames or []):
            raise ValueError(f"{path.name} must have the columns {key},{value}")
        out: dict[K, V] = {}
        for row in reader:
            try:
                out[key_of(row[key])] = parse(row[value])
            except (TypeError, ValueError, AttributeError) as err:
                raise ValueError(f"{path.name}: unreadable {value} for {key} {row.get(key)!r} "
                                 f"({err})") from err
        return out


def read_scored(answers: Path, submission_folder: str | Path, key: str, value: str,
                parse: Callable[[str], V], key_of: Callable[[str], K], noun: str,
                ) -> tuple[dict[K, V], dict[K, V]]:
    """The hidden answers and the workspace's ``submission.csv``, read alike; a submission that
    leaves out any test row is refused (a partial one would be scored on an easier subset)."""
    truth = read_column(answers, key, value, parse, key_of)
    predicted = read_column(Path(submission_folder) / SUBMISSION, key, value, parse, key_of)
    missing = set(truth) - set(predicted)
    if missing:
        raise ValueError(f"{SUBMISSION} lacks predictions for {len(missing)} {noun}, e.g. "
                         f"{min(missing)!r}")
    return truth, predicted


def accuracy(truth: Mapping[K, V], predicted: Mapping[K, V]) -> float:
    """The fraction of test rows predicted exactly (extra predicted rows are ignored)."""
    return sum(predicted[k] == v for k, v in truth.items()) / len(truth)
