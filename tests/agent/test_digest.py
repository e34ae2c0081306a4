"""agent/digest.py: a folded log rebuilds exactly; older-step gists read the real observations."""

from __future__ import annotations

import random
import re

from agent import digest
from agent.llm_actions import LLMActions
from environments.acting.low_level import LINES_HEADER, LOW_LEVEL_ACTIONS, diff_facts
from environments.acting.observation import CUT_MARK, ActionFacts, make_observation
from tests.agent.helpers import episode, react, write_replies

_HEAD = re.compile(r'^\[(\d+) lines of the form "(.*)"(; each row below gives one line\'s \{\} values:)?\]$')
_REPEAT = re.compile(r"^\[the next line (\d+) times:\]$")
_SLOT = re.compile(r"\{(?:(\d+)\.\.(\d+)(?: step (-?\d+))?)?\}")


def unfold(text: str) -> str:
    """The lines a folded text stands for, read from nothing but the folded text."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        if m := _REPEAT.match(lines[i]):
            out += [lines[i + 1]] * int(m.group(1))
            i += 2
            continue
        if not (m := _HEAD.match(lines[i])):
            out.append(lines[i])
            i += 1
            continue
        count, template, has_rows = int(m.group(1)), m.group(2), bool(m.group(3))
        rows = lines[i + 1 : i + 1 + count] if has_rows else [""] * count
        for first, last, step in _SLOT.findall(template):  # a counter's range says where it ends
            assert not first or int(first) + (count - 1) * int(step or 1) == int(last), template
        for r, row in enumerate(rows):
            values = iter(row.split(" ")) if has_rows else iter(())

            def fill(slot: re.Match, r: int = r, values=values) -> str:
                if slot.group(1) is None:
                    return next(values)
                return str(int(slot.group(1)) + r * int(slot.group(3) or 1))

            out.append(_SLOT.sub(fill, template))
        i += 1 + (count if has_rows else 0)
    return "\n".join(out)


def _random_output(rng: random.Random) -> str:
    """Program output: logs with counters and metrics, repeats, prose, odd numbers, blank lines."""
    blocks = []
    for _ in range(rng.randint(1, 6)):
        kind, n = rng.choice(["log", "steps", "dicts", "same", "prose", "odd", "short"]), rng.randint(1, 40)
        if kind == "log":
            total = rng.randint(n, 99)
            blocks += [f"epoch {e + 1}/{total}: loss {rng.random():.4f}, acc {rng.random():.3f}"
                       for e in range(n)]
        elif kind == "steps":
            start, step = rng.randint(0, 1000), rng.choice([1, 10, 100, -1, -50])
            blocks += [f"  step {start + k * step}\tlr 1e-05 grad -{rng.randint(0, 9)}.5" for k in range(n)]
        elif kind == "dicts":  # Hugging Face Trainer's log lines
            blocks += [f"[INFO] {{'loss': {rng.random():.4f}, 'learning_rate': {rng.choice(['5e-05', '4.5e-05'])}, "
                       f"'epoch': {k / 10}}}" for k in range(n)]
        elif kind == "same":
            blocks += [rng.choice(["warning: slow", "iter 3 lr 0.1", ""])] * n
        elif kind == "prose":
            blocks += [" ".join(rng.choice(["the", "model", "x_1", "{a}", "{}", "{1..3}", "v2.1.0", "[ok]", "7"])
                                for _ in range(6)) for _ in range(n)]
        elif kind == "odd":
            blocks += [f"{rng.choice(['007', '-3', '+4', '1.', '.5', '2e3', '10%'])} items" for _ in range(n)]
        else:
            blocks += [f"row {k}" for k in range(rng.randint(1, 4))]
    return "\n".join(blocks)


def test_folding_loses_nothing_and_shrinks_logs():
    rng = random.Random(7)
    folded_any, before, after = 0, 0, 0
    for _ in range(400):
        text = _random_output(rng)
        folded = digest.fold_repeats(text)
        assert unfold(folded) == text
        folded_any += folded != text
        before, after = before + len(text), after + len(folded)
    assert folded_any > 200 and after < 0.8 * before


def test_a_training_log_folds_to_its_template_and_numbers():
    log = "Loading data\n" + "\n".join(f"epoch {e}/30: loss {1 / e:.4f}, val_acc {e / 40:.3f}" for e in range(1, 31))
    folded = digest.fold_repeats(log)
    assert folded.splitlines()[:3] == [
        "Loading data",
        "[30 lines of the form \"epoch {1..30}/30: loss {}, val_acc {}\"; each row below gives one line's {} values:]",
        "1.0000 0.025",
    ]
    assert folded.splitlines()[-1] == "0.0333 0.750" and len(folded) < 0.5 * len(log)


def test_short_runs_code_and_zero_are_left_as_they_are():
    few = "\n".join(f"epoch {e}: loss 0.{e}" for e in range(4))
    code = "\n".join(f"x_{i} = np.dot(w_{i}, x_{i - 1}) + b_{i}" for i in range(1, 30))
    braces = "\n".join(f"set() == {{}} at step {i}, {{{i}}}" for i in range(30))  # would read as slots
    for text in (few, code, braces, ""):
        assert digest.fold_repeats(text) == text
    log = "\n".join(f"epoch {e}: loss 0.{e}" for e in range(9))
    assert digest.fold_repeats(log, min_run=0) == log and digest.fold_repeats(log) != log


def test_the_rules_name_built_in_actions():
    names = {s.name for s in [*LOW_LEVEL_ACTIONS, *LLMActions(None, None).specs()]}
    assert set(digest._GISTS) <= names and digest.PROGRAM_OUTPUT <= names


TRAIN = "for e in range(1, 21):\n    print(f'epoch {e}/20: loss {1 / e:.4f}, validation accuracy {e / 25:.4f}')\n"


def test_older_lines_say_what_each_real_observation_reports(tiny_task, tmp_path):
    """Observations made by the real actions (a scripted model drives the agent and edits; no
    observation is long enough to be summarised, which would take a reply)."""
    edit = {"script_name": "train.py", "edit_instruction": "print one more line", "save_name": "train.py"}
    replies = [react("Write File", {"file_name": "train.py", "content": TRAIN}),
               react("Execute Script", {"script_name": "train.py"}),
               react("Edit Script (AI)", edit),
               "```python\n" + TRAIN + "print('done')\n```",
               react("Edit Script (AI)", edit),
               "```python\n" + TRAIN + "print('done')\n```",
               react("Inspect Script Lines", {"script_name": "train.py", "start_line_number": 1,
                                              "end_line_number": 2}),
               react("Write File", {"file_name": "bad.py", "content": "print('start')\nraise ValueError('no data')\n"}),
               react("Execute Script", {"script_name": "bad.py"}),
               react("Execute Script", {"script_name": "missing.py"}),
               react("Final Answer", {"final_answer": "done"})]
    run, _, meta = episode(tiny_task, tmp_path, write_replies(tmp_path / "r.txt", replies))
    assert meta.status == "finished"
    steps = run.steps()
    gists = [digest.gist(s.action, s.observation, s.observation, 100, s.data) for s in steps]
    # the same steps as a trace recorded before the actions kept their facts: read from the wording
    old = [digest.gist(s.action, s.observation, s.observation, 100) for s in steps]
    assert steps[1].data["outcome"] == "ok" and steps[4].data["lines_total"] == 3  # facts, in the trace
    assert steps[0].data == {"shown_bytes": len(TRAIN)} and steps[6].data["exit_code"] == 1
    assert steps[2].data == {"added": 1, "removed": 0} and steps[3].data == {"added": 0, "removed": 0}
    assert gists[1] == old[1] == "epoch 20/20: loss 0.0500, validation accuracy 0.8000"
    assert gists[2] == old[2] == "diff +1 -0 lines" and gists[3] == old[3] == "no change"
    assert gists[4] == old[4] == "shown; the file has 3 lines"
    assert gists[6].startswith("exit code 1: ") and gists[6].endswith("ValueError: no data")
    assert old[6].startswith("The script exited with code 1. ") and old[6].endswith("ValueError: no data")
    assert steps[7].data is None  # an error: no facts
    assert "missing.py" in gists[7] and gists[7] == digest.generic_gist(steps[7].observation, 100)
    assert gists[0] == digest.generic_gist(steps[0].observation, 100)  # no rule: first and last lines
    log = (run.path / "research_log.md").read_text()  # the research log's lines use the same gists
    assert "| epoch 19/20: loss 0.0526, validation accuracy 0.7600 | epoch 20/20: loss 0.0500, " in log
    assert "\n3. Edit Script (AI)(train.py, print one more line, train.py) -> diff +1 -0 lines\n" in log


def test_the_gist_reads_the_facts_not_the_wording():
    """Facts come from the action, so a reworded or capped observation tells the same."""
    diff = "--- a/t.py\n+++ b/t.py\n@@ -1,2 +1,3 @@\n-x = 1\n+x = 2\n+++y = 3\n" + "".join(f"+z{i} = {i}\n" for i in range(300))
    obs = make_observation("Any wording at all:\n" + diff, 500, facts=diff_facts(diff))
    assert obs.truncated and obs.data == {"added": 302, "removed": 1, "truncated": True}
    assert digest.gist("Edit Script (AI)", obs.text, obs.text, 100, obs.data) == "diff +302 -1 lines (the diff shown was cut)"
    run = ActionFacts(outcome="timeout", exit_code=-9, output_tail="epoch 3: loss 0.5").record()
    assert digest.gist("Execute Script", "reworded", "reworded", 100, run) == "killed at its time limit: epoch 3: loss 0.5"
    silent = ActionFacts(outcome="ok", exit_code=0, output_tail="").record()
    assert digest.gist("Execute Script", "x", "x", 100, silent) == "printed nothing"


def test_an_older_traces_wording_still_digests():
    """Observations as a trace recorded before the facts holds them (data None)."""
    ran = "The script has been executed. Here is the output:\nepoch 1: 0.5\nepoch 2: acc 0.7"
    cut = ("The edited file is saved to t.py. Here is the diff, please check if the edit is correct and "
           "desirable:\n\n--- a/t.py\n+++ b/t.py\n@@ -1 +1 @@\n-a\n+b\n\n[... 40 characters (3 lines) "
           f"{CUT_MARK} ...]\n\n+c")
    assert digest.gist("Execute Script", ran, ran, 100) == "epoch 1: 0.5 | epoch 2: acc 0.7"
    assert digest.gist("Edit Script (AI)", cut, cut, 100) == "diff +2 -1 lines (the diff shown was cut)"
    lines = LINES_HEADER.format(count=12) + "\n\nimport os"
    assert digest.gist("Inspect Script Lines", lines, lines, 100) == "shown; the file has 12 lines"
