"""NaturalBench-Retrieval (naturalbench.txt App. B): Winoground text, image and group scores."""

from evaluation.registry import declare, register

from . import demo, parse, plots, rows, runner

FAMILY = register(
    declare(
        "naturalbench_retrieval",
        "NaturalBench-Retrieval",
        1,
        parse=parse,
        rows=rows,
        demo=demo,
        runner=runner,
        plots=plots,
    )
)
