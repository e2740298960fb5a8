"""Where the repository's folders are, from the package's own place (a source checkout, as ``make setup`` makes)."""
from pathlib import Path

#: ``sandbox/``, the package itself.
PACKAGE = Path(__file__).resolve().parent
#: The repository: ``notebooks/``, ``examples/``, ``exercises/`` and ``solutions/`` sit beside the package.
ROOT = PACKAGE.parent
