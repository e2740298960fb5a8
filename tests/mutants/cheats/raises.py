"""Raises at import: the answer does not load."""
raise RuntimeError("my module blows up on import")
