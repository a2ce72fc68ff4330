"""NaturalBench-Retrieval is scored by a CLIP-style scorer (App. B): each pair's two captions
against its two images, s[caption][image]."""

from evaluation.registry import ScorerRunner

RUNNER = ScorerRunner(images=("image_0", "image_1"), texts=("caption_0", "caption_1"))
