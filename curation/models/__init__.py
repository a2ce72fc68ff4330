"""Curation data: image assets and corpora, CLIP-style scorers and their embedding caches, and the
LLM gateway's providers, prompt templates and generations (provenance of every generated word).

One module per area so each stays small; everything is importable from ``curation.models``.
"""

from .assets import Caption, Corpus, Image, Sample
from .llm import Generation, LLMProvider, PromptTemplate, TemplatePin
from .scorers import EmbeddingCache, Scorer

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
    "TemplatePin",
]
