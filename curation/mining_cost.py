"""The expected time of Eq. 1 mining, exact or approximate (issue 25): the cost model the
NaturalBench mining page shows before a curator starts a mining job.

Exact mining (``curation.mining``, naturalbench.txt Sec. 3 step 1, Eq. 1) is the N² products
S = I·Tᵀ of every scorer (2·N²·D floating-point operations per scorer) at the bare product speed:
``BLINDSPOT_MINING_S_PER_GFLOP`` seconds per GFLOP on one worker, the figure
``benchmarks/scale.py`` prints first ("cost model"); chunk jobs divide it by the workers.
Approximate mining (``curation.approx_mining``) costs ``BLINDSPOT_APPROX_S_PER_SAMPLE`` per sample
and scorer at ``BLINDSPOT_APPROX_COST_N`` samples, and a sample's cost grows as
N^``BLINDSPOT_APPROX_GROWTH`` (an inverted-file index of ~4·√N lists: each query scans more as N
grows); it finds the share ``BLINDSPOT_APPROX_RECALL`` of the exact mismatches. All are measured by
``benchmarks/scale.py --approx`` (the recall at ``BLINDSPOT_APPROX_RECALL_N`` samples, k =
``approx_mining.DEFAULT_K``; the growth between that N and the cost's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

DEFAULT_DIM = 768  # a scorer not loaded yet: ViT-L-14's embedding size


@dataclass(frozen=True)
class MiningEstimate:
    n: int
    dims: tuple[int, ...]
    gflop: float  # exact mining's products
    exact_s: float  # one worker
    workers: int  # the chunk jobs exact mining is split into (at most as many workers help)
    approx_s: float
    recall: float
    recall_n: int
    k: int

    @property
    def exact_parallel_s(self) -> float:
        return self.exact_s / max(1, self.workers)

    @property
    def approx_faster(self) -> bool:
        return self.approx_s < self.exact_parallel_s


def mining_estimate(n: int, dims: Sequence[int | None], k: int) -> MiningEstimate:
    """The cost model for ``n`` samples and scorers of embedding sizes ``dims``."""
    dims = tuple(int(d or DEFAULT_DIM) for d in dims) or (DEFAULT_DIM,)
    gflop = sum(2 * n * n * d for d in dims) / 1e9
    return MiningEstimate(
        n=n,
        dims=dims,
        gflop=gflop,
        exact_s=gflop * float(settings.BLINDSPOT_MINING_S_PER_GFLOP),
        workers=max(1, int(settings.BLINDSPOT_MINING_CHUNKS)),
        approx_s=n * len(dims) * approx_s_per_sample(n),
        recall=float(settings.BLINDSPOT_APPROX_RECALL),
        recall_n=int(settings.BLINDSPOT_APPROX_RECALL_N),
        k=k,
    )


def approx_s_per_sample(n: int) -> float:
    """Approximate mining's seconds per sample and scorer at n samples (the measured power law)."""
    at = float(settings.BLINDSPOT_APPROX_S_PER_SAMPLE)
    ratio = max(1, n) / max(1, int(settings.BLINDSPOT_APPROX_COST_N))
    return at * ratio ** float(settings.BLINDSPOT_APPROX_GROWTH)


def duration(seconds: float) -> str:
    """A rough human duration: "under a second", "40 s", "12 min", "3.5 h", "2.1 days"."""
    if seconds < 1:
        return "under a second"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
