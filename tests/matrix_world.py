"""The world of the permission matrix (tests/test_permission_matrix.py): two projects, seven
kinds of visitor, and in project 1 an object of every kind a URL takes the id of.

Project 1 (slug ``p1secret``) holds the four recipes' demo pipelines (NaturalBench, VHExpansion,
VLind-Bench, VisIT-Bench, built by their own demo builders with the offline drafter), a corpus
with images, LLM providers and generations, queues of every task kind, leased tasks, jobs, an
invitation and the evaluation benchmarks, versions, runs and judgment sets the recipes publish.
Every name a list page could show carries the marker ``P1SECRET`` (project 1's slug carries it
too, and so every benchmark name derived from it), so a foreign user's page that mentions it
leaks project 1. Project 2 has its own curator, researcher and crowdworker and a queue.

The "removed member" holds the crowdworker, curator and researcher roles, was a member of
project 1 and held a lease there when they were removed: the strongest case of revocation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from celery import current_app
from django.db.models import Model
from django.test import TestCase, override_settings

from annotator import kinds, services
from annotator.models import Enrollment, Report, Task, TaskQueue
from annotator.platform import roles
from annotator.platform.models import Job, Project, Webhook
from curation.recipes.framework.publish import published_versions
from curation.recipes.framework.registry import recipe_of
from evaluation.families.naturalbench import demo as nb_demo
from evaluation.families.naturalbench import parse as nb_parse
from tests.factories import ProjectFactory, QueueFactory, TaskFactory, UserFactory, vqa_payload

MARKER = "P1SECRET"

ANON = "anonymous"
WORKER = "crowdworker"
RESEARCHER = "researcher"
CURATOR = "curator"
CURATOR2 = "curator-of-p2"
RESEARCHER2 = "researcher-of-p2"
REMOVED = "removed-member"
VISITORS = (ANON, WORKER, RESEARCHER, CURATOR, CURATOR2, RESEARCHER2, REMOVED)
# The global roles each visitor holds (membership decides where they apply).
ROLES_OF: dict[str, frozenset[str]] = {
    ANON: frozenset(),
    WORKER: frozenset({roles.CROWDWORKER}),
    RESEARCHER: frozenset({roles.RESEARCHER}),
    CURATOR: frozenset({roles.CURATOR}),
    CURATOR2: frozenset({roles.CURATOR}),
    RESEARCHER2: frozenset({roles.RESEARCHER}),
    REMOVED: frozenset({roles.CROWDWORKER, roles.CURATOR, roles.RESEARCHER}),
}
MEMBERS_OF_P1 = frozenset({WORKER, RESEARCHER, CURATOR})
FAST_HASHER = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass
class World:
    users: dict[str, object]  # visitor -> user (None for anonymous)
    ids: dict[str, object] = field(default_factory=dict)  # name -> URL argument
    held: dict[str, int] = field(default_factory=dict)  # visitor -> the task they lease


def _first(qs, what: str) -> Model:
    obj = qs.order_by("pk").first()
    if obj is None:
        raise AssertionError(f"the matrix world has no {what}: a demo builder changed")
    return obj


def _mark(obj: Model, attr: str = "name") -> None:
    value = getattr(obj, attr)
    if MARKER not in value:
        setattr(obj, attr, f"{MARKER} {value}"[:200])
        obj.save(update_fields=[attr])


def _recipes(project: Project, curator) -> dict:
    from curation.recipes.hunt.demo import hunt_demo
    from curation.recipes.naturalbench.demo import naturalbench_demo
    from curation.recipes.vhexpansion.demo import vhexpansion_demo
    from curation.recipes.visit.demo import visit_demo
    from curation.recipes.vlind.demo import vlind_demo

    nb = naturalbench_demo(project=project, curator=curator)
    vhx = vhexpansion_demo(project=project, curator=curator)
    vlind = vlind_demo(project=project, curator=curator)
    visit = visit_demo(project=project, curator=curator)
    hunt = hunt_demo(project=project, curator=curator)
    return {"nb": nb, "vhx": vhx, "vlind": vlind, "visit": visit, "hunt": hunt}


def _rename_recipes(made: dict) -> None:
    """Marker in every pipeline's name; the benchmark a set publishes to follows its name."""
    from curation.recipes.framework.registry import recipe_of
    from curation.recipes.vlind import export as vlind_export
    from evaluation.models import Benchmark

    vlind = made["vlind"]
    old = vlind_export.benchmark_name(vlind)
    _mark(vlind)
    Benchmark.objects.filter(name=old).update(name=vlind_export.benchmark_name(vlind))
    vhx = made["vhx"]  # its versions are its benchmark's (foreign key): renamed by its Publish.name
    _mark(vhx)
    name = recipe_of("vhexpansion").publishes.name(vhx)
    Benchmark.objects.filter(pk=vhx.benchmark_id).update(name=name)
    _mark(made["nb"])
    _mark(made["visit"])
    _mark(made["hunt"])


