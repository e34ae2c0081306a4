"""Numbers and words for people: one spelling of a metric value, of an improvement, of a count.

A metric shown as ``45,377`` in one place, ``4.538e+04`` in another and ``45224`` in a third, or
an improvement as ``+20%`` here and ``+19.6%`` there, reads as three results. Every place that
prints one for a person calls these (``--json`` keeps full precision).
"""

from __future__ import annotations

TRACEBACK = "Traceback (most recent call last):"


def metric(x: float | None) -> str:
    """A measurement: four significant digits, thousands without an exponent (``45,440``, not
    ``4.544e+04``); ``n/a`` for none."""
    if x is None:
        return "n/a"
    if abs(x) >= 1e4:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def gain(x: float | None, none: str = "n/a") -> str:
    """A relative improvement, signed, one decimal of a percent (``+19.6%``)."""
    return none if x is None else f"{x:+.1%}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 run``, ``2 runs``, ``0 steps`` (``many`` for an irregular plural)."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def failure_text(detail: str, chars: int = 300) -> str:
    """A failure's detail as one line, never a raw traceback: the text before a traceback, else
    the traceback's last line (the exception), cut at ``chars``."""
    head, _, tail = detail.partition(TRACEBACK)
    lines = [line.strip() for line in head.splitlines() if line.strip()]
    if not lines:
        lines = [line.strip() for line in tail.splitlines() if line.strip()][-1:]
    text = " ".join(lines)
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"
