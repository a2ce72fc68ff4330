"""Image variants of the cases (vhexpansion.txt Sec. 3.2): common perturbations (App. C) of the
stored images, and adversarial ones (I-FGSM or PGD, Eq. 1) against a scorer's vision tower. Each
result is a derived ``Image`` recording the operation and its parameters, and a VHVariant per
case; work already done is skipped, so a re-run resumes."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_progress
from curation import assets, perturb
from curation.models import Image, Scorer
from curation.recipes.framework.publish import published_versions
from curation.recipes.framework.registry import recipe_for
from curation.scorers import scorer_load, scorer_weights_check
from evaluation.models import ModelRun

from .export import ORIGINAL, item_id, perturbation_label, perturbation_sort_key
from .models import VHCaseSet, VHVariant

PERTURB_JOB = "vhexpansion.perturb"
ADVERSARIAL_JOB = "vhexpansion.adversarial"
ADVERSARIAL_METHODS = ("ifgsm", "pgd")
BRANCH_CASE = "case"  # the case's own triggers_vh (import column), unknown → does not trigger
BRANCH_RUN = "run"  # a model run's predictions on the original cases (evaluation app)
BRANCH_NONE = "none"  # treat every case as not triggering VH
BRANCH_ALL = "all"  # treat every case as triggering VH
BRANCHES = (BRANCH_CASE, BRANCH_RUN, BRANCH_NONE, BRANCH_ALL)


def common_perturbations() -> list[str]:
    """Names in ``curation.perturb.PERTURBATIONS``, in table order."""
    return sorted(perturb.PERTURBATIONS, key=perturbation_sort_key)


def _variant_store(
    image: Image, cases, *, name: str, array, record: dict, kind: str, job_id, created_by, **fields
) -> tuple[Image, int]:
    """The derived image of ``image`` and a VHVariant for each case that lacks it."""
    derived, _new = assets.image_from_array(
        array=array,
        name=f"{image.sha256[:16]}-{name}",
        derived_from=image,
        derivation={"op": name, "params": record},
        created_by=created_by,
    )
    rows = [
        VHVariant(
            case=c,
            perturbation=name,
            kind=kind,
            image=derived,
            params={"op": name, "params": record},
            job_id=job_id,
            **fields,
        )
        for c in cases
    ]
    VHVariant.objects.bulk_create(rows, ignore_conflicts=True)
    return derived, len(rows)


def image_seed(seed: int, image: Image) -> int:
    """The noise seed of one image: the run's seed mixed with the image's content hash, so the
    same image gets the same noise wherever it appears."""
    return (int(seed) + int(image.sha256[:8], 16)) % 2**32


def perturbations_check(*, names: Sequence[str], params: dict | None = None) -> dict[str, dict]:
    """Known names and parameters the functions accept (a dry run on a grey image)."""
    params = dict(params or {})
    if not names:
        raise Invalid("Choose at least one perturbation.")
    unknown = sorted(set(names) - set(perturb.PERTURBATIONS))
    if unknown:
        raise Invalid(f"Unknown perturbation(s): {', '.join(unknown)}.")
    extra = sorted(set(params) - set(names))
    if extra:
        raise Invalid(f"Parameters given for perturbations not chosen: {', '.join(extra)}.")
    # Large enough for any sensible kernel, so a refusal is about the parameters.
    probe = np.full((128, 128, 3), 0.5, dtype=np.float32)
    cleaned: dict[str, dict] = {}
    for name in names:
        given = params.get(name) or {}
        if not isinstance(given, dict):
            raise Invalid(f"Parameters of {name} must be an object.")
        try:
            perturb.perturbation_apply(name, probe, **given)
        except (TypeError, ValueError) as exc:
            raise Invalid(f"{perturbation_label(name)}: {exc}") from None
        cleaned[name] = given
    return cleaned


def perturb_check(case_set: VHCaseSet, params: dict) -> int:
    """The perturbation stage's check: known perturbations and parameters, and cases."""
    perturbations_check(names=params.get("perturbations"), params=params.get("params"))
    _has_cases(case_set)
    return 0


