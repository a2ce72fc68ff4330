"""The annotation engine's media prefix: answer uploads, readable by the queue's project."""

from __future__ import annotations

import re

from .models import TaskQueue
from .platform.files import media_reader
from .platform.scoping import projects_for

_ANSWER_UPLOAD = re.compile(r"[1-9][0-9]{0,17}")


@media_reader("uploads")
def _member_of_the_queues_project(user, parts: list[str]) -> bool:
    """``uploads/<queue id>/<task id>/<file>``: an image a crowdworker attached to an answer,
    for the members of the queue's project (reviewers, curators, researchers) and admins."""
    if len(parts) != 4 or not _ANSWER_UPLOAD.fullmatch(parts[1]):
        return False
    return TaskQueue.objects.filter(pk=int(parts[1]), project__in=projects_for(user)).exists()
