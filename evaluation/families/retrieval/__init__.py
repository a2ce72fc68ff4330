"""NaturalBench-Retrieval (naturalbench.txt App. B): Winoground text, image and group scores."""

from evaluation.registry import PredictionOption, declare, register

from . import demo, metric_rows, parse, plots, release, runner

FAMILY = register(
    declare(
        "naturalbench_retrieval",
        "NaturalBench-Retrieval",
        1,
        parse=parse,
        metric_rows=metric_rows,
        demo=demo,
        runner=runner,
        plots=plots,
        release=release.read_release,
        prediction_option=PredictionOption(
            label="Score orientation",
            help=parse.OPTION_HELP,
            setting="score_orientation",
            detect=lambda content: parse.IMAGE_CAPTION,
        ),
    )
)
