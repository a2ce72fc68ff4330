"""Embed a corpus's images and texts with a scorer, in this process (no Celery), resumably.

manage.py embed --scorer 1 --corpus 3 [--quiet]

On a terminal its progress is drawn as a bar on standard error; the counts are printed at the end.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.platform.terminal import add_quiet_argument, command_bars
from curation.embeddings import embed_corpus
from curation.models import Corpus, Scorer
from curation.scorers import ScorerUnavailable


class Command(BaseCommand):
    help = "Embed the images and texts of a corpus with a scorer (skips what is cached)."

    def add_arguments(self, parser):
        parser.add_argument("--scorer", type=int, required=True, help="Scorer id.")
        parser.add_argument("--corpus", type=int, required=True, help="Corpus id.")
        add_quiet_argument(parser)

    def handle(self, *args, **opts):
        scorer = Scorer.objects.filter(pk=opts["scorer"]).first()
        if scorer is None:
            raise CommandError(f"No scorer with id {opts['scorer']}.")
        corpus = Corpus.objects.filter(pk=opts["corpus"]).first()
        if corpus is None:
            raise CommandError(f"No corpus with id {opts['corpus']}.")
        try:
            with command_bars(self, opts) as bars:
                progress = bars.callback(f"embed corpus #{corpus.pk}")
                result = embed_corpus(scorer=scorer, corpus=corpus, progress=progress)
        except ScorerUnavailable as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(result, indent=2))
