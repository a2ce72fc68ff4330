"""Publishing a VisIT-Bench pipeline: the instances with a final verdict frozen as a version of
the evaluation app (items in the published layout; only verified ones count on leaderboards)."""

from __future__ import annotations

import json

from annotator.platform.errors import Invalid
from evaluation import parsed
from evaluation.families.visit import parse as visit_parse
from evaluation.models import BenchmarkVersion

from .models import VisitInstance, VisitPipeline, VisitReference
from .pipelines import clean_line, image_url


def version_source(pipeline: VisitPipeline) -> str:
    """The source line of every version the pipeline publishes (how its versions are found)."""
    return f"Blindspot VisIT-Bench pipeline #{pipeline.pk}"


def published_versions(pipeline: VisitPipeline):
    """Every version this pipeline published, newest first."""
    versions = BenchmarkVersion.objects.filter(source=version_source(pipeline))
    return versions.select_related("benchmark").order_by("-created_at", "-id")


def current_version(pipeline: VisitPipeline):
    """The pipeline's current evaluation version (the latest it published), or None."""
    if not pipeline.version_id:
        return None
    return (
        BenchmarkVersion.objects.select_related("benchmark").filter(pk=pipeline.version_id).first()
    )


def version_of(pipeline: VisitPipeline):
    """The pipeline's current evaluation version, or Invalid saying to publish first."""
    version = current_version(pipeline)
    if version is None:
        raise Invalid("Publish the verified instances as a version first.")
    return version


def version_items(pipeline: VisitPipeline) -> list:
    """Item rows of every instance with a final verdict, in the published layout (the evaluation
    app's VisIT-Bench item data) and in pipeline order; kept for leaderboards: correct only.
    Invalid when there is none (nothing to publish)."""

    instances = (
        pipeline.instances.exclude(origin=VisitInstance.Origin.SEED)
        .filter(state__in=[VisitInstance.State.VERIFIED, VisitInstance.State.DISCARDED])
        .select_related("category")
        .prefetch_related("images__image", "references")
        .order_by("position", "id")
    )
    rows = []
    used: set[str] = {x.external_id for x in instances if x.external_id}
    for line, instance in enumerate(instances, start=1):
        reference = max(instance.references.all(), key=lambda r: r.round, default=None)
        if reference is None or reference.verdict == VisitReference.Verdict.PENDING:
            continue
        urls = [image_url(img) for img in instance.images.all()]
        image = urls[0] if len(urls) == 1 else json.dumps(urls)  # the published image column
        item_id = instance.external_id
        if not item_id:
            # The evaluation app's id of (image, instruction); a repeat gets "~2", "~3".
            key = visit_parse.visit_key(image, instance.instruction)
            item_id, k = key, 1
            while item_id in used:
                k += 1
                item_id = f"{key}~{k}"
            used.add(item_id)
        verdict = reference.verdict
        metadata = instance.metadata or {}
        data = {
            "category": instance.category.name,
            "image": image,
            "images": urls,
            "instruction": instance.instruction,
            "caption": instance.caption,
            "reference": reference.text,
            "reference_output": metadata.get("reference_output", ""),
            "gpt4_correct": verdict == VisitReference.Verdict.CORRECT,
            "problem_in_caption": verdict == VisitReference.Verdict.CAPTION,
            "problem_in_gpt4": verdict == VisitReference.Verdict.RESPONSE,
            "public_images_metadata": metadata.get("public_images_metadata", {}),
            "multi_image": len(urls) > 1,
            "instance": instance.pk,
            "reference_source": "offline drafter" if reference.offline else reference.source,
        }
        kept = verdict == VisitReference.Verdict.CORRECT
        rows.append(parsed.ItemRow(item_id=item_id, data=data, line=line, kept=kept))
    if not rows:
        raise Invalid("No instance has a verified (or rejected) reference yet: nothing to publish.")
    return rows


def benchmark_name(pipeline: VisitPipeline, *, benchmark: str = "") -> str:
    """The benchmark a version goes to: the publish form's name, else the pipeline's. Benchmark
    names are unique per project: the pipeline's project's benchmark of this name gets the
    version, whatever other projects call theirs."""
    return clean_line(benchmark or pipeline.name, "benchmark name", 200)


def version_published(pipeline: VisitPipeline, version, items: list) -> None:
    """After a publish: each instance published without an item id keeps the one it was given,
    and the pipeline's current version is the new one (no crowd-vote set yet). New instances
    later go into a new version."""
    given = {row.data["instance"]: row.item_id for row in items}
    for instance_id in pipeline.instances.filter(pk__in=given, external_id="").values_list(
        "pk", flat=True
    ):
        VisitInstance.objects.filter(pk=instance_id).update(external_id=given[instance_id])
    VisitPipeline.objects.filter(pk=pipeline.pk).update(version_id=version.pk, human_set_id=None)
    pipeline.version_id, pipeline.human_set_id = version.pk, None
