import os


def _column(path):
    with open(path) as f:
        rows = f.read().split()[1:]
    return [float(r.split(",")[1]) for r in rows]


def get_score(submission_folder="../env"):
    predicted = _column(os.path.join(submission_folder, "submission.csv"))
    truth = _column(os.path.join(os.path.dirname(__file__), "answer.csv"))
    return sum(abs(p - t) for p, t in zip(predicted, truth)) / len(truth)
