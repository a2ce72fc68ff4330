"""NaturalBench recipe (naturalbench.txt Sec. 3, App. A–C): mine confounding pairs, verify them,
draft questions with an LLM, keep those two annotators answer as intended, assemble balanced 2 × 2
samples, tag skills and export frozen dataset versions.

Importing the package registers the outcome handlers, the Celery jobs and the offline drafter's
rules for its prompts (``curation.apps`` imports ``curation.recipes``, which imports each recipe).
"""

from . import jobs, outcomes, prompts  # noqa: F401
