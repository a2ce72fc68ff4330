"""VHExpansion (METRICS.md Sec. 3): yes/no test cases and their negations; symmetric accuracy."""

from evaluation.registry import declare, register

# prompts registers the family's templates and their offline rules on import.
from . import demo, parse, plots, prompts, rows, runner  # noqa: F401

FAMILY = register(
    declare(
        "vhexpansion",
        "VHExpansion",
        2,
        parse=parse,
        rows=rows,
        demo=demo,
        runner=runner,
        plots=plots,
    )
)
