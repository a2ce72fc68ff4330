"""A toy recipe and a toy benchmark family, declared entirely in tests (issue 14: a new method is
one folder and needs no edit outside it).

Recipe ``toy``: a run sends three yes/no items to its one queue (stage ``send``), people answer
them (outcome handler ``toy.review`` records each decided label), then ``freeze`` — blocked until
the queue is done — fixes the labels. Its export ``csv`` writes ``id,text,label``; it publishes to
the family ``toy``, whose one metric is accuracy against those labels.

``ToyRun``'s table (``test_toy_run``) is made by the test's fixture with the schema editor and
dropped after it; the recipe and the family are registered by the fixture and taken away again.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager

from django import forms
from django.apps import apps
from django.db import models

from annotator import services as annotator_services
from annotator.models import Task
from annotator.platform.errors import Invalid
from curation.export_files import export_store
from curation.recipes.framework.declare import (
    Create,
    Export,
    Publish,
    QueueSpec,
    Recipe,
    RecipeUrlNames,
    Stage,
)
from curation.recipes.framework.forms import RecipeForm
from curation.recipes.framework.models import RecipePipeline
from curation.recipes.framework.queues import queue_ensure
from evaluation import services as evaluation_services
from evaluation.compute import MetricRow, MetricSpec
from evaluation.importers import ItemRow, PredictionRow
from evaluation.registry import Family, FamilyTemplates

TEXTS = ("A red cube", "A blue ball", "A green cone")
HANDLER = "toy.review"
ITEM_TEMPLATE = "toy/_item.html"  # tests/curation/recipes/toy_templates/


class ToyRun(RecipePipeline):
    queue = models.ForeignKey(
        "annotator.TaskQueue", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    labels = models.JSONField(default=dict, blank=True)  # external id -> decided label
    frozen = models.BooleanField(default=False)

    class Meta(RecipePipeline.Meta):
        app_label = "curation"
        db_table = "test_toy_run"


# Out of the app registry except while a toy test runs (``toy_model_registered``): other tests
# that delete a project must not cascade into a table that exists only during the toy's tests.
apps.all_models["curation"].pop("toyrun")
apps.clear_cache()


@contextmanager
def toy_model_registered() -> Iterator[None]:
    apps.register_model("curation", ToyRun)
    try:
        yield
    finally:
        apps.all_models["curation"].pop("toyrun", None)
        apps.clear_cache()


QUEUE = QueueSpec(
    field="queue",
    kind="vqa_choice",
    title=lambda run: f"Toy: {run.name}",
    handler=HANDLER,
    instructions="Is the sentence true of the image?",
    redundancy=2,
    max_redundancy=2,
)


# --- stages ---------------------------------------------------------------------------------
def funnel(run: ToyRun) -> dict:
    sent = Task.objects.filter(queue_id=run.queue_id).count() if run.queue_id else 0
    return {"sent": sent, "decided": len(run.labels), "frozen": int(run.frozen)}


def send(run: ToyRun, *, job_id: int, created_by=None) -> dict:
    queue = queue_ensure(run, QUEUE)
    rows = [
        annotator_services.TaskRow(
            payload={
                "image": {"url": f"/static/demo/img{i}.png"},
                "question": f"{text}?",
                "choices": ["Yes", "No"],
            },
            external_id=f"toy-{i}",
        )
        for i, text in enumerate(TEXTS)
    ]
    return {"sent": annotator_services.tasks_bulk_create(queue=queue, rows=rows)}


def send_blocked(run: ToyRun, counts: dict) -> str:
    return "The items are sent already." if counts["sent"] else ""


def freeze(run: ToyRun, *, job_id: int, created_by=None) -> dict:
    ToyRun.objects.filter(pk=run.pk).update(frozen=True)
    return {"items": len(run.labels)}


def freeze_blocked(run: ToyRun, counts: dict) -> str:
    if not counts["sent"]:
        return "Send the items first."
    if counts["decided"] < counts["sent"]:
        return f"The queue is not done: {counts['decided']} of {counts['sent']} decided."
    return "Frozen already." if counts["frozen"] else ""


def reviewed(task, decision) -> None:
    """``toy.review``: keep the decided label of one item (inside the submit's transaction)."""
    run = ToyRun.objects.select_for_update().get(queue_id=task.queue_id)
    run.labels = {**run.labels, task.external_id: decision.label if decision.decided else ""}
    run.save(update_fields=["labels"])


# --- export and publishing ------------------------------------------------------------------
def items(run: ToyRun) -> list[dict]:
    return [
        {"id": f"toy-{i}", "text": text, "label": run.labels.get(f"toy-{i}", "")}
        for i, text in enumerate(TEXTS)
    ]


def csv_bytes(run: ToyRun) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["id", "text", "label"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(items(run))
    return out.getvalue().encode("utf-8")


def export_csv(run: ToyRun, *, job_id: int, created_by=None, fmt: str) -> dict:
    return export_store(
        job_id=job_id,
        recipe="toy",
        object_id=run.pk,
        filename=f"toy-{run.pk}.csv",
        content_type="text/csv",
        write=lambda fh: fh.write(csv_bytes(run)),
    )


def export_check(run: ToyRun, params: dict) -> int:
    if not run.frozen:
        raise Invalid("Freeze the run first.")
    return 0


def publish(run: ToyRun, *, benchmark, label: str, created_by=None):
    """A version of ``benchmark`` (the framework makes it on the first publish, then keeps
    it in ``run.benchmark``) holding the frozen labels as items."""
    if not run.frozen:
        raise Invalid("Freeze the run first.")
    content = "\n".join(json.dumps(item) for item in items(run))
    return evaluation_services.version_create(
        benchmark=benchmark,
        label=label,
        rows=parse_items(content, "toy.jsonl"),
        source=f"toy run {run.pk}",
        created_by=created_by,
    )


class ToyForm(RecipeForm):
    name = forms.CharField(max_length=200)


def create(*, project, created_by, name: str) -> ToyRun:
    if ToyRun.objects.filter(project=project, name=name).exists():
        raise Invalid("A toy run of that name exists in this project.")
    return ToyRun.objects.create(project=project, name=name, created_by=created_by)


RECIPE = Recipe(
    key="toy",
    label="Toy",
    model=ToyRun,
    slug="toy",
    pk_kwarg="run_id",
    job_param="run_id",
    context_name="run",
    list_key="runs",
    order=99,
    names=RecipeUrlNames(list="toy-runs", detail="toy-run", new="toy-new", stage="toy-stage"),
    stages=(
        Stage("send", "Send the items", "toy.send", send, blocked_by=send_blocked),
        Stage(
            "freeze",
            "Freeze",
            "toy.freeze",
            freeze,
            blocked_by=freeze_blocked,
            one_at_a_time=True,
        ),
    ),
    queues=(QUEUE,),
    outcomes={HANDLER: reviewed},
    exports=(
        Export(
            job_kind="toy.export",
            run=export_csv,
            check=export_check,
            unknown=lambda params: "" if params["fmt"] == "csv" else "Unknown export format.",
            label=lambda params: f"Export: {params['fmt'].upper()}",
            what=lambda params: params["fmt"].upper(),
            buttons=(("CSV", {"fmt": "csv"}),),
            url_name="toy-export",
            file_url_name="toy-export-file",
        ),
    ),
    publishes=Publish(
        family="toy",
        publish=publish,
        name=lambda run: f"{run.name} · {run.project.slug}",
        done=lambda version: f"Published {version.item_count} items as {version.label}.",
        url_name="toy-publish",
    ),
    funnel=funnel,
    bar=lambda counts: counts["sent"],
    select_related=("project", "queue", "benchmark"),
    create_form=ToyForm,
    create=create,
    created="Toy run created.",
    creates=(
        Create(
            url="quick/",
            url_name="toy-quick",
            form=lambda request, data=None: ToyForm(data),
            create=create,
            done="Toy run created the quick way.",
            context_name="quick_form",
        ),
    ),
)


# --- the family -----------------------------------------------------------------------------
def parse_items(content: str, filename: str = "") -> list[ItemRow]:
    rows = []
    for line, text in enumerate(content.splitlines(), 1):
        obj = json.loads(text)
        rows.append(ItemRow(obj["id"], {"text": obj["text"], "label": obj["label"]}, line))
    return rows


def parse_predictions(content: str, filename: str = "", option: str = "") -> list[PredictionRow]:
    rows = []
    for line, text in enumerate(content.splitlines(), 1):
        obj = json.loads(text)
        rows.append(PredictionRow(obj["id"], obj["answer"], line, parsed_answer=obj["answer"]))
    return rows


def rows(items, predictions, *, seed: int, rounds: int, text_metrics: bool = True):
    kept = [item for item in items if item.kept]
    right = sum(
        1
        for item in kept
        if item.item_id in predictions
        and predictions[item.item_id].parsed_answer == item.data["label"]
    )
    return [MetricRow("accuracy", right / len(kept) if kept else None, n=len(kept))]


FAMILY = Family(
    key="toy",
    label="Toy",
    order=99,
    parse_items=parse_items,
    parse_predictions=parse_predictions,
    rows=rows,
    specs=(MetricSpec("accuracy", "Accuracy"),),
    primary="accuracy",
    templates=FamilyTemplates(item=ITEM_TEMPLATE),
)
