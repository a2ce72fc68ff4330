"""The permission matrix: every URL pattern of annotator, curation (the four recipes included)
and evaluation × seven visitors {anonymous, crowdworker, researcher, curator of project 1,
curator of project 2, researcher of project 2, removed member}, in the world of
tests/matrix_world.py. It fails on any leak and prints them all as one table.

A leak is: a status outside the declared set (a refused visitor must get the login page or
401/403 when anonymous, 404 otherwise: exactly like a missing object), project 1's marker in a
list page of someone outside project 1, or any change in the database after a refused request
(every row of every app table is fingerprinted). A 500 anywhere is a failure too, and so is an
allowed visitor refused (the declared roles and the code disagree).

Roles (README's role table): crowdworkers only work in their projects; researchers read their
projects and evaluate (run models and judges, import runs and judgments, compute metrics);
curators do everything in their projects. Scorers and prompt templates are shared by every
project (no project of their own): any curator may use them, only admins (no visitor here)
change them, so every curator, of project 1, of project 2 or removed, is refused; their pages
must not show another project's data. Which version of a template project 1 renders (its pin)
is project 1's: only its curators move it. The declaration table below says, per pattern and
method, which roles of project 1 may succeed; a pattern missing from it fails
``test_every_url_pattern_is_declared``, so a new URL cannot escape the matrix.

The world is built once per module inside a transaction that is rolled back at the end; every
request runs in a savepoint rolled back after it, so allowed writes never leak into the next
cell and jobs (started on commit) never run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.authtoken.models import Token

from annotator import services
from annotator.platform import roles
from annotator.platform.models import Job
from annotator.platform.scoping import jobs_for
from evaluation.families.naturalbench import demo as nb_demo
from tests import matrix_world as mw
from tests import recipes_in_tests
from tests.annotator.test_permissions_html import QUEUE_POST
from tests.factories import ProjectFactory, vqa_payload

# The marker makes pytest-django set up the test database; each test's own transaction nests
# inside the module's (see the ``matrix`` fixture).
pytestmark = pytest.mark.django_db

C = frozenset({roles.CURATOR})
CR = frozenset({roles.CURATOR, roles.RESEARCHER})
W = frozenset({roles.CROWDWORKER})
ALL = frozenset({roles.CROWDWORKER, roles.CURATOR, roles.RESEARCHER})
ADMINS = frozenset()  # admin-only pages: no visitor of the matrix is an admin
# Patterns outside the three apps (Django's admin, language switch, files served in DEBUG).
SKIPPED_PREFIXES = ("admin/", "i18n/", "static/", "^static/", "^media/")

APPS = ("annotator", "curation", "evaluation")
TOKEN = "api-token-auth"  # the JSON endpoints again, authenticated by token, not by session
OBJECT = "object"  # the URL (or the body) names project 1's object: outsiders get 404
OWN = "own"  # no object of project 1: the role decides, outsiders must not see project 1
PUBLIC = "public"  # anyone, anonymous included (login, logout, invitation links)
# A page anyone with the role may use whose form names project 1's object: outsiders holding
# the role get their input refused (the form again, 400, 404 or back with a message) and
# nothing changes; project 1's names never show in what they get back.
NAMES_P1 = "names-p1"


class Id:
    """A URL argument or form value taken from the world (known once it is built); for the
    removed member, ``removed`` names what they made themselves while they were a member."""

    def __init__(self, name: str, removed: str = ""):
        self.name = name
        self.removed = removed


class Each(Id):
    """A URL argument tried with every value of a world dict (label -> id): one cell each."""


class File:
    """An uploaded file in a form or multipart body (a fresh one for every request)."""

    def __init__(self, name: str, content: bytes = b"{}\n"):
        self.name = name
        self.content = content


SETTLE = {"pick": "own", "answer_json": '{"answer": "Yes"}', "reason": "checked the image"}
HELD = Id("held")  # the task the visitor leases (the removed member's own, for them)


@dataclass(frozen=True)
class Call:
    method: str  # get, post, patch
    allowed: frozenset[str]  # roles of project 1's members that may succeed
    data: object = None  # form fields (HTML) or JSON body (API)
    scope: str = OBJECT
    query: str = ""
    refusal_only: bool = False  # heavy or networked when allowed: only refused visitors tried
    ok: tuple[int, ...] = ()  # statuses an allowed visitor may get besides 2xx/3xx


@dataclass(frozen=True)
class Row:
    kwargs: dict = field(default_factory=dict)  # URL kwarg -> Id or literal
    calls: tuple[Call, ...] = ()
    page: bool | None = None  # an HTML page (login redirect); None: not under api/


def get(allowed, **kw) -> Call:
    return Call("get", allowed, **kw)


def post(allowed, data=None, **kw) -> Call:
    kw.setdefault("ok", (400, 409))
    return Call("post", allowed, data if data is not None else {}, **kw)


def row(*calls: Call, **kwargs) -> Row:
    return Row(kwargs=kwargs, calls=calls)


def page(*calls: Call, **kwargs) -> Row:
    """A page under api/ (the API's documentation): anonymous visitors go to the login page."""
    return Row(kwargs=kwargs, calls=calls, page=True)


QUEUE_FORM = QUEUE_POST  # the queue form filled in, as the HTML permission test posts it
queue = {"queue_id": Id("queue")}
every_queue = {"queue_id": Each("queue_by_kind")}  # one queue of every task kind
task = {"task_id": Id("task")}
job = {"job_id": Id("job", removed="removed_job")}  # the removed member's: one they started
held = {"task_id": HELD}
project = {"project_id": Id("project")}
webhook = {"webhook_id": Id("webhook")}
nb = {"pipeline_id": Id("nb")}
vhx = {"set_id": Id("vhx")}
vlind = {"bench_id": Id("vlind")}
triple = {"bench_id": Id("vlind"), "triple_id": Id("vlind_triple")}
hunt = {"round_id": Id("hunt")}
hunt_item = {"round_id": Id("hunt"), "candidate_id": Id("hunt_item")}
visit = {"pipeline_id": Id("visit")}
version = {"version_id": Id("version")}
visit_version = {"version_id": Id("visit_version")}
run = {"run_id": Id("run")}
scorer = {"scorer_id": Id("scorer")}
template = {"name": Id("template")}
provider = {"provider_id": Id("provider")}
NAMES_PROJECT_1 = {"project": Id("project")}
REFUSED_INPUT = (200, 302, 400, 404)
NB_ITEMS = nb_demo.naturalbench_items(4)
NB_IMPORT = {"family": "naturalbench", "benchmark": "Evil", "label": "v-evil", **NAMES_PROJECT_1}
PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
    b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa75"
    b"\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82"
)

