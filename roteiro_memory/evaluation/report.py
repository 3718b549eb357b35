"""Reporting a result: the terminal table, JSON, and the recall@k plot.

Reporting never computes: every number comes from the result mapping.
matplotlib is imported only when a plot is asked for.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from roteiro_memory.evaluation.metrics import as_float
from roteiro_memory.terminal import printable

__all__ = ["PLOT_FORMAT", "TABLE_COLUMNS", "plot", "plot_refusal", "table", "to_json"]

TABLE_COLUMNS: tuple[str, ...] = (
    "recall_any@1",
    "recall_any@3",
    "recall_any@5",
    "recall_any@10",
    "recall_all@10",
    "evidence_recall@5",
    "ndcg@10",
    "mrr@10",
    "empty",
    "noise@5",
    "duplicates@5",
)
PLOT_INSTALL = "pip install 'roteiro-memory[eval]'"
NEEDS_MATPLOTLIB = f"--plot needs matplotlib: {PLOT_INSTALL}"
"""Why a plot cannot be drawn here, said before running or at drawing."""
PLOT_FORMAT = "png"
"""The one format a plot is drawn in: its file is named ``*.png`` (or has
no suffix).  PNG's metadata is what keeps the bytes the same run to run."""


def plot_refusal(path: Path) -> str | None:
    """Why :func:`plot` cannot draw to ``path`` (another format, or no
    matplotlib), said before anything runs; None when it can."""
    suffix = path.suffix[1:]
    if suffix and suffix.lower() != PLOT_FORMAT:
        return (
            f"--plot {path}: cannot draw a {suffix!r} file; the plot is drawn as PNG only, "
            f"so give a FILE.{PLOT_FORMAT}"
        )
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return NEEDS_MATPLOTLIB
    return None


def to_json(result: dict[str, Any]) -> str:
    """The result as sorted, indented JSON ending in a newline: byte-stable."""
    return json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _cell(value: object) -> str:
    number = as_float(value)
    return "-" if number is None else f"{number:.3f}"


def table(result: dict[str, Any]) -> str:
    """One row per arm and style, the columns of :data:`TABLE_COLUMNS` and
    the median latency when the result has timing."""
    data = result["dataset"]
    lines = [
        f"dataset {data['name']} ({data['licence']}), sample {data['sample']}, seed "
        f"{data['seed']}, {data['haystacks']} haystack(s), {data['queries']} queries"
        + (f", sha256 {data['source']['sha256']}" if data["source"] else ""),
        f"search tokenizer {result['search']['tokenizer']}, "
        f"BM25 k1 {result['search']['k1']} b {result['search']['b']}"
        + (f", scoring {result['search']['scoring']}" if "scoring" in result["search"] else ""),
    ]
    if data["excluded"]:
        lines.append(
            "excluded: " + ", ".join(f"{why} {count}" for why, count in data["excluded"].items())
        )
    timing = result.get("timing")
    head = [
        "arm",
        "style",
        "n",
        *(
            c.replace("recall_", "").replace("evidence_", "ev_").replace("duplicates", "dup")
            for c in TABLE_COLUMNS
        ),
    ]
    if timing:
        head.append("ms")
    rows = [head]
    for arm, styles in result["arms"].items():
        for style, values in styles.items():
            row = [
                arm,
                style,
                str(values["queries"]),
                *(_cell(values.get(c)) for c in TABLE_COLUMNS),
            ]
            if timing:
                row.append(_cell(timing[arm][style]["median_ms"]))
            rows.append(row)
    # A style is the dataset's own text (a question type): a line break or
    # an escape sequence in it is shown escaped, never sent to the terminal.
    rows = [[printable(cell, one_line=True) for cell in row] for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for row in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any]) -> bytes:
    """recall_any@k against k, one line per arm, over every query, drawn as
    PNG in memory: the caller writes it whole (a caller refuses another file
    first: :func:`plot_refusal`)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit(NEEDS_MATPLOTLIB) from None
    ks = result["ks"]
    figure, axes = plt.subplots(figsize=(6, 4))
    for arm, styles in result["arms"].items():
        overall = styles.get("all", {})
        axes.plot(
            ks, [as_float(overall.get(f"recall_any@{k}")) or 0.0 for k in ks], marker="o", label=arm
        )
    axes.set_xlabel("k")
    axes.set_ylabel("recall_any@k")
    axes.set_ylim(0, 1.05)
    axes.set_xticks(ks)
    axes.set_title(f"{result['dataset']['name']}: recall_any@k per arm")
    axes.legend()
    figure.tight_layout()
    # Drawn in memory, then written by the caller: a failing write (a full
    # disk) is then an OSError there, where savefig's own writing let it pass.
    drawn = io.BytesIO()
    figure.savefig(drawn, format=PLOT_FORMAT, metadata={"Software": None})
    plt.close(figure)
    return drawn.getvalue()
