"""Benchmarks, their versions and items: every change is atomic, and a published (frozen)
version never changes its items."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from annotator.platform.errors import Conflict, Invalid
from annotator.platform.models import Project
from annotator.platform.webhooks import webhook_emit
from evaluation.models import Benchmark, BenchmarkItem, BenchmarkVersion
from evaluation.parsed import ItemRow
from evaluation.registry import family_of


def clean_name(value: str, what: str, max_length: int) -> str:
    value = (value or "").strip()
    if not value:
        raise Invalid(f"Give the {what}.", [{"line": 0, "error": f"{what} is required"}])
    if len(value) > max_length:
        raise Invalid(f"The {what} is longer than {max_length} characters.")
    return value


def benchmark_get_or_create(
    *, family: str, name: str, project: Project, created_by=None
) -> Benchmark:
    """The project's benchmark ``family`` / ``name``, made when missing. Names are looked up in
    that project only: another project's benchmark of the same name is neither found nor
    revealed."""
    family_of(family)  # Invalid for an unknown family
    if project is None:
        raise Invalid("Choose the project of the benchmark.")
    name = clean_name(name, "benchmark name", 200)
    benchmark, _ = Benchmark.objects.get_or_create(
        project=project,
        family=family,
        name=name,
        defaults={"created_by": created_by},
    )
    return benchmark


@transaction.atomic
def version_create(
    *,
    benchmark: Benchmark,
    label: str,
    rows: Sequence[ItemRow],
    publish: bool = True,
    source: str = "",
    created_by=None,
) -> BenchmarkVersion:
    """A new version holding `rows`; published (frozen) unless `publish` is False."""
    label = clean_name(label, "version label", 60)
    if BenchmarkVersion.objects.filter(benchmark=benchmark, label=label).exists():
        raise Conflict(f"{benchmark.name} already has a version {label!r}.")
    if not rows:
        raise Invalid("A version needs at least one item.")
    version = BenchmarkVersion.objects.create(
        benchmark=benchmark, label=label, source=source[:255], created_by=created_by
    )
    _items_add(version, rows)
    if publish:
        version = version_publish(version=version)
    return version


def benchmark_version_create(
    *,
    family: str,
    name: str,
    label: str,
    rows: Sequence[ItemRow],
    project: Project,
    publish: bool = True,
    source: str = "",
    created_by=None,
) -> BenchmarkVersion:
    """A new version of the project's benchmark ``family`` / ``name`` (created when missing),
    in one transaction: a refused version leaves no empty benchmark behind."""
    with transaction.atomic():
        benchmark = benchmark_get_or_create(
            family=family, name=name, project=project, created_by=created_by
        )
        return version_create(
            benchmark=benchmark,
            label=label,
            rows=rows,
            publish=publish,
            source=source,
            created_by=created_by,
        )


def _items_add(version: BenchmarkVersion, rows: Sequence[ItemRow]) -> None:
    existing = set(version.items.values_list("item_id", flat=True))
    clashes = [
        {"line": r.line, "error": f"item id {r.item_id!r} is already in this version"}
        for r in rows
        if r.item_id in existing
    ]
    if clashes:
        raise Invalid("Some items are already in the version; nothing was added.", clashes)
    start = version.item_count
    BenchmarkItem.objects.bulk_create(
        [
            BenchmarkItem(
                version=version, item_id=r.item_id, position=start + k, kept=r.kept, data=r.data
            )
            for k, r in enumerate(rows)
        ],
        batch_size=1000,
    )
    version.item_count = start + len(rows)
    version.kept_count += sum(1 for r in rows if r.kept)
    version.save(update_fields=["item_count", "kept_count"])


@transaction.atomic
def version_items_add(*, version: BenchmarkVersion, rows: Sequence[ItemRow]) -> BenchmarkVersion:
    """Add items to a draft version; a published version is frozen and refuses (409)."""
    version = BenchmarkVersion.objects.select_for_update().get(pk=version.pk)
    if version.frozen:
        raise Conflict("This version is published: its items can no longer change.")
    _items_add(version, rows)
    return version


@transaction.atomic
def version_publish(*, version: BenchmarkVersion) -> BenchmarkVersion:
    version = BenchmarkVersion.objects.select_for_update().get(pk=version.pk)
    if not version.frozen:
        version.frozen = True
        version.published_at = timezone.now()
        version.save(update_fields=["frozen", "published_at"])
        benchmark = version.benchmark
        webhook_emit(
            project=benchmark.project_id,
            event="version.published",
            data={
                "version": version.pk,
                "label": version.label,
                "benchmark": benchmark.pk,
                "benchmark_name": benchmark.name,
                "family": benchmark.family,
                "items": version.item_count,
            },
        )
    return version


def leaderboard_changed(*, version: BenchmarkVersion, why: str, run: int | None = None) -> None:
    """Tell the project's webhooks (after commit) that the version's leaderboard changed:
    ``why`` is "metrics" (a run's metrics were computed) or "judgments" (ratings recomputed)."""
    webhook_emit(
        project=version.benchmark.project_id,
        event="leaderboard.changed",
        data={"version": version.pk, "benchmark": version.benchmark_id, "why": why, "run": run},
    )


def item_delete(*, item: BenchmarkItem) -> None:
    """Only a draft version may lose items."""
    if item.version.frozen:
        raise Conflict("This version is published: its items can no longer change.")
    with transaction.atomic():
        item.delete()
        BenchmarkVersion.objects.filter(pk=item.version_id).update(
            item_count=item.version.item_count - 1,
            kept_count=item.version.kept_count - int(item.kept),
        )