def _has_cases(case_set: VHCaseSet) -> None:
    if not case_set.cases.exists():
        raise Invalid("The set has no test cases yet.")


def variants_perturb(
    case_set: VHCaseSet,
    *,
    perturbations: Sequence[str],
    params: dict | None = None,
    seed: int = 0,
    job_id: int | None = None,
    created_by=None,
    **_params,
) -> dict:
    """Apply common perturbations to the set's images: each result is a new Image derived from
    the original with ``{"op": name, "params": {...}}``, and a VHVariant per case. Images are
    processed once however many cases share them; cases that have the variant are skipped, so a
    re-run resumes."""
    params = perturbations_check(names=perturbations, params=params)
    names = sorted(set(perturbations), key=perturbation_sort_key)
    have = _done(case_set, names)
    by_image, images = _grouped(case_set, lambda case: case.image_id)
    total = len(by_image) * len(names)
    done = created = 0
    job_progress(job_id=job_id, done=0, total=total, message="Perturbing")
    new_images: set[int] = set()
    skipped: list[dict] = []
    for image_id, cases in by_image.items():
        todo = [n for n in names if any((c.pk, n) not in have for c in cases)]
        done += len(names) - len(todo)
        if not todo:
            continue
        image = images[image_id]
        array = assets.image_as_array(image)
        for name in todo:
            kwargs = dict(params.get(name, {}))
            if "seed" in perturb.PERTURBATIONS[name].defaults and "seed" not in kwargs:
                kwargs["seed"] = image_seed(seed, image)
            try:
                out, used = perturb.perturbation_apply(name, array, **kwargs)
            except ValueError as exc:
                # e.g. an image smaller than the blur kernel: reported, the others go on.
                skipped.append({"image": image.sha256, "perturbation": name, "error": str(exc)})
                done += 1
                continue
            derived, n = _variant_store(
                image,
                [c for c in cases if (c.pk, name) not in have],
                name=name,
                array=out,
                record=used,
                kind=VHVariant.Kind.COMMON,
                job_id=job_id,
                created_by=created_by,
            )
            new_images.add(derived.pk)
            created += n
            done += 1
        job_progress(job_id=job_id, done=done, message=f"{created} variants")
    assets.thumbnails_make(image_ids=list(new_images))
    return {
        "variants": created,
        "images": len(new_images),
        "perturbations": names,
        "skipped": skipped[:50],
    }


def branches_from_run(*, case_set: VHCaseSet, run) -> dict[int, bool]:
    """Eq. 1's branch per case from a model run: the original case (unperturbed, not negated)
    answered wrong → it triggers VH. Cases the run did not answer are left out."""
    cases = {item_id(c.external_id, ORIGINAL, negated=False): c for c in case_set.cases.all()}
    found: dict[int, bool] = {}
    rows = run.predictions.filter(item__item_id__in=list(cases)).values_list(
        "item__item_id", "item__data", "parsed_answer"
    )
    for iid, data, parsed in rows:
        found[cases[iid].pk] = parsed != data.get("answer")
    return found


def runs_for(case_set: VHCaseSet):
    """Model runs on the set's own published versions: the choices for Eq. 1's branch."""
    return (
        ModelRun.objects.filter(version__in=published_versions(recipe_for(case_set), case_set))
        .select_related("model", "version")
        .order_by("-created_at")
    )


def branches(case_set: VHCaseSet, branch: str, run_id: int | None) -> dict[int, bool]:
    """Eq. 1's branch (triggers VH or not) of every case of the set."""
    cases = list(case_set.cases.values_list("pk", "triggers_vh"))
    if branch == BRANCH_NONE:
        return {pk: False for pk, _ in cases}
    if branch == BRANCH_ALL:
        return {pk: True for pk, _ in cases}
    if branch == BRANCH_RUN:
        run = runs_for(case_set).filter(pk=run_id).first()  # the choices the page offers
        if run is None:
            raise Invalid("Choose a model run for the branch of Eq. 1.")
        found = branches_from_run(case_set=case_set, run=run)
        return {pk: found.get(pk, bool(vh)) for pk, vh in cases}
    return {pk: bool(vh) for pk, vh in cases}


