"""Terminal progress bars (``annotator.platform.terminal``): the job reports that move a card on
the pages draw a bar when a command runs the job in its own process; nothing is drawn on a
stream that is not a terminal, or with quiet. The commands' own tests (evaluate run / judge,
naturalbench, import_corpus, embed) check their bars on the ``terminal`` fixture (stderr)."""

from __future__ import annotations

import io

import pytest

from annotator.platform.jobs import job_task
from annotator.platform.models import Job
from annotator.platform.terminal import job_bars, quiet_of
from tests.annotator import stepped_jobs
from tests.conftest import Terminal


def _stepped(project, steps: int) -> Job:
    job = Job.objects.create(kind=stepped_jobs.STEPPED, params={"steps": steps}, project=project)
    stepped_jobs.step(job.pk, steps)
    return job


@pytest.mark.django_db
def test_a_job_run_in_this_process_draws_its_bar_to_the_final_count(project):
    terminal = Terminal()
    job = _stepped(project, 3)
    with job_bars(file=terminal):
        job_task(job.kind).apply(args=[job.pk])
    drawn = terminal.getvalue()
    assert f"job #{job.pk} tests.stepped" in drawn
    assert "Waiting for the test" in drawn
    assert "3/3" in drawn and "100%" in drawn and "Step 3 of 3" in drawn
    # after the block, jobs report to nobody
    later = _stepped(project, 1)
    job_task(later.kind).apply(args=[later.pk])
    assert f"job #{later.pk}" not in terminal.getvalue()


@pytest.mark.django_db
def test_no_bar_on_a_stream_that_is_not_a_terminal_or_when_quiet(project):
    pipe, terminal = io.StringIO(), Terminal()
    for file, quiet in ((pipe, False), (terminal, True)):
        job = _stepped(project, 2)
        with job_bars(file=file, quiet=quiet) as bars:
            job_task(job.kind).apply(args=[job.pk])
            bars.callback("direct")(1, 2, "half")
    assert pipe.getvalue() == "" and terminal.getvalue() == ""


def test_a_direct_callback_draws_a_bar_of_its_own():
    terminal = Terminal()
    with job_bars(file=terminal) as bars:
        progress = bars.callback("embed corpus #7")
        for done in range(5):
            progress(done, 4, f"{done} of 4")
    drawn = terminal.getvalue()
    assert "embed corpus #7" in drawn and "4/4" in drawn and "4 of 4" in drawn


def test_quiet_is_the_flag_or_verbosity_zero():
    assert quiet_of({"quiet": True, "verbosity": 1})
    assert quiet_of({"quiet": False, "verbosity": 0})
    assert not quiet_of({"quiet": False, "verbosity": 1})
    assert not quiet_of({})
