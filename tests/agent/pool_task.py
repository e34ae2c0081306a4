"""A tiny task with splits and two declared knobs, for the research pool's tests.

``train.py`` has ``A`` and ``B`` (values 1..3 declared in ``[[hparams]]``) and writes
``result.txt`` = ``2A+B  A-B  10A+B`` (search, select, test): search rewards both knobs, select
only A over B, so the best on search (A=3, B=2: A=B=3 fails on purpose) is not the best of the
top three on select (A=3, B=1). ``SLEEP`` (not a knob) makes each run take that long (the
resume test's nodes in flight). It runs in well under a second on the local sandbox.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write_task
from tests.split_task import SPLIT_EVAL, SPLIT_TOML

HPARAMS = """
[[hparams]]
file = "train.py"
name = "A"
values = [1, 2, 3]

[[hparams]]
file = "train.py"
name = "B"
values = [1, 2, 3]
"""

TRAIN = """import time
A = 1
B = 1
time.sleep({sleep})
if A == 3 and B == 3:
    raise SystemExit("A = B = 3 fails on purpose")
open("result.txt", "w").write(f"{{2 * A + B}} {{A - B}} {{10 * A + B}}")
print("validation total", 2 * A + B)
"""


def write_pool_task(root: Path, *, splits: bool = True, sleep: float = 0.0) -> Path:
    toml = SPLIT_TOML if splits else SPLIT_TOML.split("[splits.search]")[0]
    task = write_task(root, toml=toml + HPARAMS, eval_body=SPLIT_EVAL)
    for i, split in enumerate(("search", "select", "test")):
        (task / "scripts" / f"{split}.key").write_text(str(i))
    (task / "env" / "train.py").write_text(TRAIN.format(sleep=sleep))
    return task
