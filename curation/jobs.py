"""Celery jobs of the curation app (autodiscovered as ``curation.jobs``); one module per area."""

from .jobs_assets import *  # noqa: F403
from .jobs_llm import *  # noqa: F403
from .jobs_scorers import *  # noqa: F403
