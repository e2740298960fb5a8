"""``python -m sandbox.bench``: every figure of ``make bench``."""
from .suite import main

raise SystemExit(main())
