"""The hunt's pages. Crowdworkers (``Recipe.workers``): the workspace (a pool image, or a caption
search of the pool; write a question and its answer), an item's page (the verdicts, polled by
htmx while the models answer; then the partner images; then the pair's verdict) and their own
items. Curators: the round's detail page is its dashboard (``detail_context``).

A worker reaches only the open rounds of their projects and only their own items; anything else
answers 404 like a missing page. Every POST changes one thing through ``candidates`` and
redirects (htmx: the item's fragment)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _

from annotator.platform import wakeups
from annotator.platform.errors import ServiceError
from annotator.platform.forms import ID_MAX
from curation.models import Image, LLMProvider, Sample
from evaluation.families.naturalbench import layout as nb
from evaluation.plots import Series, bar_chart

from . import candidates, checks, partners, rows, selectors
from . import criterion as c
from .asking import streamed_answers, wake_name
from .models import HuntCandidate, HuntRound
from .rounds import candidates_of, rounds_open_for
from .standins import STANDIN_LABEL

RUNNING = (HuntCandidate.State.ASKING, HuntCandidate.State.PAIRING)
SEARCH_LIMIT = 9
WAIT_S = 10.0  # a long-poll returns after this at the latest, and the page asks again
POLL = "every 1s"  # without wake-ups (the demo: jobs run in the web process)


def targets_of(round_: HuntRound) -> list:
    """The round's targets with their providers, read once per request (kept on the round)."""
    cached = getattr(round_, "_targets_read", None)
    if cached is None:
        cached = round_._targets_read = rows.targets_with_providers(round_.pk)
    return cached


def target_names(round_: HuntRound, *, for_worker: bool) -> dict[str, str]:
    """Target alias -> what a page shows: the alias alone when the round hides names from
    workers; else "alias · provider", stand-ins always labelled as such."""
    names = {}
    for target in targets_of(round_):
        label = target.alias
        if not (for_worker and round_.hide_targets):
            label = f"{target.alias} · {target.provider.name}"
        if target.provider.kind == LLMProvider.Kind.OFFLINE and "stand-in" not in label.casefold():
            label = f"{label} ({STANDIN_LABEL})"  # unless its name says so already
        names[target.alias] = label
    return names


def blind_label(round_: HuntRound) -> str:
    if round_.blind_id is None:
        return _("Blind model: offline blind baseline (question text only)")
    return _("Blind model: %(name)s (question text only)") % {"name": round_.blind.name}


# --------------------------------------------------------------------------------------------
# crowdworkers
# --------------------------------------------------------------------------------------------
def _image_or_none(round_: HuntRound, raw: str | None) -> Image | None:
    try:
        pk = int(raw or "")
    except ValueError:
        return None
    if not 1 <= pk <= ID_MAX:
        return None
    in_pool = Sample.objects.filter(corpus_id=round_.corpus_id, image_id=pk)
    return Image.objects.filter(pk=pk).first() if in_pool.exists() else None


def workspace(request: HttpRequest, round_: HuntRound) -> HttpResponse:
    """A pool image to hunt on (``?image=``, or the next random one), or caption search
    results (``?q=``), and the question form."""
    query = (request.GET.get("q") or "").strip()[:100]
    found = partners.search(round_, query, limit=SEARCH_LIMIT) if query else []
    image = _image_or_none(round_, request.GET.get("image"))
    if image is None and not query:
        image = partners.next_image(round_, request.user)
    mine = candidates_of(request.user, round_)
    context = {
        "round": round_,
        "image": image,
        "query": query,
        "found": found,
        "written": mine.count(),
        "points": selectors.points_of(request.user, round_),
        "open_item": mine.exclude(
            state__in=[
                HuntCandidate.State.NOT_BLINDSPOT,
                HuntCandidate.State.VERIFYING,
                HuntCandidate.State.VALIDATED,
                HuntCandidate.State.REJECTED,
            ]
        ).first(),
        "blind_label": blind_label(round_),
        "targets": target_names(round_, for_worker=True).values(),
        "two_option": round_.question_type == HuntRound.QuestionType.TWO_OPTION,
    }
    return render(request, "hunt/work.html", context)


