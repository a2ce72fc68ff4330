"""Pure-Python metrics for Blindspot's evaluation app (no Django imports).

Modules: naturalbench, retrieval (Winoground scores), vhexpansion, vlind, visit, bootstrap and
textmetrics. Definitions follow /shared/METRICS.md and the papers' official code.
"""