# ------------------------------------------------------------------------------------------
# The declaration: every pattern, how to fill it, what to try, who may succeed.
# ------------------------------------------------------------------------------------------
TABLE: dict[str, Row] = {
    # --- site: the API schema and its docs (logged-in users only) ---
    "api-schema": row(get(ALL, scope=OWN)),
    "api-docs": page(get(ALL, scope=OWN)),
    "api-redoc": page(get(ALL, scope=OWN)),
    "api-redoc-bundle": row(get(ALL, scope=PUBLIC)),  # ReDoc's script, like a static file
    "api-token": row(
        post(ALL, {"username": "m-curator", "password": "wrong"}, scope=PUBLIC, ok=(400, 401, 403))
    ),
    # stored files: an export's storage path is never served by /media/, whoever asks
    "media": row(get(frozenset()), path=Id("nb_archive")),
    # --- annotator: workspace ---
    "home": row(get(ALL, scope=OWN)),
    "login": row(get(ALL, scope=PUBLIC)),
    "logout": row(post(ALL, scope=PUBLIC)),
    "work": row(get(W), **every_queue),
    "work-submit": row(post(W, {"answer": "Yes"}, ok=()), **held),
    "work-skip": row(post(W, ok=()), **held),
    "work-report": row(post(W, {"reason": "unclear"}, ok=()), **held),
    "work-heartbeat": row(post(W, ok=()), **held),
    "work-release": row(post(W, ok=()), **held),
    # undo: nothing answered yet on the held task (409 / back with the reason), the history page
    "work-undo": row(post(W, ok=()), **every_queue),
    "work-task-undo": row(post(W, ok=()), **held),
    "work-history": row(get(W), **every_queue),
    "work-progress": row(get(W), **every_queue),
    # --- annotator: curator pages ---
    "curator-projects": row(get(CR, scope=OWN)),
    "curator-project-new": row(
        get(C, scope=OWN), post(C, {"name": "Evil", "slug": "evil"}, scope=OWN)
    ),
    "curator-project": row(get(CR), **project),
    "curator-project-people": row(get(C), **project),
    "curator-project-member-remove": row(get(C), post(C), user_id=Id("member"), **project),
    "curator-queue-new": row(get(C), post(C, QUEUE_FORM), **project),
    "curator-queue": row(get(CR), **every_queue),
    "curator-queue-edit": row(get(C), post(C, QUEUE_FORM), **queue),
    "curator-queue-status": row(post(C, {"status": "closed"}), **queue),
    "curator-queue-upload": row(
        get(C),
        post(C, {"text": json.dumps(vqa_payload(7))}),
        post(C, {"file": File("tasks.jsonl", json.dumps(vqa_payload(8)).encode())}),
        **queue,
    ),
    "curator-queue-tasks-cancel": row(post(C, {"ids": Id("task"), "reason": "withdrawn"}), **queue),
    "curator-queue-disagreements": row(get(CR), **every_queue),
    "curator-queue-tasks": row(get(CR, query="state=open&q=cube&sort=agreement"), **every_queue),
    "curator-task": row(get(CR), **task),
    "curator-task-settle": row(post(C, SETTLE), **task),
    "curator-queue-tasks-settle": row(post(C, {**SETTLE, "state": "open"}), **queue),
    "curator-task-send-back": row(
        post(C, {"annotator": Id("answered_by"), "note": "look again"}),
        task_id=Id("answered_task"),
    ),
    "curator-project-reports": row(get(CR, query="status=all"), **project),
    "curator-report-handle": row(post(C, {"action": "resolve"}), report_id=Id("report")),
    "curator-enrollment-resume": row(post(C), enrollment_id=Id("enrollment")),
    "curator-invites": row(
        get(C, scope=OWN),
        post(C, {"role": "crowdworker", "days": 3, **NAMES_PROJECT_1}, scope=NAMES_P1),
    ),
    "invite-accept": row(get(ALL, scope=PUBLIC), token=Id("invite_token")),
    "token": row(get(ALL, scope=OWN), post(ALL, scope=OWN)),
    "curator-webhooks": row(
        get(C), post(C, {"url": "https://example.org/x", "events": ["job.failed"]}), **project
    ),
    "curator-webhook": row(
        get(C), post(C, {"url": "https://example.org/x", "events": ["job.failed"]}), **webhook
    ),
    "curator-webhook-test": row(post(C), **webhook),
    "curator-webhook-active": row(post(C, {"active": "0"}), **webhook),
    "curator-webhook-secret": row(post(C), **webhook),
    "curator-webhook-delete": row(post(C), **webhook),
    "curator-jobs": row(get(CR, scope=OWN)),
    "curator-job": row(get(CR), **job),
    "curator-job-retry": row(post(C), **job),
    # --- annotator: JSON API ---
    "api-queues": row(
        get(ALL, scope=OWN),
        post(C, {"kind": "vqa_choice", "title": "New", **NAMES_PROJECT_1}, scope=NAMES_P1),
    ),
    "api-queue": row(get(ALL), Call("patch", C, {"priority": 5}, ok=(400,)), **queue),
    "api-queue-status": row(post(C, {"status": "paused"}), **queue),
    "api-queue-tasks": row(get(CR), post(C, [vqa_payload(9)]), **queue),
    "api-queue-tasks-cancel": row(post(C, {"ids": [Id("task")], "reason": "withdrawn"}), **queue),
    "api-queue-agreement": row(get(CR), **every_queue),
    "api-next": row(post(W, ok=()), **every_queue),
    "api-task-settle": row(post(C, {"method": "majority", "reason": "tie"}), **task),
    "api-queue-tasks-settle": row(
        post(C, {"method": "majority", "reason": "tie", "filter": {"state": "open"}}), **queue
    ),
    "api-queue-outcomes": row(get(CR, query="format=jsonl"), **every_queue),
    "api-queue-reports": row(get(CR, query="format=csv"), **every_queue),
    "api-project-reports": row(get(CR, query="status=all"), **project),
    "api-report-handle": row(post(C, {"action": "resolve"}), report_id=Id("report")),
    "api-task-send-back": row(
        post(C, {"annotator": Id("answered_by"), "note": "look again"}),
        task_id=Id("answered_task"),
    ),
    "api-queue-annotations": row(get(CR, query="format=csv"), **every_queue),
    "api-submit": row(post(W, {"response": {"answer": "Yes"}}, ok=()), **held),
    "api-skip": row(post(W, ok=()), **held),
    "api-report": row(post(W, {"reason": "unclear"}, ok=()), **held),
    "api-heartbeat": row(post(W, ok=()), **held),
    "api-projects": row(get(CR, scope=OWN)),
    "api-undo": row(post(W, ok=(409,)), **held),
    "api-queue-history": row(get(W), **every_queue),
    "api-project-members": row(get(C), **project),
    "api-project-member": row(Call("delete", C), user_id=Id("member"), **project),
    "api-jobs": row(get(CR, scope=OWN)),
    "api-webhooks": row(
        get(C), post(C, {"url": "https://example.org/x", "events": ["job.failed"]}), **project
    ),
    "api-webhook": row(
        get(C),
        Call("patch", C, {"description": "changed"}, ok=(400,)),
        Call("delete", C),
        **webhook,
    ),
    "api-webhook-test": row(post(C), **webhook),
    "api-webhook-secret": row(post(C), **webhook),
    "api-webhook-deliveries": row(get(C), **webhook),
    "api-job": row(get(CR), **job),
    # --- curation: corpora and images ---
    # The recipes' working pages (corpora, pipelines, sets, benches) are their curators'; a
    # researcher reaches a recipe's leaderboard and downloads, and its benchmarks under /eval/.
    "curator-corpora": row(get(C, scope=OWN)),
    "curator-project-corpora": row(
        get(C), post(C, {"name": "Evil", "archive": File("corpus.zip", b"PK")}), **project
    ),
    "curator-corpus": row(get(C), corpus_id=Id("corpus")),
    "curator-image": row(get(C), image_id=Id("image")),
    # --- curation: scorers (shared by every project) ---
    "curator-scorers": row(get(C, scope=OWN)),
    "curator-scorer-new": row(get(ADMINS, scope=OWN), post(ADMINS, scope=OWN)),
    "curator-scorer-default": row(post(ADMINS, scope=OWN)),
    "curator-scorer-tiny": row(post(ADMINS, scope=OWN)),
    "curator-scorer-edit": row(
        get(ADMINS, scope=OWN), post(ADMINS, {"batch_size": 2}, scope=OWN), **scorer
    ),
    # embedding project 1's corpus: the body names it
    "curator-scorer-embed": row(post(C, {"corpus": Id("corpus")}, scope=NAMES_P1), **scorer),
    # --- curation: LLM templates (shared), providers and generations ---
    "curator-llm-templates": row(get(CR, scope=OWN)),
    "curator-llm-templates-seed": row(post(ADMINS, scope=OWN)),
    "curator-llm-template-new": row(get(ADMINS, scope=OWN), post(ADMINS, scope=OWN)),
    "curator-llm-template": row(get(CR, scope=OWN), **template),
    "curator-llm-template-edit": row(
        get(ADMINS, scope=OWN),
        post(ADMINS, {"text": "Ignore the caption. Answer: yes"}, scope=OWN),
        **template,
    ),
    "curator-llm-template-restore": row(
        post(ADMINS, scope=OWN), version=Id("template_version"), **template
    ),
    # the version of a shared template project 1 renders: its curators move it, nobody else
    "curator-llm-template-pin": row(
        get(C), post(C, {"version": Id("template_version")}), **template, **project
    ),
    "curator-llm-providers": row(get(C, scope=OWN)),
    "curator-llm-provider-new": row(
        get(C, scope=OWN),
        post(C, {"name": "Evil", "kind": "offline", **NAMES_PROJECT_1}, scope=NAMES_P1),
    ),
    "curator-llm-provider-edit": row(get(C), post(C), **provider),
    # calls the provider's endpoint when allowed
    "curator-llm-provider-test": row(post(C, refusal_only=True), **provider),
    "curator-llm-generations": row(get(CR, scope=OWN)),
    "curator-llm-generation": row(get(CR), generation_id=Id("generation")),
    # --- NaturalBench ---
    "curator-nb-pipelines": row(get(C, scope=OWN)),
    "curator-nb-new": row(get(C), post(C), **project),
    "curator-nb-pipeline": row(get(C), **nb),
    "curator-nb-settings": row(get(C), post(C), **nb),
    "curator-nb-stage": row(post(C), stage="mine", **nb),
    "curator-nb-pairs": row(get(C), **nb),
    "curator-nb-questions": row(get(C), **nb),
    "curator-nb-samples": row(get(C), **nb),
    "curator-nb-version": row(get(CR), version_id=Id("nb_version"), **nb),
    "curator-nb-download": row(get(CR), version_id=Id("nb_version"), fmt="zip", **nb),
    # --- VHExpansion ---
    "curator-vhx-sets": row(get(C, scope=OWN)),
    "curator-vhx-new": row(
        get(C), post(C, {"name": "Evil", "table": File("cases.jsonl")}), **project
    ),
    "curator-vhx-from-naturalbench": row(post(C, {"version": Id("version")}), **project),
    "curator-vhx-set": row(get(C), **vhx),
    "curator-vhx-cases": row(get(C), **vhx),
    "curator-vhx-settings": row(post(C), **vhx),
    "curator-vhx-negate": row(post(C), **vhx),
    "curator-vhx-perturb": row(post(C), **vhx),
    "curator-vhx-adversarial": row(post(C), **vhx),
    "curator-vhx-publish": row(post(C, {"label": "v-evil"}), **vhx),
    "curator-vhx-export": row(get(CR), post(C), fmt="jsonl", **vhx),
    "curator-vhx-export-file": row(get(CR, query="part=card"), job_id=Id("vhx_export_job"), **vhx),
    # --- VLind-Bench ---
    "curator-vlind-benches": row(get(C, scope=OWN)),
    "curator-vlind-new": row(get(C), post(C), **project),
    "curator-vlind-bench": row(get(C), **vlind),
    "curator-vlind-settings": row(post(C), **vlind),
    "curator-vlind-concept-new": row(get(C), post(C), **vlind),
    "curator-vlind-concept": row(get(C), post(C), concept_id=Id("vlind_concept"), **vlind),
    "curator-vlind-draft": row(post(C), **vlind),
    "curator-vlind-generate": row(post(C), **vlind),
    "curator-vlind-nouns-draft": row(post(C), **vlind),
    "curator-vlind-triples": row(get(C), **vlind),
    "curator-vlind-triple": row(get(C), **triple),
    "curator-vlind-upload": row(post(C, {"images": File("image.png", PNG)}), **triple),
    "curator-vlind-factual": row(post(C, {"image": File("factual.png", PNG)}), **triple),
    "curator-vlind-nouns": row(post(C), **triple),
    "curator-vlind-best": row(post(C), **triple),
    "curator-vlind-publish": row(post(C, {"label": "v-evil"}), **vlind),
    "curator-vlind-export": row(get(CR), post(C), **vlind),
    "curator-vlind-version-export": row(get(CR), post(C), version_id=Id("vlind_version"), **vlind),
    "curator-vlind-export-file": row(
        get(CR, query="part=card"), job_id=Id("vlind_export_job"), **vlind
    ),
    # --- VisIT-Bench ---
    "curator-visit-pipelines": row(get(C, scope=OWN)),
    "curator-visit-new": row(get(C), post(C), **project),
    "curator-visit-pipeline": row(get(C), **visit),
    "curator-visit-settings": row(post(C), **visit),
    "curator-visit-import": row(post(C, {"file": File("visit.csv", b"a,b\n")}), **visit),
    "curator-visit-fetch": row(post(C), **visit),
    "curator-visit-family-new": row(
        get(C), post(C, {"name": "Evil", "images": File("seed.png", PNG)}), **visit
    ),
    "curator-visit-instructions": row(post(C), family_id=Id("visit_family"), **visit),
    "curator-visit-instances": row(get(C), **visit),
    "curator-visit-draft": row(post(C), **visit),
    "curator-visit-publish": row(post(C, {"label": "v-evil"}), **visit),
    "curator-visit-generate": row(post(C), **visit),
    "curator-visit-pairs": row(post(C), **visit),
    "curator-visit-sync": row(post(C), **visit),
    "curator-visit-judge": row(post(C), **visit),
    "curator-visit-leaderboard": row(
        get(CR), post(CR, {"model": "evil", "file": File("answers.csv", b"a,b\n")}), **visit
    ),
    "curator-visit-export": row(get(CR), post(C), what="dataset", fmt="csv", **visit),
    "curator-visit-export-file": row(
        get(CR, query="part=card"), job_id=Id("visit_export_job"), **visit
    ),
    "api-visit-submissions": row(
        get(CR), post(CR, {"model": "evil", "file": File("answers.csv", b"a,b\n")}), **visit
    ),
    "api-visit-submission": row(get(CR), submission_id=Id("visit_submission"), **visit),
    "api-visit-leaderboard": row(get(CR), **visit),
    # --- the datasets pages (framework: the projects' researchers and curators, read-only) ---
    "datasets": row(get(CR, scope=OWN)),
    "datasets-naturalbench": row(get(CR), **nb),
    "datasets-vhexpansion": row(get(CR), **vhx),
    "datasets-vlind": row(get(CR), **vlind),
    "datasets-visit": row(get(CR), **visit),
    "datasets-hunt": row(get(CR), **hunt),
    # --- recipes over JSON (framework.api) ---
    "api-recipes": row(get(CR, scope=OWN)),
    "api-recipe-objects": row(get(C, scope=OWN), key="naturalbench"),
    "api-recipe-stage": row(post(C, {}), key="naturalbench", object_id=Id("nb"), stage="mine"),
    "api-recipe-export": row(
        post(C, {"kind": "vhexpansion.export", "args": {"fmt": "jsonl"}}),
        key="vhexpansion",
        object_id=Id("vhx"),
    ),
    # the world's export job is still running: its file answers 404 saying so, to anyone
    "api-recipe-export-file": row(
        get(CR, ok=(404,)), key="vhexpansion", object_id=Id("vhx"), job_id=Id("vhx_export_job")
    ),
    # --- evaluation: pages ---
    "eval-benchmarks": row(get(CR, scope=OWN)),
    # a complete, valid import: naming project 1 is the only thing wrong for outsiders
    "eval-import": row(
        get(C, scope=OWN),
        post(C, {**NB_IMPORT, "file": File("items.jsonl", NB_ITEMS.encode())}, scope=NAMES_P1),
    ),
    "eval-version": row(get(CR), **version),
    "eval-leaderboard": row(get(CR), **version),
    "eval-run-import": row(
        get(CR), post(CR, {"model": "evil", "file": File("predictions.jsonl")}), **version
    ),
    "eval-version-publish": row(post(C), version_id=Id("draft_version")),
    "eval-run-model": row(post(CR), **version),
    "eval-judge-run": row(post(CR), **visit_version),
    "eval-judgments": row(get(CR), **visit_version),
    "eval-judgments-import": row(
        get(CR), post(CR, {"label": "evil", "file": File("judgments.jsonl")}), **visit_version
    ),
    "eval-judgments-compute": row(post(CR), **visit_version),
    "eval-judgments-export": row(get(CR), **visit_version, set_id=Id("visit_set")),
    "eval-rankings": row(get(CR), **visit_version),
    "eval-run": row(get(CR), **run),
    "eval-run-compute": row(post(CR), **run),
    # --- evaluation: JSON API ---
    "api-eval-benchmarks": row(get(CR, scope=OWN)),
    "api-eval-import": row(post(C, {**NB_IMPORT, "content": NB_ITEMS}, scope=NAMES_P1)),
    "api-eval-version": row(get(CR), **version),
    "api-eval-runs": row(get(CR), **version),
    "api-eval-run-import": row(post(CR, {"model": "evil", "content": "{}"}), **version),
    "api-eval-judgments": row(get(CR), **visit_version),
    "api-eval-judgments-import": row(
        post(CR, {"label": "evil", "file": File("judgments.jsonl")}), **visit_version
    ),
    "api-eval-judgments-compute": row(post(CR), **visit_version),
    "api-eval-rankings": row(get(CR), **visit_version),
    "api-eval-run-model": row(post(CR), **version),
    "api-eval-judge": row(post(CR), **visit_version),
    "api-eval-run": row(get(CR), **run),
    "api-eval-metrics": row(get(CR), **run),
    "api-eval-compute": row(post(CR), **run),
    # --- the hunt: curators' rounds, crowdworkers' own pages (their items only) ---
    "curator-hunt-rounds": row(get(C, scope=OWN)),
    "curator-hunt-new": row(get(C), post(C, {"name": "Evil hunt"}), **project),
    "curator-hunt-round": row(get(C), **hunt),
    "curator-hunt-settings": row(post(C), **hunt),
    "curator-hunt-publish": row(post(C, {"label": "v-evil"}), **hunt),
    "curator-hunt-export": row(get(CR), post(C), fmt="jsonl", **hunt),
    "curator-hunt-export-file": row(
        get(CR, query="part=card"), job_id=Id("hunt_export_job"), **hunt
    ),
    "hunt-work": row(get(W), **hunt),
    "hunt-submit": row(
        post(W, {"image": Id("hunt_image"), "question": "Is it evil here?", "answer": "yes"}),
        **hunt,
    ),
    "hunt-mine": row(get(W), **hunt),
    "hunt-item": row(get(W), **hunt_item),
    "hunt-partner": row(
        post(W, {"partner": Id("hunt_image2"), "question_1": "Is it good here?"}), **hunt_item
    ),
    "hunt-again": row(post(W), **hunt_item),
}