def _attack_check(scorer: Scorer | None, method: str, branch: str, run_id, steps) -> None:
    if method not in ADVERSARIAL_METHODS:
        raise Invalid(f"Choose I-FGSM or PGD, not {method!r}.")
    if branch not in BRANCHES:
        raise Invalid(f"Unknown branch source {branch!r}.")
    if branch == BRANCH_RUN and not run_id:
        raise Invalid("Choose the model run whose answers decide Eq. 1's branch.")
    if scorer is None:
        raise Invalid("Choose a scorer: its vision tower is the encoder the attack runs against.")
    scorer_weights_check(scorer, Invalid)
    if steps is not None and (not isinstance(steps, int) or not 1 <= steps <= 5000):
        raise Invalid("Steps must be a whole number between 1 and 5000.")


def adversarial_check(case_set: VHCaseSet, params: dict) -> int:
    """The attack stage's check: the attack's settings, the model run (Eq. 1's branch from a
    run) on one of the set's versions, and cases."""
    scorer = Scorer.objects.filter(pk=params.get("scorer_id")).first()
    branch, run_id = params.setdefault("branch", BRANCH_CASE), params.get("run_id")
    _attack_check(scorer, params.get("method"), branch, run_id, params.get("steps"))
    if branch == BRANCH_RUN:
        branches(case_set, branch, run_id)  # the run must exist
    _has_cases(case_set)
    return 0


def _done(case_set: VHCaseSet, names: Sequence[str]) -> set[tuple[int, str]]:
    """(case, perturbation) of the variants the set has already."""
    done = VHVariant.objects.filter(case__case_set=case_set, perturbation__in=names)
    return set(done.values_list("case_id", "perturbation"))


def _grouped(case_set: VHCaseSet, key) -> tuple[dict, dict[int, Image]]:
    """The set's cases in position order grouped by ``key(case)`` (None: left out), and the
    images of those grouped by id."""
    groups: dict = defaultdict(list)
    images: dict[int, Image] = {}
    for case in case_set.cases.select_related("image").order_by("position"):
        if (group := key(case)) is not None:
            groups[group].append(case)
            images[case.image_id] = case.image
    return groups, images


class _Attack:
    """One attack run: the encoder at its input size, batches of images per branch."""

    def __init__(self, *, scorer: Scorer, method: str, steps, seed: int, job_id, created_by):
        # torch and the attack code are heavy: loaded only when an attack really runs.
        from curation import adversarial

        self.adversarial = adversarial
        self.encoder = adversarial.OpenClipEncoder(scorer_load(scorer).model)
        if self.encoder.image_size is None:
            raise Invalid(f"Scorer {scorer.label!r} does not say its input size.")
        self.size = int(self.encoder.image_size[0])
        self.scorer, self.method, self.seed = scorer, method, int(seed)
        self.overrides = {"steps": steps} if steps is not None else {}
        self.job_id, self.created_by = job_id, created_by
        self.new_images: set[int] = set()
        self.created = 0

    def steps(self, triggers: bool) -> int:
        """The attack steps of one image of the branch (its config's schedule)."""
        config = self.adversarial.AttackConfig.for_case(
            triggers_vh=triggers, method=self.method, **self.overrides
        )
        return int(config.steps)

    def batch(self, keys, groups, images, triggers: bool, on_step=None) -> None:
        """Attack one batch; ``on_step(k)`` hears each evaluation (k steps done)."""
        import torch

        adv = self.adversarial
        config = adv.AttackConfig.for_case(
            triggers_vh=triggers, method=self.method, **self.overrides
        )
        pixels = torch.stack(
            [adv.encoder_pixels(assets.image_as_array(images[k[0]]), size=self.size) for k in keys]
        )
        heard = None if on_step is None else (lambda k, _cosines, _delta: on_step(k))
        result = adv.attack(self.encoder, pixels, config, seed=self.seed, on_step=heard)
        for i, key in enumerate(keys):
            record = {
                **result.config,
                "seed": self.seed,
                "scorer": self.scorer.label,
                "scorer_id": self.scorer.pk,
                "size": self.size,
                "final_cosine": float(result.final_cosine[i]),
                "linf": float(result.linf[i]),
                "steps_run": int(result.steps_run[i]),
                "stop_reason": result.stop_reason[i],
            }
            derived, n = _variant_store(
                images[key[0]],
                groups[key],
                name=self.method,
                array=adv.array_from_pixels(result.adversarial[i]),
                record=record,
                kind=VHVariant.Kind.ADVERSARIAL,
                job_id=self.job_id,
                created_by=self.created_by,
                triggers_vh=triggers,
                final_cosine=record["final_cosine"],
                linf=record["linf"],
            )
            self.new_images.add(derived.pk)
            self.created += n


