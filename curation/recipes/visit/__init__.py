"""VisIT-Bench recipe (visit-bench.txt Sec. 2–4, App. C–F): instruction families, crowd-written
instructions and instruction-conditioned captions, LLM references people verify, forced-choice
A/B ratings fed to the evaluation app, and a living leaderboard judged by the LLM judge.

Importing the package registers the outcome handlers, the offline reference rule and the Celery
jobs (``curation.apps`` imports ``curation.recipes``, which imports every recipe).
"""

from . import jobs, outcomes, prompts  # noqa: F401