# ------------------------------------------------------------------------------------------
# The URL patterns, from the resolver.
# ------------------------------------------------------------------------------------------
def _view_module(callback) -> str:
    cls = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    return (cls or callback).__module__


def url_patterns(resolver=None, prefix: str = ""):
    """(route, name, module of the view) of every pattern, nested includes walked."""
    for p in (resolver or get_resolver()).url_patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            yield from url_patterns(p, route)
        elif isinstance(p, URLPattern):
            yield route, p.name, _view_module(p.callback)


def matrix_patterns() -> dict[str, tuple[str, str]]:
    """name -> (route, area) of every pattern the matrix must cover."""
    out = {}
    in_tests = recipes_in_tests.url_names()
    for route, name, module in url_patterns():
        if route.startswith(SKIPPED_PREFIXES) or name in in_tests:
            continue
        area = module.split(".")[0]
        out[name or route] = (route, area if area in APPS else "site")
    return out


def test_every_url_pattern_is_declared():
    patterns = matrix_patterns()
    missing = sorted(set(patterns) - set(TABLE))
    stale = sorted(set(TABLE) - set(patterns))
    assert not missing, f"URL patterns missing from the permission matrix: {missing}"
    assert not stale, f"the permission matrix declares patterns that no longer exist: {stale}"
    areas = {area for _route, area in patterns.values()}
    assert {"annotator", "curation", "evaluation"} <= areas
    curate = [route for route, _area in patterns.values() if route.startswith("curate/")]
    recipes = {route.split("/")[1] for route in curate}
    assert {"naturalbench", "vhexpansion", "vlind", "visit"} <= recipes


