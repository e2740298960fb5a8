"""Housekeeping for the repository: notebook outputs, rendered links, and a clear word for a wrong Python.
"""
