"""A test-only job kind that mines synthetic embeddings in chunk jobs: the real
``curation.mine_chunk`` chunks and the real reduce (``curation.mining_chunks``), over rows 1…n
whose vectors a test stored in the cache (``embeddings_put``). A worker loads it with
``-I tests.curation.scale_jobs``."""

from __future__ import annotations

from celery import shared_task

from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job
from curation.mining_chunks import mining_collect, mining_fan_out
from curation.models import Scorer

MINE_SYNTHETIC = "tests.mine_synthetic"


def mine_synthetic_work(job: Job):
    scorer = Scorer.objects.get(pk=job.params["scorer_id"])
    ids = list(range(1, job.params["n"] + 1))
    mined = mining_collect(job=job, image_ids=ids, caption_ids=ids)
    if mined is None:
        return mining_fan_out(
            job=job,
            scorers=[scorer],
            image_ids=ids,
            caption_ids=ids,
            groups=ids,
            seed=job.params["seed"],
        )
    return {
        "digest": mined.digest(),
        "pairs": len(mined),
        "mismatched_pairs": mined.n_mismatched_pairs,
    }


@shared_task(name=MINE_SYNTHETIC, rerun_safe=True, **JOB_OPTIONS)
def mine_synthetic(self, job_id: int) -> None:
    run_job(self, job_id, mine_synthetic_work)