# ------------------------------------------------------------------------------------------
# The database fingerprint: every row of every app table.
# ------------------------------------------------------------------------------------------
FINGERPRINTED = ("annotator_", "curation_", "evaluation_", "authtoken_", "auth_user")
_PARTS: dict[str, dict[str, str]] = {}  # fingerprint SQL -> its query per table
# (SQL, transaction) -> the writes and the fingerprint at the transaction's first fingerprint
_SEEN: dict[tuple[str, int], tuple[dict, dict]] = {}


def _fingerprint_sql() -> str:
    recipe_tables = recipes_in_tests.recipe_tables()
    tables = sorted(
        t
        for t in connection.introspection.table_names()
        if t.startswith(FINGERPRINTED) or t in recipe_tables
    )
    # Per table its row count and the sum of its rows' 64-bit hashes: any row added, removed or
    # changed changes one of them (but for a 2**-64 chance), and no table's rows are sorted.
    parts = {
        t: f"SELECT '{t}' AS t, count(*) AS n, "
        f"coalesce(sum(hashtextextended(x::text, 0)::numeric), 0)::text AS h FROM {t} x"
        for t in tables
    }
    sql = " UNION ALL ".join(parts.values())
    _PARTS[sql] = parts
    return sql


def fingerprint(sql: str) -> dict[str, tuple[int, str]]:
    """Each table's (rows, hash). The first fingerprint in a transaction reads every table;
    later ones read again only the tables the transaction has written to since (inserts,
    updates, deletes, rolled back or not: pg_stat_xact_user_tables). The others cannot have
    changed, and reading every row of every table after each of the matrix's requests was a
    large part of its time."""
    parts = _PARTS[sql]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT txid_current(), relname, n_tup_ins + n_tup_upd + n_tup_del "
            "FROM pg_stat_xact_user_tables WHERE relname = ANY(%s)",
            [list(parts)],
        )
        rows = cursor.fetchall()
        if not rows:
            cursor.execute("SELECT txid_current()")
            rows = [(cursor.fetchone()[0], None, 0)]
        key = (sql, rows[0][0])
        writes = {table: n for _xid, table, n in rows if table is not None}
        first, found = _SEEN.get(key, (None, {}))
        stale = [t for t in parts if first is None or writes.get(t, 0) != first.get(t, 0)]
        if stale:
            cursor.execute(" UNION ALL ".join(parts[t] for t in stale))
            found = {**found, **{t: (n, h) for t, n, h in cursor.fetchall()}}
        if first is None:
            _SEEN[key] = (writes, found)
        return found


