import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def example(name: str, func: str = "handler") -> str:
    """A handler spec for one of the example handlers."""
    return f"{EXAMPLES / name}:{func}"
