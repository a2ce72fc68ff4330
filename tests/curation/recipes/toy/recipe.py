"""The toy recipe, declared entirely in tests: a new method is one folder and one app, and needs
no edit outside it (``blindspot/settings_test.py`` installs the app: one line).

A run sends three yes/no items to its one queue (stage ``send``), people answer them (outcome
handler ``toy.review`` records each decided label), then ``freeze`` — blocked until the queue is
done — fixes the labels. Its export ``csv`` writes ``id,text,label``; it publishes to the family
``toy`` (``family.py``, registered by the tests that need it), whose one metric is accuracy.
"""

from __future__ import annotations

import csv
import io
import json

from django import forms

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
from curation.recipes.framework.queues import queue_ensure
from curation.recipes.framework.registry import register

from .family import parse_items
from .models import ToyRun

TEXTS = ("A red cube", "A blue ball", "A green cone")
HANDLER = "toy.review"

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


def published_items(run: ToyRun) -> list:
    """The frozen labels as the toy family's items (the framework publishes them as a version
    of the run's benchmark, made on the first publish, then kept in ``run.benchmark``)."""
    if not run.frozen:
        raise Invalid("Freeze the run first.")
    content = "\n".join(json.dumps(item) for item in items(run))
    return parse_items(content, "toy.jsonl")


class ToyForm(RecipeForm):
    name = forms.CharField(max_length=200)


def create(*, project, created_by, name: str) -> ToyRun:
    if ToyRun.objects.filter(project=project, name=name).exists():
        raise Invalid("A toy run of that name exists in this project.")
    return ToyRun.objects.create(project=project, name=name, created_by=created_by)


RECIPE = register(
    Recipe(
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
            items=published_items,
            source=lambda run: f"toy run {run.pk}",
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
)
