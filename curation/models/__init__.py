"""Curation data: image assets and corpora, CLIP-style scorers and their embedding caches, and the
LLM gateway's providers, prompt templates and generations (provenance of every generated word).

One module per area so each stays small; everything is importable from ``curation.models``.
"""

from .assets import Caption, Corpus, Image, Sample
from .llm import Generation, LLMProvider, PromptTemplate
from .naturalbench import *  # noqa: F401,F403
from .scorers import EmbeddingCache, Scorer
from .vhexpansion import VHCase, VHCaseSet, VHNegation, VHVariant  # noqa: F401
from .visit import *  # noqa: F401,F403
from .vlind import VLindBench, VLindConcept, VLindImage, VLindTriple  # noqa: F401

__all__ = [
    "Caption",
    "Corpus",
    "EmbeddingCache",
    "Generation",
    "Image",
    "LLMProvider",
    "PromptTemplate",
    "Sample",
    "Scorer",
]
