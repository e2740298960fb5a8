"""Speed and memory figures (``make bench``; ``python -m sandbox.bench``), never timed tests.
"""
