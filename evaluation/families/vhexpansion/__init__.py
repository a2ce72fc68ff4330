"""VHExpansion (METRICS.md Sec. 3): yes/no test cases and their negations; symmetric accuracy."""

from evaluation.registry import declare, register

# prompts registers the family's templates and their offline rules on import.
from . import demo, metric_rows, parse, plots, prompts, runner  # noqa: F401

FAMILY = register(
    declare(
        "vhexpansion",
        "VHExpansion",
        2,
        parse=parse,
        metric_rows=metric_rows,
        demo=demo,
        runner=runner,
        plots=plots,
    )
)