def submit(request: HttpRequest, round_: HuntRound) -> HttpResponse:
    try:
        candidate = candidates.candidate_submit(
            round_=round_,
            worker=request.user,
            image_id=request.POST.get("image"),
            question=request.POST.get("question", ""),
            answer=request.POST.get("answer", ""),
            options=(request.POST.get("option_a", ""), request.POST.get("option_b", "")),
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
        context = {
            "round": round_,
            "image": _image_or_none(round_, request.POST.get("image")),
            "question": request.POST.get("question", ""),
            "answer": request.POST.get("answer", ""),
            "option_a": request.POST.get("option_a", ""),
            "option_b": request.POST.get("option_b", ""),
            "two_option": round_.question_type == HuntRound.QuestionType.TWO_OPTION,
            "error": exc.message,
            "written": candidates_of(request.user, round_).count(),
            "points": selectors.points_of(request.user, round_),
            "blind_label": blind_label(round_),
            "targets": target_names(round_, for_worker=True).values(),
        }
        return render(request, "hunt/work.html", context, status=exc.status)
    return redirect("hunt-item", round_.pk, candidate.pk)


def _mine_or_404(request: HttpRequest, round_: HuntRound, candidate_id: int) -> HuntCandidate:
    # candidates_of(…).select_related("image", "partner", "job"), hand-written (``rows``): the
    # long-poll reads it on every request
    candidate = rows.candidate_of_worker(round_.pk, request.user.pk, candidate_id)
    if candidate is None:
        raise Http404
    candidate.round = round_  # read once, by the page's lookup
    return candidates.candidate_settle(candidate)  # a job that died: failed, ask again


def verdict_table(round_: HuntRound, candidate: HuntCandidate, answers=None) -> dict:
    """The answers as the item's page shows them: a column per slot asked so far (first image
    and question first), a row per target then the blind model; each cell the answer or None.
    ``answers``: the candidate's as read already (a later one of a slot wins)."""
    names = target_names(round_, for_worker=True)
    wanted = [
        (_("Question 1, your picture"), c.slot_of(0, "first", candidate.answer)),
        (_("Question 1, partner"), c.slot_of(0, "partner", candidate.answer)),
        (_("Question 2, your picture"), c.slot_of(1, "first", candidate.answer)),
        (_("Question 2, partner"), c.slot_of(1, "partner", candidate.answer)),
    ]
    aliases = {t.pk: t.alias for t in targets_of(round_)}
    cells: dict[tuple, object] = {}
    for answer in rows.answers_of(candidate.pk) if answers is None else answers:
        cells[(aliases.get(answer.target_id, ""), answer.slot)] = answer
    asked = {slot for _who, slot in cells}
    columns = [
        {
            "label": label,
            "slot": slot,
            "truth": checks.label(round_.question_type, c.GROUND_TRUTH[slot]),
        }
        for label, slot in wanted
        if slot in asked or (slot == wanted[0][1])
    ]
    lines = [
        {
            "name": name,
            "blind": False,
            "cells": [cells.get((alias, col["slot"])) for col in columns],
        }
        for alias, name in names.items()
    ]
    lines.append(
        {
            "name": blind_label(round_),
            "blind": True,
            "cells": [cells.get(("", col["slot"])) for col in columns],
        }
    )
    return {"columns": columns, "rows": lines}


def _options(text: str) -> dict | None:
    """A two-option question's parts for the page: {"text", "a", "b"} (None: not written)."""
    parts = nb.mc_options(text or "")
    return None if parts is None else dict(zip(("text", "a", "b"), parts, strict=True))


def item_context(
    round_: HuntRound, candidate: HuntCandidate, *, points: bool = True, answers=None
) -> dict:
    """The item page's context; ``points=False`` for the status fragment (it shows none);
    ``answers`` as for ``verdict_table``."""
    order = c.image_order(candidate.answer)
    flipped = c.A1 if candidate.answer == c.A0 else c.A0
    two_option = round_.question_type == HuntRound.QuestionType.TWO_OPTION
    slots = {
        "first_q0": c.slot_of(0, "first", candidate.answer),
        "partner_q0": c.slot_of(0, "partner", candidate.answer),
        "first_q1": c.slot_of(1, "first", candidate.answer),
        "partner_q1": c.slot_of(1, "partner", candidate.answer),
    }
    neighbours = []
    if candidate.state == HuntCandidate.State.PARTNER:
        proposed = (candidate.neighbours or {}).get("images", [])
        by_id = Image.objects.in_bulk([n["id"] for n in proposed])
        neighbours = [
            {"image": by_id[n["id"]], "score": n["score"], "key": k}
            for k, n in enumerate(proposed, start=1)
            if n["id"] in by_id
        ]
    return {
        "round": round_,
        "item": candidate,
        "running": candidate.state in RUNNING,
        "long_poll": wakeups.enabled(),
        "poll": POLL,
        "table": verdict_table(round_, candidate, answers),
        "slots": slots,
        "order": order,
        "targets": list(target_names(round_, for_worker=True).values()),
        "blind_label": blind_label(round_),
        "first_answer": checks.label(round_.question_type, candidate.answer),
        "flipped_answer": checks.label(round_.question_type, flipped),
        "two_option": two_option,
        "options": _options(candidate.question) if two_option else None,
        "options_1": _options(candidate.question_1) if two_option else None,
        "neighbours": neighbours,
        "method": (candidate.neighbours or {}).get("method", ""),
        "points": selectors.points_of(candidate.worker_id, round_) if points else None,
    }


def item(request: HttpRequest, round_: HuntRound, candidate_id: int) -> HttpResponse:
    """An item's page; ``?part=status`` (htmx, while the models answer) its status, and with
    ``&wait=1`` a long-poll that returns when the job wakes the item (or after ``WAIT_S``)."""
    candidate = _mine_or_404(request, round_, candidate_id)
    status = request.GET.get("part") == "status"
    template = "hunt/_item.html" if status else "hunt/item.html"
    if request.GET.get("wait") and candidate.state in RUNNING:
        # A long-poll. Everything the page shows is read before waiting (the models are
        # answering meanwhile); answers the job streams with its wake-up are added as they
        # are, anything else it says (a verdict, a failure) is read afresh.
        answers = rows.answers_of(candidate.pk)
        context = item_context(round_, candidate, points=not status, answers=answers)
        woken = wakeups.wait_for(wake_name(candidate.pk), WAIT_S)
        streamed = None if woken is None else streamed_answers(candidate, woken)
        if streamed is not None:
            context["table"] = verdict_table(round_, candidate, answers + streamed)
        elif woken is not None:
            candidate = _mine_or_404(request, round_, candidate_id)
            context = item_context(round_, candidate, points=not status)
        return render(request, template, context)
    return render(request, template, item_context(round_, candidate, points=not status))


def partner(request: HttpRequest, round_: HuntRound, candidate_id: int) -> HttpResponse:
    candidate = _mine_or_404(request, round_, candidate_id)
    try:
        candidates.candidate_pair(
            candidate=candidate,
            worker=request.user,
            partner_id=request.POST.get("partner"),
            question_1=request.POST.get("question_1", ""),
            options_1=(request.POST.get("option_a_1", ""), request.POST.get("option_b_1", "")),
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
        context = item_context(round_, candidate)
        context.update(
            error=exc.message,
            question_1=request.POST.get("question_1", ""),
            option_a_1=request.POST.get("option_a_1", ""),
            option_b_1=request.POST.get("option_b_1", ""),
            posted=True,
        )
        return render(request, "hunt/item.html", context, status=exc.status)
    return redirect("hunt-item", round_.pk, candidate.pk)


def again(request: HttpRequest, round_: HuntRound, candidate_id: int) -> HttpResponse:
    candidate = _mine_or_404(request, round_, candidate_id)
    try:
        candidates.candidate_ask_again(candidate=candidate, worker=request.user)
    except ServiceError as exc:
        messages.error(request, exc.message)
    return redirect("hunt-item", round_.pk, candidate.pk)


def mine(request: HttpRequest, round_: HuntRound) -> HttpResponse:
    """The worker's own items in the round, newest first, with their states and points."""
    items = candidates_of(request.user, round_).select_related("image", "partner")[:200]
    return render(
        request,
        "hunt/mine.html",
        {"round": round_, "items": items, "points": selectors.points_of(request.user, round_)},
    )


def home_context(user) -> dict:
    """The crowdworker home page's card: the open rounds of their projects."""
    rounds = list(rounds_open_for(user)[:20])
    if not rounds:
        return {}
    return {"rounds": [{"round": r, "url": reverse("hunt-work", args=[r.pk])} for r in rounds]}


# --------------------------------------------------------------------------------------------
# curators: the round's detail page is its dashboard
# --------------------------------------------------------------------------------------------
def fooling_plot(round_: HuntRound) -> str:
    labels, rates = selectors.fooling_over_time(round_)
    if not labels:
        return ""
    names = target_names(round_, for_worker=False)
    series = [Series(names.get(alias, alias), values) for alias, values in rates.items()]
    return bar_chart(
        labels,
        series,
        title=_("Fooling rate per target, by day (first image)"),
        y_label=_("share of answers wrong (%)"),
        y_max=1.0,
    )


def detail_context(request: HttpRequest, round_: HuntRound, base: dict) -> dict:
    names = target_names(round_, for_worker=False)
    rates = selectors.fooling_rates(round_)
    for row in rates:
        row["name"] = names.get(row["alias"], row["alias"])
    return {
        "rates": rates,
        "plot": fooling_plot(round_),
        "blind": selectors.blind_shares(round_),
        "people": selectors.people(round_),
        "hardest": selectors.hardest(round_),
        "targets": names.values(),
        "blind_label": blind_label(round_),
    }
