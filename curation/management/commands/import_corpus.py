"""Import a corpus from a folder or an archive on this machine (all or nothing).

    manage.py import_corpus --project demo --name "Flickr30K val" \
        --folder /data/flickr30k_images --manifest /data/results_20130124.token

Runs in this process (no worker needed) with the same checks as the web upload; thumbnails are
made here too unless --no-thumbnails. On a terminal, a progress bar on standard error follows
the images (--quiet: none).
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from annotator.platform.errors import Invalid
from annotator.platform.models import Project
from annotator.platform.terminal import add_quiet_argument, command_bars
from curation import corpora


class Command(BaseCommand):
    help = "Import images with captions (manifest JSONL/CSV, COCO or Flickr30K) as a corpus."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", required=True, help="Project slug or id.")
        parser.add_argument("--name", required=True, help="Name of the new corpus.")
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument("--folder", help="A folder with the images (and maybe the manifest).")
        where.add_argument("--archive", help="A .zip, .tar, .tar.gz or .tgz with the images.")
        parser.add_argument("--manifest", help="The manifest or caption file, if not inside.")
        parser.add_argument(
            "--format",
            default="auto",
            choices=sorted(corpora.FORMATS),
            help="Manifest format (default: detect).",
        )
        parser.add_argument("--language", default="en", help="Default caption language (BCP 47).")
        parser.add_argument("--licence", default="", help="Default licence of the images.")
        parser.add_argument("--source", default="", help="Where the corpus comes from (URL, id).")
        parser.add_argument("--description", default="")
        parser.add_argument("--user", help="Username recorded as the importer.")
        parser.add_argument(
            "--no-thumbnails", action="store_true", help="Leave thumbnails to a later job."
        )
        add_quiet_argument(parser)

    def handle(self, *args, **opts) -> None:
        ref = opts["project"]
        project = Project.objects.filter(
            Q(slug=ref) | Q(pk=int(ref) if ref.isdigit() else None)
        ).first()
        if project is None:
            raise CommandError(f"No project with slug or id {ref!r}.")
        user = None
        if opts["user"]:
            user = get_user_model().objects.filter(username=opts["user"]).first()
            if user is None:
                raise CommandError(f"No user {opts['user']!r}.")
        manifest = manifest_name = None
        if opts["manifest"]:
            path = Path(opts["manifest"])
            if not path.is_file():
                raise CommandError(f"{path} is not a file.")
            manifest, manifest_name = path.read_bytes(), path.name
        where = opts["folder"] or opts["archive"]
        if not Path(where).exists():
            raise CommandError(f"{where} does not exist.")
        try:
            source = corpora.open_source(where)
            try:
                with command_bars(self, opts) as bars:
                    result = corpora.corpus_import(
                        project=project,
                        name=opts["name"],
                        source=source,
                        manifest=manifest,
                        manifest_name=manifest_name or "",
                        fmt=opts["format"],
                        language=opts["language"],
                        licence=opts["licence"],
                        source_url=opts["source"],
                        description=opts["description"],
                        created_by=user,
                        thumbnails="none" if opts["no_thumbnails"] else "inline",
                        progress=bars.callback(f"import {opts['name']}"),
                    )
            finally:
                source.close()
        except Invalid as exc:
            lines = [exc.message, *(f"  line {e['line']}: {e['error']}" for e in exc.errors)]
            raise CommandError("\n".join(lines)) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Corpus #{result['corpus_id']}: {result['samples']} samples, "
                f"{result['captions']} captions, {result['images_new']} new images "
                f"({result['images_reused']} already stored), format {result['format']}"
            )
        )
        skipped = result["skipped_missing_images"] + result["skipped_uncaptioned"]
        if skipped or result["ignored_files"]:
            self.stdout.write(
                f"Skipped {result['skipped_missing_images']} captioned images not found, "
                f"{result['skipped_uncaptioned']} without captions; "
                f"{result['ignored_files']} image files were not in the manifest."
            )
