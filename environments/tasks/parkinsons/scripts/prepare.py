"""Generate the parkinsons task's data: seeded synthetic disease-progression records.

Each patient is seen every six months. At each visit four clinical scores are rated (like the
four parts of the MDS-UPDRS: non-motor and motor experiences of daily living, the motor
examination, motor complications). Every patient has a baseline severity per part and a
progression rate; the rate is partly predictable from a panel of 20 blood-protein abundances
measured at the first visit (three of them matter, the rest are noise). Motor examination
scores are lower on medication; motor complications appear only in some patients, years into
the disease. Visits are sometimes missed, and ratings are noisy integers.

The task is to forecast, for patients seen at months 0, 6 and 12, their scores at months 18,
24 and 36.

The held-out patients fall in three private splits (environments/task/splits.py): ``test``, the
250 patients the task has always scored (ids 5000-5249), and ``search`` and ``select``, 125
patients each, the next ones the same generator makes (ids 5250-5499, the two interleaved by a
seeded draw), so the train and test patients, and the recorded baseline, are those of the task
before the splits.

Writes (current directory = the task copy's ``scripts/``):
  ../env/train_clinical.csv     patient_id,visit_month,on_medication,updrs_1..updrs_4
                                (full records of the training patients)
  ../env/test_clinical.csv      the same, months 0-12 only, for the held-out patients
  ../env/proteins.csv           patient_id,P00..P19 (first-visit protein panel, all patients)
  ../env/sample_submission.csv  prediction_id,rating  (ids: <patient>_<month>_updrs_<part>)
  answers.csv                   prediction_id,rating  (private, test; read by eval.py)
  search_answers.csv            prediction_id,rating  (private, search)
  select_answers.csv            prediction_id,rating  (private, select)
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

SEED = 8_675_309
N_TRAIN, N_TEST = 500, 250
N_SEARCH = N_SELECT = 125
ANSWERS = {"test": "answers.csv", "search": "search_answers.csv",
           "select": "select_answers.csv"}
MONTHS = list(range(0, 61, 6))
OBSERVED_MONTHS = (0, 6, 12)
TARGET_MONTHS = (18, 24, 36)
N_PROTEINS = 20
HERE = Path(__file__).resolve().parent
ENV = HERE.parent / "env"


def patients(rng: np.random.Generator, n: int, first_id: int):
    proteins = rng.normal(0.0, 1.0, size=(n, N_PROTEINS))
    z = proteins[:, :3]
    speed = np.exp(0.45 * z[:, 0] - 0.35 * z[:, 1] + 0.25 * z[:, 2] + rng.normal(0, 0.25, n))
    base = np.column_stack([
        rng.gamma(3.0, 2.0, n), rng.gamma(3.0, 2.2, n), rng.gamma(4.0, 5.0, n),
        np.zeros(n),
    ])
    rate = np.column_stack([0.07, 0.10, 0.28, 0.0]) * speed[:, None]  # points per month
    onset = np.where(rng.random(n) < 0.35, rng.uniform(6, 48, n), np.inf)  # complications
    medicated_from = np.where(rng.random(n) < 0.6, rng.choice([0, 6, 12, 18, 24], n), np.inf)
    records = []
    for i in range(n):
        pid = first_id + i
        for m in MONTHS:
            if m not in OBSERVED_MONTHS and rng.random() < 0.15:
                continue  # a missed visit
            on_med = m >= medicated_from[i]
            mean = base[i] + rate[i] * m
            mean[2] -= 6.0 * on_med
            mean[3] = 0.12 * max(0.0, m - onset[i]) * speed[i]
            noise = rng.normal(0.0, [1.2, 1.4, 3.0, 0.6])
            scores = np.clip(np.round(mean + noise * (mean > 0.5)), 0, None).astype(int)
            scores[3] = scores[3] if mean[3] > 0.5 else 0
            records.append((pid, m, int(on_med), *scores.tolist()))
    return records, proteins


def write(path: Path, header: list[str], rows) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def forecasts(records) -> list[tuple[str, int]]:
    """The ratings to forecast of ``records``: each part at each target month seen."""
    return [(f"{r[0]}_{r[1]}_updrs_{k}", r[2 + k]) for r in records if r[1] in TARGET_MONTHS
            for k in range(1, 5)]


def main() -> None:
    rng = np.random.default_rng(SEED)
    train, p_train = patients(rng, N_TRAIN, 1000)
    test, p_test = patients(rng, N_TEST, 5000)
    # the search and select patients are the generator's last: the patients above are byte for
    # byte those of the task before it had splits
    n_more = N_SEARCH + N_SELECT
    more, p_more = patients(rng, n_more, 5000 + N_TEST)
    search_ids = set(5000 + N_TEST + rng.permutation(n_more)[:N_SEARCH])
    splits = {"test": test, "search": [r for r in more if r[0] in search_ids],
              "select": [r for r in more if r[0] not in search_ids]}
    header = ["patient_id", "visit_month", "on_medication",
              "updrs_1", "updrs_2", "updrs_3", "updrs_4"]
    ENV.mkdir(parents=True, exist_ok=True)
    write(ENV / "train_clinical.csv", header, train)
    write(ENV / "test_clinical.csv", header, [r for r in test + more if r[1] in OBSERVED_MONTHS])
    ids = [1000 + i for i in range(N_TRAIN)] + [5000 + i for i in range(N_TEST + n_more)]
    panel = np.round(np.vstack([p_train, p_test, p_more]), 4)
    write(ENV / "proteins.csv", ["patient_id"] + [f"P{j:02d}" for j in range(N_PROTEINS)],
          [[pid, *row] for pid, row in zip(ids, panel.tolist())])
    answers = {split: forecasts(records) for split, records in splits.items()}
    for split, rows in answers.items():
        write(HERE / ANSWERS[split], ["prediction_id", "rating"], rows)
    write(ENV / "sample_submission.csv", ["prediction_id", "rating"],
          [(pid, 0) for pid, _ in answers["test"] + forecasts(more)])
    print(f"parkinsons: {N_TRAIN} train and {N_TEST + n_more} held-out patients, "
          f"{', '.join(f'{s} {len(a)}' for s, a in answers.items())} ratings to forecast, "
          f"written to {ENV}")


if __name__ == "__main__":
    main()
