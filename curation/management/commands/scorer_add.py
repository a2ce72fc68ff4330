"""Add a scorer to the registry: NaturalBench's default, an open_clip tag, a checkpoint, or tiny.

manage.py scorer_add          # ViT-L-14 · laion400m_e32 (NaturalBench)
manage.py scorer_add --tiny   # tiny random-weights model (demo, tests)
manage.py scorer_add --model ViT-B-32 --pretrained openai --label "CLIP B/32"
manage.py scorer_add --model ViT-L-14 --checkpoint /models/vit_l_14-laion400m_e32.pt
manage.py scorer_add --model ViT-B-32 --random-weights --label "B/32 random"
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from curation.models import Scorer
from curation.scorers import (
    scorer_create,
    scorer_ensure_default,
    scorer_tiny,
    scorer_weights,
)


class Command(BaseCommand):
    help = "Add an open_clip scorer (default: NaturalBench's ViT-L-14 · laion400m_e32)."

    def add_arguments(self, parser):
        parser.add_argument("--label", default="", help="Name shown on the pages.")
        parser.add_argument("--model", default="", help="open_clip architecture, e.g. ViT-L-14.")
        parser.add_argument("--pretrained", default="", help="open_clip pretrained tag.")
        parser.add_argument("--checkpoint", default="", help="Absolute path of a checkpoint.")
        parser.add_argument("--tiny", action="store_true", help="The tiny random-weights model.")
        parser.add_argument("--random-weights", action="store_true", help="No trained weights.")
        parser.add_argument("--dtype", default="fp32", choices=Scorer.DType.values)
        parser.add_argument("--device", default="auto", choices=Scorer.Device.values)
        parser.add_argument("--batch-size", type=int, default=32)
        parser.add_argument("--default", action="store_true", help="Make it the default scorer.")

    def handle(self, *args, **opts):
        if opts["tiny"]:
            scorer = scorer_tiny(**({"label": opts["label"]} if opts["label"] else {}))
        elif not opts["model"]:
            if opts["pretrained"] or opts["checkpoint"] or opts["random_weights"]:
                raise CommandError(
                    "Give --model with --pretrained, --checkpoint or --random-weights."
                )
            scorer = scorer_ensure_default()
        else:
            source = opts["pretrained"] or opts["checkpoint"] or "random weights"
            try:
                scorer = scorer_create(
                    label=opts["label"] or f"{opts['model']} · {source}",
                    model_name=opts["model"],
                    pretrained=opts["pretrained"],
                    checkpoint_path=opts["checkpoint"],
                    random_weights=opts["random_weights"],
                    dtype=opts["dtype"],
                    device=opts["device"],
                    batch_size=opts["batch_size"],
                    is_default=opts["default"],
                )
            except ValidationError as exc:
                lines = [f"{field}: {'; '.join(msgs)}" for field, msgs in exc.message_dict.items()]
                raise CommandError("Scorer not added.\n" + "\n".join(lines)) from exc
        status = scorer_weights(scorer)
        self.stdout.write(f"scorer {scorer.pk}: {scorer.label}")
        if status.found:
            self.stdout.write(f"weights found: {status.path}")
        elif status.random:
            self.stdout.write(self.style.WARNING(status.message))
        else:
            self.stdout.write(self.style.WARNING(f"weights missing — {status.message}"))