def stored_files(root: str) -> set[str]:
    """Every file under MEDIA_ROOT: a refused upload must not leave one behind."""
    return {os.path.relpath(os.path.join(d, f), root) for d, _dirs, fs in os.walk(root) for f in fs}


def changed_tables(before: dict, after: dict) -> list[str]:
    return sorted(
        f"{t}({before.get(t, (0,))[0]}→{after.get(t, (0,))[0]})"
        for t in set(before) | set(after)
        if before.get(t) != after.get(t)
    )


# ------------------------------------------------------------------------------------------
# The world, once per module, rolled back at the end.
# ------------------------------------------------------------------------------------------
@dataclass
class Matrix:
    world: mw.World
    sessions: dict[str, str]
    tokens: dict[str, str]
    sql: str
    baseline: dict
    media: str


@pytest.fixture(scope="module")
def matrix(django_db_setup, django_db_blocker, tmp_path_factory):
    media = str(tmp_path_factory.mktemp("matrix-media"))
    with django_db_blocker.unblock(), override_settings(MEDIA_ROOT=media):
        with transaction.atomic():
            world = mw.build_world(media)
            sessions, tokens = {}, {}
            for visitor, user in world.users.items():
                if user is not None:
                    client = Client()
                    client.force_login(user)
                    sessions[visitor] = client.cookies[settings.SESSION_COOKIE_NAME].value
                    tokens[visitor] = Token.objects.get_or_create(user=user)[0].key
            sql = _fingerprint_sql()
            yield Matrix(world, sessions, tokens, sql, fingerprint(sql), media)
            transaction.set_rollback(True)