def _export_job(kind: str, project: Project, curator, **params) -> Job:
    """An export job still running: its card (``?part=card``) answers 200 to its curator."""
    return Job.objects.create(
        kind=kind, params=params, project=project, created_by=curator, status=Job.Status.RUNNING
    )


def _failed_import(queue: TaskQueue, by, error: str) -> Job:
    """A task import into `queue` that `by` started and that failed with `error`."""
    return Job.objects.create(
        kind="annotator.import_tasks",
        params={"queue_id": queue.pk, "rows": []},
        project=queue.project,
        created_by=by,
        status=Job.Status.FAILED,
        error=error,
    )


def _evaluation(project: Project, curator, made: dict, ids: dict) -> None:
    from evaluation import services as eval_services
    from evaluation.models import BenchmarkVersion, JudgmentSet, ModelRun

    versions = BenchmarkVersion.objects.filter(benchmark__project=project)
    if not versions.exists():  # before evaluation knew projects, benchmarks had none
        versions = BenchmarkVersion.objects.all()
    version = _first(versions.filter(published_at__isnull=False), "published benchmark version")
    ids["version"] = version.pk
    published = versions.filter(published_at__isnull=False)
    visit_version = _first(published.filter(benchmark__family="visit"), "VisIT-Bench version")
    ids["visit_version"] = visit_version.pk
    run = _first(ModelRun.objects.filter(version__in=versions), "model run")
    ids["run"] = run.pk
    ids["judgment_set"] = _first(
        JudgmentSet.objects.filter(version__in=versions), "judgment set"
    ).pk
    ids["visit_set"] = _first(
        JudgmentSet.objects.filter(version=visit_version), "judgment set on the VisIT version"
    ).pk

    draft = eval_services.benchmark_version_create(
        family="naturalbench",
        name=f"{MARKER} draft · {project.slug}",
        label="draft",
        rows=nb_parse.parse_items(_nb_items()),
        project=project,
        publish=False,
        created_by=curator,
    )
    ids["draft_version"] = draft.pk


def _nb_items() -> str:

    return nb_demo.naturalbench_items(4)


def _hunt(round_, worker, curator, ids: dict) -> None:
    """The demo round, two of its pool images and one item of the world's worker, waiting for
    its partner image (the worker's pages), and an export job (its card)."""
    from curation.recipes.hunt.models import HuntCandidate

    images = list(round_.corpus.samples.order_by("position").values_list("image_id", flat=True))
    ids["hunt"] = round_.pk
    ids["hunt_image"], ids["hunt_image2"] = images[0], images[1]
    ids["hunt_item"] = HuntCandidate.objects.create(
        round=round_,
        worker=worker,
        image_id=images[0],
        question=f"{MARKER} Is there a square?",
        answer="a0",
        normal="is there a square",
        state=HuntCandidate.State.PARTNER,
        neighbours={"method": "random", "images": [{"id": images[1], "score": None}]},
    ).pk
    ids["hunt_export_job"] = _export_job(
        "hunt.export", round_.project, curator, round_id=round_.pk, fmt="jsonl"
    ).pk


def _project_2_parents(p2: Project, curator2) -> dict:
    """One object of project 2 per recipe: the parents under which project 1's children (its
    versions, triples, families, export jobs) are named in the mixed-ids test."""
    from curation.models import Corpus
    from curation.recipes.hunt.models import HuntRound
    from curation.recipes.naturalbench.models import NaturalBenchPipeline
    from curation.recipes.vhexpansion.models import VHCaseSet
    from curation.recipes.visit import pipelines as visit_pipelines
    from curation.recipes.vlind import benches as vlind_benches

    corpus = Corpus.objects.create(project=p2, name="Beta corpus", slug="beta")
    nb = NaturalBenchPipeline.objects.create(project=p2, name="Beta pipeline", corpus=corpus)
    vhx = VHCaseSet.objects.create(project=p2, name="Beta set")
    hunt = HuntRound.objects.create(project=p2, name="Beta hunt", corpus=corpus)
    vlind = vlind_benches.bench_create(project=p2, name="Beta bench", created_by=curator2)
    visit = visit_pipelines.pipeline_create(project=p2, name="Beta VisIT", created_by=curator2)
    from evaluation import services as eval_services

    version = eval_services.benchmark_version_create(
        family="naturalbench",
        name="Beta benchmark",
        label="v1",
        rows=nb_parse.parse_items(_nb_items()),
        project=p2,
        created_by=curator2,
    )
    return {
        "p2:nb": nb.pk,
        "p2:vhx": vhx.pk,
        "p2:vlind": vlind.pk,
        "p2:visit": visit.pk,
        "p2:hunt": hunt.pk,
        "p2:version": version.pk,
        "p2:queue": TaskQueue.objects.get(project=p2).pk,
    }


