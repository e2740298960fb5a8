"""Many learners on one hub: N Jupyter kernels at once, each running a scenario in its own world.

Every learner's sandbox lives inside their kernel: moto in-process, a virtual clock, a seeded
scheduler, no server and no port. So 40 learners on one JupyterHub machine share nothing but the
CPU. This module shows it the way a hub runs notebooks: it starts ``kernels`` real IPython
kernels at the same time (nbclient, as ``jupyter nbconvert --execute`` does), each executing a
small notebook that runs one scenario with its own seed, and reports for each kernel

- the history's fingerprint (SHA-256 of its JSON), the verdict and the emails sent;
- the kernel's resident memory (RSS) after the run, and its peak;
- the listening sockets the run opened in that kernel (there should be none).

The same seed in two kernels must give the same fingerprint, and the same as this process gets;
different seeds give different interleavings. ``make bench`` runs it with 8 kernels.

    python -m sandbox.bench.hub --kernels 8
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

from .. import paths
from ..errors import BadInput
from .notebooks import QUIET_KERNEL
from .shapes import Isolation, KernelRow

ROOT = paths.ROOT
#: Two copies of one order race through a read-then-write handler: which copy reads first depends on
#: the seed, so different seeds give different histories (and every one of them sends two emails).
SCENARIO = "concurrent-claims"
HANDLER = str(ROOT / "examples" / "read_then_write.py") + ":handler"
MARK = "ISOLATION-RESULT "

_RUN_CELL = '''\
import hashlib, json, os, resource, psutil
from sandbox import run_scenario

def listening():
    return {(c.laddr.ip, c.laddr.port) for c in psutil.Process().net_connections(kind="inet") if c.status == "LISTEN"}

before = listening()
result = run_scenario(SCENARIO, HANDLER, seed=SEED)
opened = sorted(listening() - before)
fingerprint = hashlib.sha256(result.history.to_json().encode()).hexdigest()[:16]
'''

_REPORT_CELL = '''\
def rss_mib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None

emails = sum(counts.get("email", 0) for counts in result.verdict.effects_per_key.values())
print(MARK + json.dumps({"seed": SEED, "pid": os.getpid(), "fingerprint": fingerprint, "verdict": str(result.status),
                         "emails": emails, "ports_opened": len(opened), "rss_mib": rss_mib(),
                         "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''


def fingerprint(scenario: str, handler: str, seed: int) -> str:
    """The history fingerprint of one run in this process (what every kernel with ``seed`` must match)."""
    from ..scenarios import run_scenario

    return hashlib.sha256(run_scenario(scenario, handler, seed=seed).history.to_json().encode()).hexdigest()[:16]


def learner_notebook(seed: int, scenario: str = SCENARIO, handler: str = HANDLER):
    """The small notebook each kernel executes: parameters, one scenario run, one line of results."""
    import nbformat

    params = f"SEED = {seed!r}\nSCENARIO = {scenario!r}\nHANDLER = {handler!r}\nMARK = {MARK!r}\n"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(params), nbformat.v4.new_code_cell(_RUN_CELL),
                nbformat.v4.new_code_cell(_REPORT_CELL)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _result_of(nb) -> KernelRow:
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            for line in str(out.get("text", "")).splitlines():
                if line.startswith(MARK):
                    return json.loads(line[len(MARK):])
    raise RuntimeError("a kernel finished without printing its result line")


async def _execute_all(notebooks: list, workdir: Path, timeout: float) -> list[float]:
    from nbclient import NotebookClient

    async def one(nb) -> float:
        started = time.perf_counter()
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", extra_arguments=QUIET_KERNEL,
                                resources={"metadata": {"path": str(workdir)}})
        await client.async_execute()
        return time.perf_counter() - started

    return list(await asyncio.gather(*(one(nb) for nb in notebooks)))


def run_kernels(seeds: Sequence[int], scenario: str = SCENARIO, handler: str = HANDLER,
                timeout: float = 300) -> Isolation:
    """Start one kernel per seed, all at once; each runs ``scenario`` with its seed. Returns every kernel's row."""
    if not seeds:
        raise BadInput("run_kernels needs at least one seed (one kernel per seed)")
    notebooks = [learner_notebook(seed, scenario, handler) for seed in seeds]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="isolation-") as tmp:
        walls = asyncio.run(_execute_all(notebooks, Path(tmp), timeout))
    wall = time.perf_counter() - started
    rows = []
    for nb, kernel_wall in zip(notebooks, walls):
        row = _result_of(nb)
        row["kernel_wall_s"] = round(kernel_wall, 2)
        row["rss_mib"] = round(row["rss_mib"], 1)
        row["peak_rss_mib"] = round(row["peak_rss_mib"], 1)
        rows.append(row)
    return {"scenario": scenario, "handler": Path(handler.rpartition(":")[0]).name, "kernels": len(rows),
            "wall_s": round(wall, 2), "rows": rows}