def _value(value, m: Matrix, visitor: str):
    if isinstance(value, Id):
        if value is HELD:
            return m.world.held[visitor]
        if value.removed and visitor == mw.REMOVED:
            return m.world.ids[value.removed]
        return m.world.ids[value.name]
    if isinstance(value, File):
        return SimpleUploadedFile(value.name, value.content)
    if isinstance(value, dict):
        return {k: _value(v, m, visitor) for k, v in value.items()}
    if isinstance(value, list):
        return [_value(v, m, visitor) for v in value]
    return value


def url_of(name: str, m: Matrix, visitor: str, call: Call, fixed: dict | None = None) -> str:
    kwargs = {k: _value(v, m, visitor) for k, v in TABLE[name].kwargs.items()}
    kwargs.update(fixed or {})
    url = reverse(name, kwargs=kwargs)
    return f"{url}?{call.query}" if call.query else url


def client_for(m: Matrix, visitor: str, token: bool = False) -> Client:
    """The visitor's browser (session cookie), or an API client with their token."""
    if token:
        key = m.tokens.get(visitor)
        return Client(HTTP_AUTHORIZATION=f"Token {key}") if key else Client()
    client = Client()
    if visitor in m.sessions:
        client.cookies[settings.SESSION_COOKIE_NAME] = m.sessions[visitor]
    return client


def send(client: Client, call: Call, url: str, data, api: bool):
    if call.method == "get":
        return client.get(url)
    if isinstance(data, dict) and any(isinstance(v, SimpleUploadedFile) for v in data.values()):
        return client.post(url, data)  # multipart, for pages and endpoints alike
    if api:
        body = json.dumps(data) if data is not None else ""
        return client.generic(call.method.upper(), url, body, content_type="application/json")
    return client.generic(call.method.upper(), url, _form(data), content_type=_FORM)


_FORM = "application/x-www-form-urlencoded"


def _form(data) -> str:
    from urllib.parse import urlencode

    return urlencode(data or {}, doseq=True)


