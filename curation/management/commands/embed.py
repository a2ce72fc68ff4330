"""Embed a corpus's images and texts with a scorer, in this process (no Celery), resumably.

manage.py embed --scorer 1 --corpus 3
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from curation.embeddings import embed_corpus
from curation.models import Corpus, Scorer
from curation.scorers import ScorerUnavailable


class Command(BaseCommand):
    help = "Embed the images and texts of a corpus with a scorer (skips what is cached)."

    def add_arguments(self, parser):
        parser.add_argument("--scorer", type=int, required=True, help="Scorer id.")
        parser.add_argument("--corpus", type=int, required=True, help="Corpus id.")

    def handle(self, *args, **opts):
        scorer = Scorer.objects.filter(pk=opts["scorer"]).first()
        if scorer is None:
            raise CommandError(f"No scorer with id {opts['scorer']}.")
        corpus = Corpus.objects.filter(pk=opts["corpus"]).first()
        if corpus is None:
            raise CommandError(f"No corpus with id {opts['corpus']}.")
        last = [-1]

        def progress(done: int, total: int, message: str) -> None:
            percent = int(100 * done / total) if total else 100
            if percent // 10 != last[0] // 10 or done == total:
                last[0] = percent
                self.stdout.write(f"{percent:3d}% {message}")

        try:
            result = embed_corpus(scorer=scorer, corpus=corpus, progress=progress)
        except ScorerUnavailable as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(result, indent=2))
