"""Reports over run folders, one job per module (reading run folders is all they do):

- :mod:`~environments.reports.records`: a run as a report sees it (:class:`RunRecord`), the
  row it belongs to (:class:`RowKey`) and what kind of attempt it is;
- :mod:`~environments.reports.steps`: per-step time and tokens from the trace and call log;
- :mod:`~environments.reports.table`: rows, comparisons, and their text/Markdown/JSON;
- :mod:`~environments.reports.curves`: improvement and anytime curves (one mean over runs);
- :mod:`~environments.reports.plots`: PNGs of the same numbers;
- :mod:`~environments.reports.family`: a run and its forks compared.
"""

from environments.reports.curves import (
    AnytimePoint,
    Axis,
    CurvePoint,
    anytime_curve,
    anytime_curves,
    anytime_json,
    improvement_curves,
    mean_at,
    trajectory,
)
from environments.reports.plots import plot_notes, write_plots
from environments.reports.records import (
    NO_TOOLS,
    SHARES_MODELS,
    UNISOLATED,
    Attempt,
    RowKey,
    RunRecord,
    find_run_dirs,
    load_run,
    load_runs,
    lost_combinations,
    matches,
    model_label,
    offered_method_tools,
    parse_where,
    step_value,
)
from environments.reports.steps import read_step_times, read_step_tokens
from environments.reports.table import (
    COLUMNS,
    FAILURE_REASONS,
    Comparison,
    Row,
    build_report,
    compare,
    comparison_markdown,
    dump,
    md_table,
    pct,
    rate,
    report_json,
    row_cells,
    summarise_runs,
    to_markdown,
)

__all__ = [
    "COLUMNS", "FAILURE_REASONS", "NO_TOOLS", "SHARES_MODELS", "UNISOLATED", "AnytimePoint", "Attempt",
    "Axis", "Comparison", "CurvePoint", "Row", "RowKey", "RunRecord", "anytime_curve",
    "anytime_curves", "anytime_json", "build_report", "compare", "comparison_markdown", "dump",
    "find_run_dirs", "improvement_curves", "load_run", "load_runs", "lost_combinations", "matches",
    "md_table", "mean_at", "model_label", "offered_method_tools", "parse_where", "pct",
    "plot_notes", "rate", "read_step_times", "read_step_tokens", "report_json", "row_cells",
    "step_value", "summarise_runs", "to_markdown", "trajectory", "write_plots",
]
