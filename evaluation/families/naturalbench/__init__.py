"""NaturalBench (METRICS.md Sec. 1): 2 images × 2 questions per sample; Acc, Q-, I-, G-Acc."""

from evaluation.registry import declare, register

# prompts registers the family's templates and their offline rules on import.
from . import demo, metric_rows, parse, plots, prompts, release, runner  # noqa: F401

FAMILY = register(
    declare(
        "naturalbench",
        "NaturalBench",
        0,
        parse=parse,
        metric_rows=metric_rows,
        demo=demo,
        runner=runner,
        plots=plots,
        release=release.read_release,
    )
)
