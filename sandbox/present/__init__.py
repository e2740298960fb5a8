"""How runs are shown: HTML views, timelines, verdict maps, text and the notebooks' widgets.
"""
