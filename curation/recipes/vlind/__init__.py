"""VLind-Bench recipe (vlind-bench.txt Sec. 3–4, App. A–C): LLM-drafted counterfactual triples,
three reviewers per triple and per image, counterfactual and factual images, VP nouns, and the
CK / VP / CB / LP test set in the published ``data.json`` layout.

Importing the package registers the outcome handlers, the offline drafter rules and the Celery
jobs (``curation.apps`` imports ``curation.recipes``, which imports every recipe).
"""

from . import jobs, outcomes, prompts  # noqa: F401