class _StepReport:
    """An attack batch's ``on_step``: the job's progress in attack steps, at most twice a
    second."""

    def __init__(self, job_id, before: int, images: int, steps: int, where: str) -> None:
        self.job_id, self.before, self.images, self.steps, self.where = (
            job_id,
            before,
            images,
            steps,
            where,
        )
        self.last = 0.0

    def __call__(self, k: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.5:
            return
        self.last = now
        message = f"Attacking: {self.where}, step {k} of {self.steps}"
        job_progress(job_id=self.job_id, done=self.before + self.images * k, message=message)


def variants_adversarial(
    case_set: VHCaseSet,
    *,
    scorer_id: int,
    method: str = "ifgsm",
    branch: str = BRANCH_CASE,
    run_id: int | None = None,
    steps: int | None = None,
    seed: int = 0,
    batch_size: int = 8,
    job_id: int | None = None,
    created_by=None,
    **_params,
) -> dict:
    """I-FGSM or PGD (``curation.adversarial``) against the scorer's image embedding, per case
    with the paper's settings for its branch (500 steps from δ = 0, minimising the cosine; or
    100 steps from ±5/255, maximising it). The adversarial image lives at the encoder's input
    resolution and is stored as a derived Image recording the config, seed, the final cosine and
    the ℓ∞ norm used. Batches are committed as they finish: a re-run resumes."""
    scorer = Scorer.objects.get(pk=scorer_id)
    _attack_check(scorer, method, branch, run_id, steps)
    have, branch_of = _done(case_set, [method]), branches(case_set, branch, run_id)

    def todo(case) -> tuple[int, bool] | None:  # cases without this attack, by (image, branch)
        return None if (case.pk, method) in have else (case.image_id, branch_of[case.pk])

    groups, images = _grouped(case_set, todo)
    keys = sorted(groups, key=lambda k: (k[1], k[0]))
    job_progress(job_id=job_id, done=0, total=len(keys), message="Loading the scorer")
    if not keys:
        return {"variants": 0, "images": 0, "method": method}
    attack = _Attack(
        scorer=scorer, method=method, steps=steps, seed=seed, job_id=job_id, created_by=created_by
    )
    # Progress counts attack steps (an image's steps × the images), so the bar moves within a
    # batch as well: a batch of 16 images at 500 steps is most of a run.
    plan = []
    for triggers in (False, True):
        chunk_keys = [k for k in keys if k[1] is triggers]
        for start in range(0, len(chunk_keys), batch_size):
            plan.append((triggers, chunk_keys[start : start + batch_size]))
    steps = {triggers: attack.steps(triggers) for triggers in (False, True)}
    total = sum(len(chunk) * steps[triggers] for triggers, chunk in plan)
    done = 0
    for number, (triggers, chunk) in enumerate(plan, start=1):
        where = f"batch {number} of {len(plan)}, {len(chunk)} images"
        report = _StepReport(job_id, done, len(chunk), steps[triggers], where)
        job_progress(job_id=job_id, done=done, total=total, message=f"Attacking: {where}")
        attack.batch(chunk, groups, images, triggers, on_step=report)
        done += len(chunk) * steps[triggers]
        job_progress(job_id=job_id, done=done, message=f"{attack.created} adversarial variants")
    assets.thumbnails_make(image_ids=list(attack.new_images))
    return {"variants": attack.created, "images": len(attack.new_images), "method": method}