def body_of(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


@dataclass
class Cell:
    name: str
    route: str
    method: str
    visitor: str
    status: object
    expected: str
    problem: str


def may_succeed(call: Call, visitor: str) -> bool:
    if call.scope == PUBLIC:
        return True
    if visitor == mw.ANON:
        return False
    holds = bool(mw.ROLES_OF[visitor] & call.allowed)
    if call.scope == OWN:
        return holds
    return holds and visitor in mw.MEMBERS_OF_P1


def input_refused(call: Call, visitor: str) -> bool:
    """An outsider who may use the page, naming project 1's object in the form."""
    return (
        call.scope == NAMES_P1
        and visitor not in mw.MEMBERS_OF_P1
        and bool(mw.ROLES_OF[visitor] & call.allowed)
    )


def expectation(call: Call, visitor: str, api: bool) -> str:
    if may_succeed(call, visitor):
        extra = "/".join(str(s) for s in call.ok)
        return "2xx/3xx" + (f"/{extra}" if extra else "")
    if visitor == mw.ANON:
        return "401/403" if api else "302 login"
    if input_refused(call, visitor):
        return "refused input"
    return "404"


def judge(call: Call, visitor: str, api: bool, response, changed: list[str]) -> str:
    """The problem with this answer, or '' when it is as declared."""
    status = response.status_code
    if status >= 500:
        return "server error"
    if may_succeed(call, visitor):
        if 200 <= status < 400 or status in call.ok:
            if (
                call.method == "get"
                and call.scope == OWN
                and visitor not in mw.MEMBERS_OF_P1
                and mw.MARKER.lower() in body_of(response).lower()
            ):
                return "LEAK: project 1's names in the page"
            return ""
        return "allowed visitor refused"
    problem = ""
    if input_refused(call, visitor):
        if status not in REFUSED_INPUT:
            problem = "refused input answered unlike a refusal"
        elif mw.MARKER.lower() in body_of(response).lower():
            problem = "LEAK: project 1's names in the answer"
    elif visitor == mw.ANON:
        login = reverse(settings.LOGIN_URL)
        if api and status not in (401, 403):
            problem = "LEAK: anonymous not refused"
        elif not api and not (status == 302 and response["Location"].startswith(login)):
            problem = "LEAK: anonymous not sent to login"
    elif status != 404:
        problem = "LEAK: refused visitor got an answer" if status < 400 else "refused unlike a 404"
    if changed:
        problem = (
            (problem + "; " if problem else "")
            + "LEAK: database changed: "
            + ", ".join(changed[:4])
        )
    return problem


def run_cell(
    m: Matrix,
    name: str,
    route: str,
    call: Call,
    visitor: str,
    variant: tuple = ("", {}),
    token: bool = False,
) -> Cell:
    declared = TABLE[name].page
    api = route.startswith("api/") if declared is None else not declared
    label, fixed = variant
    url = url_of(name, m, visitor, call, fixed)
    name = f"{name}[{label}]" if label else name
    name = f"{name} (token)" if token else name
    data = _value(call.data, m, visitor)
    refused = not may_succeed(call, visitor)
    files = stored_files(m.media) if refused else set()
    sid = transaction.savepoint()
    try:
        try:
            response = send(client_for(m, visitor, token), call, url, data, api)
        except Exception as exc:  # a view that raised: a 500 in production
            problem = f"server error: {exc!r}"[:160]
            return Cell(name, route, call.method, visitor, "raised", "", problem)
        changed = changed_tables(m.baseline, fingerprint(m.sql)) if refused else []
        if refused:
            changed += [f"stored file {f}" for f in sorted(stored_files(m.media) - files)]
        problem = judge(call, visitor, api, response, changed)
        return Cell(
            name,
            route,
            call.method,
            visitor,
            response.status_code,
            expectation(call, visitor, api),
            problem,
        )
    finally:
        transaction.savepoint_rollback(sid)


def variants(m: Matrix, r: Row) -> list[tuple[str, dict]]:
    """(label, URL arguments) of each cell of a row: one per value of an ``Each`` argument."""
    for kwarg, value in r.kwargs.items():
        if isinstance(value, Each):
            return [(label, {kwarg: pk}) for label, pk in sorted(m.world.ids[value.name].items())]
    return [("", {})]


def cells_of(m: Matrix, area: str):
    """The cells of an area; ``token`` is every JSON endpoint again, with the API token."""
    token = area == TOKEN
    for name, (route, where) in sorted(matrix_patterns().items()):
        if name not in TABLE or (where != area and not token):
            continue
        if token and not (route.startswith("api/") and TABLE[name].page is None):
            continue
        for variant in variants(m, TABLE[name]):
            for call in TABLE[name].calls:
                for visitor in mw.VISITORS:
                    if call.refusal_only and may_succeed(call, visitor):
                        continue
                    yield name, route, call, visitor, variant, token


def table_of(problems: list[Cell]) -> str:
    head = f"{'pattern':34} {'method':6} {'visitor':17} {'got':6} {'expected':14} problem"
    lines = [head, "-" * len(head)]
    for c in problems:
        lines.append(
            f"{c.name:34} {c.method.upper():6} {c.visitor:17} {c.status!s:6} {c.expected:14} "
            f"{c.problem}"
        )
    return "\n".join(lines)


def run_area(m: Matrix, area: str) -> tuple[int, list[Cell]]:
    cells = [run_cell(m, *cell) for cell in cells_of(m, area)]
    return len(cells), [c for c in cells if c.problem]


@pytest.mark.slow
@pytest.mark.parametrize("area", ["annotator", "curation", "evaluation", "site", TOKEN])
def test_permission_matrix(matrix, area):
    # given project 1's world and the seven visitors, when each declared request is sent
    count, problems = run_area(matrix, area)
    # then every answer is the declared one: no leak, no 500, no allowed visitor refused
    assert count > 0
    leaks = sum("LEAK" in c.problem for c in problems)
    assert not problems, (
        f"{area}: {len(problems)} of {count} cells wrong ({leaks} leaks)\n" + table_of(problems)
    )


# ------------------------------------------------------------------------------------------
# Project 2's own pages, and project 1's objects named from them.
# ------------------------------------------------------------------------------------------
def _project_pages() -> list[str]:
    """GET pages that take only a project: their forms offer that project's objects."""
    return sorted(
        name
        for name, r in TABLE.items()
        if set(r.kwargs) == {"project_id"} and any(c.method == "get" for c in r.calls)
    )


@pytest.mark.slow  # builds the matrix world (~20 s) when run alone
def test_project_2s_pages_offer_nothing_of_project_1(matrix):
    # given project 2's curator on each page of their own project (forms with choices of
    # corpora, providers, versions, scorers...)
    client = client_for(matrix, mw.CURATOR2)
    pages = _project_pages()
    assert "curator-vhx-new" in pages and "curator-nb-new" in pages
    seen = {}
    for name in pages:
        sid = transaction.savepoint()
        try:
            response = client.get(reverse(name, args=[matrix.world.ids["project2"]]))
            seen[name] = (response.status_code, mw.MARKER.lower() in body_of(response).lower())
        finally:
            transaction.savepoint_rollback(sid)
    # then every page answers and none offers project 1's objects
    assert seen == {name: (200, False) for name in pages}


@pytest.mark.slow  # builds the matrix world (~20 s) when run alone
def test_the_checks_can_fail(matrix):
    """The marker shows on project 1's pages to its curator, and an accepted write changes the
    fingerprint: the matrix's two leak detectors see what they look for."""
    client = client_for(matrix, mw.CURATOR)
    for name in ("curator-projects", "eval-benchmarks", "curator-nb-pipelines"):
        assert mw.MARKER.lower() in body_of(client.get(reverse(name))).lower(), name
    sid = transaction.savepoint()
    try:
        url = reverse("curator-queue-status", args=[matrix.world.ids["queue"]])
        assert client.post(url, {"status": "paused"}).status_code == 302
        n = matrix.baseline["annotator_taskqueue"][0]
        assert changed_tables(matrix.baseline, fingerprint(matrix.sql)) == [
            f"annotator_taskqueue({n}→{n})"
        ]
    finally:
        transaction.savepoint_rollback(sid)
    assert fingerprint(matrix.sql) == matrix.baseline


@pytest.mark.slow  # builds the matrix world (~20 s) when run alone
def test_project_1s_naturalbench_version_cannot_seed_a_set_in_project_2(matrix):
    # given project 2's curator, naming project 1's published NaturalBench version
    client = client_for(matrix, mw.CURATOR2)
    url = reverse("curator-vhx-from-naturalbench", args=[matrix.world.ids["project2"]])
    data = {"name": "Taken", "version": matrix.world.ids["nb_benchmark_version"]}
    sid = transaction.savepoint()
    try:
        # when they build a VHExpansion set from it in their own project
        response = client.post(url, data)
        # then the version is not among their choices and nothing is made
        assert response.status_code == 400
        assert mw.MARKER.lower() not in body_of(response).lower()
        assert changed_tables(matrix.baseline, fingerprint(matrix.sql)) == []
    finally:
        transaction.savepoint_rollback(sid)


PARENTS = ("nb", "vhx", "vlind", "visit", "hunt")  # world ids of the recipes' top objects


def mixed_rows() -> list[tuple[str, str, dict]]:
    """(pattern, parent kwarg, kwargs) of every pattern naming a recipe object and one of its
    children, the parent swapped for project 2's own."""
    out = []
    for name, r in sorted(TABLE.items()):
        parents = [k for k, v in r.kwargs.items() if isinstance(v, Id) and v.name in PARENTS]
        children = [k for k, v in r.kwargs.items() if isinstance(v, Id) and k not in parents]
        if parents and children:
            [kwarg] = parents
            out.append((name, kwarg, {**r.kwargs, kwarg: Id("p2:" + r.kwargs[kwarg].name)}))
    return out


@pytest.mark.slow  # builds the matrix world (~20 s) when run alone
def test_project_1s_children_under_project_2s_parents_answer_404(matrix):
    # given project 2's curator and researcher, their own pipelines, sets and benches, and the
    # ids of project 1's versions, triples, concepts, families, submissions and export jobs
    rows = mixed_rows()
    assert {name for name, _k, _kw in rows} >= {
        "curator-nb-version",
        "curator-vlind-triple",
        "curator-vhx-export-file",
        "curator-visit-instructions",
        "api-visit-submission",
    }
    wrong = []
    for visitor in (mw.CURATOR2, mw.RESEARCHER2):
        client = client_for(matrix, visitor)
        for name, _kwarg, kwargs in rows:
            url = reverse(name, kwargs={k: _value(v, matrix, visitor) for k, v in kwargs.items()})
            for call in TABLE[name].calls:
                sid = transaction.savepoint()
                try:
                    # when they ask for project 1's child under their own parent
                    response = send(client, call, url, _value(call.data, matrix, visitor), False)
                    changed = changed_tables(matrix.baseline, fingerprint(matrix.sql))
                finally:
                    transaction.savepoint_rollback(sid)
                if response.status_code != 404 or changed:
                    wrong.append((name, call.method, visitor, response.status_code, changed))
    # then each answers like a missing object and nothing changes
    assert wrong == []


# ------------------------------------------------------------------------------------------
# Regressions the matrix found: what a removed member made in a project stays in the project.
# ------------------------------------------------------------------------------------------
def test_a_removed_curator_no_longer_sees_the_jobs_they_started_there(client, project, curator):
    # given jobs the curator started: in the project, in another of theirs, and in none
    elsewhere = ProjectFactory(members=[curator])
    lost = Job.objects.create(kind="annotator.import_tasks", project=project, created_by=curator)
    kept = Job.objects.create(kind="annotator.import_tasks", project=elsewhere, created_by=curator)
    own = Job.objects.create(kind="curation.embed", created_by=curator)
    # when they are removed from the project
    services.project_member_remove(project=project, user=curator)
    # then its job answers like a missing one, page and API, and their list leaves it out
    client.force_login(curator)
    assert client.get(reverse("curator-job", args=[lost.pk])).status_code == 404
    assert client.get(reverse("api-job", args=[lost.pk])).status_code == 404
    assert client.get(reverse("curator-job", args=[kept.pk])).status_code == 200
    listed = client.get(reverse("api-jobs")).json()["results"]
    assert sorted(j["id"] for j in listed) == sorted([kept.pk, own.pk])
    assert set(jobs_for(curator)) == {kept, own}


def test_a_removed_curator_no_longer_sees_the_invitations_they_made_there(client, project, curator):
    # given an invitation into the project and one into no project, both by the curator
    into_project = services.invitation_create(
        created_by=curator, role=roles.CROWDWORKER, project=project
    )
    free = services.invitation_create(created_by=curator, role=roles.CROWDWORKER)
    # when they are removed from the project
    services.project_member_remove(project=project, user=curator)
    # then the project's link (a way back in) is no longer shown to them; their own is
    client.force_login(curator)
    html = client.get(reverse("curator-invites")).content.decode()
    assert into_project.token not in html
    assert project.name not in html
    assert free.token in html


# (pattern, URL arguments of project 2's own object, body naming project 1's object, the same
# body naming nothing of project 1 (accepted: the refusal is about project 1's object), API)
FOREIGN_IN_BODY = [
    (
        "api-eval-run-model",
        {"version_id": Id("p2:version")},
        {"provider_id": Id("provider"), "limit": 1},
        {"limit": 1},
        True,
    ),
    (
        "eval-run-model",
        {"version_id": Id("p2:version")},
        {"provider": Id("provider"), "limit": 1, "seed": 0},
        {"provider": "offline", "limit": 1, "seed": 0},
        False,
    ),
    (
        "api-queue-tasks-cancel",
        {"queue_id": Id("p2:queue")},
        {"ids": [Id("task")], "reason": "withdrawn"},
        None,
        True,
    ),
    (
        "curator-queue-tasks-cancel",
        {"queue_id": Id("p2:queue")},
        {"ids": Id("task"), "reason": "withdrawn"},
        None,
        False,
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "kwargs", "body", "control", "api"),
    FOREIGN_IN_BODY,
    ids=[f[0] for f in FOREIGN_IN_BODY],
)
def test_project_1s_objects_named_in_project_2s_requests_are_refused(
    matrix, name, kwargs, body, control, api
):
    # given project 2's curator on their own version or queue
    client = client_for(matrix, mw.CURATOR2)
    url = reverse(name, kwargs={k: _value(v, matrix, mw.CURATOR2) for k, v in kwargs.items()})
    call = Call("post", C)
    sid = transaction.savepoint()
    try:
        # when the body names project 1's provider or tasks
        response = send(client, call, url, _value(body, matrix, mw.CURATOR2), api)
        changed = changed_tables(matrix.baseline, fingerprint(matrix.sql))
    finally:
        transaction.savepoint_rollback(sid)
    # then it is refused (the form again, 404, or back with the reason) and nothing changes
    refusals = (400, 404) if api else (302, 400, 404)
    assert (response.status_code in refusals, changed) == (True, [])
    assert mw.MARKER.lower() not in body_of(response).lower()
    if control is not None:
        # while the same request naming nothing of project 1 is accepted
        sid = transaction.savepoint()
        try:
            accepted = send(client, call, url, control, api)
        finally:
            transaction.savepoint_rollback(sid)
        assert accepted.status_code in (202, 302)
