"""Housekeeping for the repository: notebook outputs, rendered links, a clear word for a wrong Python, and mutation
testing of the exercises' items (``make mutation``). Developers' tools: the grader never imports them.
"""