def problems(run: Isolation, expected: dict[int, str] | None = None) -> list[str]:
    """What breaks isolation or determinism in a run: empty when every kernel kept to itself."""
    out = []
    rows = run["rows"]
    by_seed: dict[int, set[str]] = {}
    for row in rows:
        by_seed.setdefault(row["seed"], set()).add(row["fingerprint"])
        if row["ports_opened"]:
            out.append(f"kernel {row['pid']} (seed {row['seed']}) opened {row['ports_opened']} listening port(s)")
    out += [f"seed {seed}: kernels disagree ({sorted(fps)})" for seed, fps in by_seed.items() if len(fps) > 1]
    for seed, fp in (expected or {}).items():
        if seed in by_seed and by_seed[seed] != {fp}:
            out.append(f"seed {seed}: kernels got {sorted(by_seed[seed])}, this process got {fp}")
    distinct = {next(iter(fps)) for fps in by_seed.values() if len(fps) == 1}
    if len(by_seed) > 1 and len(distinct) < 2:
        out.append(f"{len(by_seed)} seeds all gave one history: the seed did not reach the scheduler")
    if len({row["pid"] for row in rows}) != len(rows):
        out.append("two rows came from the same kernel process")
    return out


def measure(kernels: int = 8) -> Isolation:
    """The bench figure: ``kernels`` kernels at once; seeds 0..k/2-1, each twice, so every seed is repeated."""
    if kernels < 2:
        raise BadInput(f"--kernels must be at least 2 (two kernels per seed), got {kernels}")
    seeds = [i % max(1, kernels // 2) for i in range(kernels)]
    run = run_kernels(seeds)
    rss = [row["rss_mib"] for row in run["rows"]]
    run["rss_median_mib"] = round(statistics.median(rss), 1)
    run["rss_max_mib"] = max(rss)
    run["problems"] = problems(run, {seed: fingerprint(SCENARIO, HANDLER, seed) for seed in sorted(set(seeds))})
    return run


def table(run: Isolation) -> list[str]:
    from tabulate import tabulate  # not at the top: the grading child imports this module and never prints it

    lines = [f"Isolation: {run['kernels']} Jupyter kernels at once, each running {run['scenario']} with "
             f"{run['handler']} (nbclient), in {run['wall_s']} s"]
    body = [[r["seed"], r["pid"], r["fingerprint"], r["verdict"], r["emails"], r["ports_opened"],
             f"{r['rss_mib']:.1f}", f"{r['peak_rss_mib']:.1f}", f"{r['kernel_wall_s']:.2f}"] for r in run["rows"]]
    table = tabulate(body, ["seed", "pid", "history", "verdict", "emails", "ports", "RSS MiB", "peak MiB", "wall s"],
                     tablefmt="simple", colalign=("right", "right", "left", "left", *["right"] * 5),
                     disable_numparse=True)
    lines += textwrap.indent(table, "  ").splitlines()
    lines.append(f"  memory per kernel: median {run['rss_median_mib']} MiB, max {run['rss_max_mib']} MiB RSS; "
                 + ("same seed, same history in every kernel and in this process"
                    if not run["problems"] else "PROBLEMS: " + "; ".join(run["problems"])))
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.bench.hub", description=__doc__.split("\n")[0])
    p.add_argument("--kernels", type=int, default=8, help="how many kernels to run at once (default 8)")
    args = p.parse_args(argv)
    try:
        run = measure(args.kernels)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(table(run)))
    return 1 if run["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