def build_world(media_root: str) -> World:
    """Build the world in the current transaction (the caller rolls it back)."""
    # Read before the override: Celery loads its configuration from Django's settings at the
    # first read, once a process. Read inside it, the override's True became the process's
    # value, restored as such, and every later job of that test process ran eagerly (the VisIT
    # multi-image browser test then found its drafting job already run).
    eager = current_app.conf.task_always_eager
    with override_settings(
        PASSWORD_HASHERS=FAST_HASHER, MEDIA_ROOT=media_root, CELERY_TASK_ALWAYS_EAGER=True
    ):
        current_app.conf.task_always_eager = True
        try:
            with TestCase.captureOnCommitCallbacks(execute=True):
                return _build()
        finally:
            current_app.conf.task_always_eager = eager


def _build() -> World:
    worker = UserFactory(username="m-worker", role=roles.CROWDWORKER)
    worker_b = UserFactory(username="m-worker-b", role=roles.CROWDWORKER)
    researcher = UserFactory(username="m-researcher", role=roles.RESEARCHER)
    curator = UserFactory(username="m-curator", role=roles.CURATOR)
    curator2 = UserFactory(username="m-curator-2", role=roles.CURATOR)
    researcher2 = UserFactory(username="m-researcher-2", role=roles.RESEARCHER)
    worker2 = UserFactory(username="m-worker-2", role=roles.CROWDWORKER)
    removed = UserFactory(username="m-removed", role=roles.CROWDWORKER)
    roles.grant_role(removed, roles.CURATOR)
    roles.grant_role(removed, roles.RESEARCHER)

    p1 = ProjectFactory(
        name=f"{MARKER} Alpha", slug="p1secret", members=[worker, worker_b, researcher, curator]
    )
    p1.members.add(removed)
    p2 = ProjectFactory(name="Beta", slug="p2", members=[curator2, researcher2, worker2])
    beta_queue = QueueFactory(project=p2, title="Beta queue")
    TaskFactory(queue=beta_queue, payload=vqa_payload(200))

    made = _recipes(p1, curator)
    ids: dict[str, object] = {"project": p1.pk, "member": worker_b.pk, "project2": p2.pk}

    # Queues of every kind (the recipes made them) and one plain queue the matrix works in.
    # a day-long lease: the matrix outlives the default 10 minutes on a loaded machine, and an
    # expired lease would answer 409 to the holder's token-auth submit, skip, report, heartbeat
    queue = QueueFactory(
        project=p1, title=f"{MARKER} matrix queue", redundancy=2, lease_ttl=timedelta(days=1)
    )
    for i in range(4):
        TaskFactory(queue=queue, payload=vqa_payload(100 + i))
    held = services.assignment_claim(queue=queue, annotator=worker).assignment.task_id
    removed_held = services.assignment_claim(queue=queue, annotator=removed).assignment.task_id
    answered = services.assignment_claim(queue=queue, annotator=worker_b).assignment.task_id
    # worker_b answers it (a curator may send the answer back) and reports the next one
    following = services.annotation_submit(
        task_id=answered, annotator=worker_b, response={"answer": "Yes"}
    ).next.assignment
    assert following is not None
    services.assignment_report(task_id=following.task_id, annotator=worker_b, reason="broken_image")
    ids["answered_task"] = answered
    ids["answered_by"] = worker_b.username
    ids["report"] = Report.objects.get(task_id=following.task_id, reporter=worker_b).pk
    ids["queue"] = queue.pk
    ids["task"] = held
    for q in TaskQueue.objects.filter(project=p1):
        _mark(q, "title")
    by_kind: dict[str, int] = {}
    for q in TaskQueue.objects.filter(project=p1).order_by("pk"):
        by_kind.setdefault(q.kind, q.pk)
    by_kind["vqa_choice"] = queue.pk
    missing = set(kinds.REGISTRY) - set(by_kind)
    if missing:
        raise AssertionError(f"the matrix world has no queue of the kinds {sorted(missing)}")
    ids["queue_by_kind"] = by_kind
    enrollment = Enrollment.objects.filter(queue=queue, annotator=worker_b).first()
    if enrollment is None:
        enrollment = Enrollment.objects.create(queue=queue, annotator=worker_b)
    Enrollment.objects.filter(pk=enrollment.pk).update(
        state=Enrollment.State.PAUSED, reason="low gold"
    )
    ids["enrollment"] = enrollment.pk
    ids["job"] = _failed_import(queue, curator, "boom").pk
    ids["invite_token"] = services.invitation_create(
        created_by=curator, role=roles.CROWDWORKER, project=p1
    ).token
    ids["webhook"] = Webhook.objects.create(
        project=p1,
        url="https://p1secret.example.org/hook",
        description=f"{MARKER} receiver",
        events=["queue.finished"],
        secret="whsec_matrix",
    ).pk

    # Curation assets of project 1.
    from curation.models import Corpus, Generation, LLMProvider, PromptTemplate, Sample, Scorer

    corpus = _first(Corpus.objects.filter(project=p1), "corpus")
    _mark(corpus)
    ids["corpus"] = corpus.pk
    ids["image"] = _first(Sample.objects.filter(corpus=corpus), "sample").image_id
    ids["scorer"] = _first(Scorer.objects.all(), "scorer").pk
    provider = LLMProvider.objects.create(
        project=p1,
        name=f"{MARKER} provider",
        kind=LLMProvider.Kind.OPENAI,
        base_url="http://127.0.0.1:9/v1",
        model="p1-model",
    )
    ids["provider"] = provider.pk
    ids["generation"] = _first(Generation.objects.filter(project=p1), "generation").pk
    template = _first(PromptTemplate.objects.filter(is_current=True), "prompt template")
    ids["template"] = template.name
    ids["template_version"] = template.version

    # The recipes' objects.
    nb, vhx, vlind, visit = made["nb"], made["vhx"], made["vlind"], made["visit"]
    if vhx is None:
        raise AssertionError("the VHExpansion demo found no published NaturalBench version")
    _rename_recipes(made)
    ids["nb"] = nb.pk
    nb_version = _first(nb.versions.all(), "NaturalBench version")
    ids["nb_version"] = nb_version.pk
    ids["nb_archive"] = nb_version.archive.name
    ids["nb_benchmark_version"] = nb_version.benchmark_version_id
    ids["vhx"] = vhx.pk
    ids["vhx_export_job"] = _export_job(
        "vhexpansion.export", p1, curator, case_set_id=vhx.pk, fmt="jsonl"
    ).pk
    ids["vlind"] = vlind.pk
    ids["vlind_concept"] = _first(vlind.concepts.all(), "VLind concept").pk
    ids["vlind_triple"] = _first(vlind.triples.all(), "VLind triple").pk

    ids["vlind_version"] = _first(published_versions(recipe_of("vlind"), vlind), "VLind version").pk
    ids["vlind_export_job"] = _export_job("vlind.export", p1, curator, bench_id=vlind.pk).pk
    ids["visit"] = visit.pk
    ids["visit_family"] = _first(visit.categories.all(), "VisIT family").pk
    ids["visit_export_job"] = _export_job(
        "visit.export", p1, curator, pipeline_id=visit.pk, what="dataset", fmt="csv"
    ).pk
    from curation.recipes.visit.models import VisitSubmission

    ids["visit_submission"] = VisitSubmission.objects.create(
        pipeline=visit,
        model_name=f"{MARKER} model",
        format="csv",
        version_id=visit.version_id or 0,
        judgment_set_label="matrix",
        status=VisitSubmission.Status.FAILED,
        created_by=curator,
    ).pk

    _hunt(made["hunt"], worker, curator, ids)
    _evaluation(p1, curator, made, ids)
    ids.update(_project_2_parents(p2, curator2))

    # What the removed member made while they curated project 1: a job and an invitation.
    ids["removed_job"] = _failed_import(queue, removed, f"{MARKER} failed import").pk
    services.invitation_create(created_by=removed, role=roles.CURATOR, project=p1)

    # Removal last: the removed member held a lease on project 1's queue until now.
    services.project_member_remove(project=p1, user=removed, by=curator)
    assert not p1.members.filter(pk=removed.pk).exists()
    users = {
        ANON: None,
        WORKER: worker,
        RESEARCHER: researcher,
        CURATOR: curator,
        CURATOR2: curator2,
        RESEARCHER2: researcher2,
        REMOVED: removed,
    }
    held_by = {v: held for v in VISITORS}
    held_by[REMOVED] = removed_held
    assert Task.objects.filter(pk=held, queue__project=p1).exists()
    return World(users=users, ids=ids, held=held_by)
