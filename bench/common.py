"""What every speed benchmark shares: medians of repeated runs, a table on stdout, and the same
figures as JSON under bench/results/ with the machine they were measured on."""
from __future__ import annotations

import json
import os
import platform
import statistics
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the checkout the benchmarks measure
RESULTS = ROOT / "bench" / "results"


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


# The instruction families that decide which kernels CTranslate2 and oneDNN pick, and so the
# words a model writes (int8 is exact only with a VNNI flavour).
TEXT_FLAGS = ("avx", "avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")


def cpu() -> str:
    """The CPU as a result needs to name it: model, family and the instruction families that
    change the text ("AMD EPYC, family 25: avx avx2"), or the Features line of a CPU that is not
    x86. A result whose words depend on the CPU is worthless without it."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.machine()
    if "flags" in fields:
        present = set(fields["flags"].split())
        kinds = " ".join(flag for flag in TEXT_FLAGS if flag in present) or "no AVX"
        return f"{fields.get('model name', '?')}, family {fields.get('cpu family', '?')}: {kinds}"
    return f"{platform.machine()} part {fields.get('CPU part', '?')}: {fields.get('Features', '')}"


def machine() -> dict:
    return {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(), "cpu": cpu(),
            "system": f"{platform.system()} {platform.release()}", "python": platform.python_version()}


def table(headers: list[str], rows: list[list]) -> str:
    def cell(value) -> str:
        if isinstance(value, float):
            return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
        return str(value)

    cells = [headers] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def report(name: str, headers: list[str], rows: list[list], extra: dict | None = None,
           write: bool = True) -> None:
    """Print the table and write bench/results/NAME.json (unless `write` is off: a smoke run)."""
    print(table(headers, rows), flush=True)
    if not write:
        return
    RESULTS.mkdir(exist_ok=True)
    document = {"benchmark": name, "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
                "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
                "columns": headers, "rows": rows, **(extra or {})}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(document, indent=2, default=str) + "\n")
    print(f"written {path.relative_to(RESULTS.parent.parent)}")
