"""VHExpansion recipe (vhexpansion.txt Sec. 3): negations checked by people, common and
adversarial image perturbations, expanded test sets for the evaluation app and for fine-tuning.

Importing the package registers the review outcome handler and the Celery jobs (``curation.apps``
imports ``curation.recipes``, which imports every recipe).
"""

from . import jobs, outcomes  # noqa: F401
