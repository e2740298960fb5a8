"""Fingerprints of what every scenario produces, to prove a refactor changed nothing.

For every scenario x seeds 0-9 x the two shipped handlers (naive and idempotent), the
SHA-256 of the history JSON, of the CLI's JSON report and (for a slice) of the timeline
PNG. ``tests/golden/fingerprints.json`` holds the reference; ``test_golden.py`` compares.

    python tests/golden_runs.py --write          # regenerate (say why in the commit)
    python tests/golden_runs.py --check --png all  # compare every PNG too (slow: about 2 min)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FILE = HERE / "golden" / "fingerprints.json"
HANDLERS = {"naive": "naive_email.py", "idempotent": "idempotent.py"}
SEEDS = range(10)
PNG_SEEDS = (0,)  # the slice the test suite draws; --png all draws every seed


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def fingerprint(scenario: str, handler: str, seed: int, png: bool) -> dict[str, str]:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from sandbox import run_scenario

    result = run_scenario(scenario, f"{ROOT / 'examples' / HANDLERS[handler]}:handler", seed=seed)
    out = {"history": _sha(result.history.to_json().encode()),
           "report": _sha(json.dumps(result.report(), sort_keys=True).encode())}
    if png:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "t.png"
            result.save_plot(path)
            out["png"] = _sha(path.read_bytes())
    return out


def key(scenario: str, handler: str, seed: int) -> str:
    return f"{scenario}|{handler}|{seed}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--write", action="store_true")
    p.add_argument("--check", action="store_true")
    p.add_argument("--png", choices=("slice", "all"), default="slice")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from sandbox import SCENARIOS

    png_seeds = set(SEEDS) if args.png == "all" or args.write else set(PNG_SEEDS)
    got = {key(s, h, seed): fingerprint(s, h, seed, seed in png_seeds)
           for s in SCENARIOS for h in HANDLERS for seed in SEEDS}
    if args.write:
        FILE.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(got)} fingerprints to {FILE}")
        return 0
    want = json.loads(FILE.read_text())
    bad = [k for k, v in got.items() if any(want.get(k, {}).get(f) != x for f, x in v.items())]
    missing = sorted(set(want) - set(got))
    print(f"{len(got)} runs compared; {len(bad)} differ; {len(missing)} missing")
    for k in bad[:20] + missing[:20]:
        print("  ", k, want.get(k), got.get(k))
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main())
