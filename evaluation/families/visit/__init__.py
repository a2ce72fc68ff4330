"""VisIT-Bench (METRICS.md Sec. 2): instruction following, rated by pairwise judgments."""

from evaluation.metrics import visit
from evaluation.registry import Pairwise, PredictionOption, declare, register

# prompts registers the family's templates and their offline rules on import.
from . import board, exports, judge, judgments, metric_rows, pairwise, parse, plots, prompts, runner  # noqa: F401

PAIRWISE = Pairwise(
    parse=judgments.parse,
    item_key=parse.item_key,
    row_key=judgments.row_key,
    reference_player=judgments.OFFICIAL_REFERENCE_PLAYER,
    order_winner=visit.order_winner,
    aggregate=visit.aggregate_two_orders,
    formats=judgments.FORMATS,
    compute=pairwise,
    judge=judge.LLM_JUDGE,
    strata=visit.STRATA,
    agreement_plot=plots.agreement_plot,
    export=exports.head2head_export,
    reference_label=board.reference_label,
)

FAMILY = register(
    declare(
        "visit",
        "VisIT-Bench",
        4,
        parse=parse,
        metric_rows=metric_rows,
        runner=runner,
        plots=plots,
        # The official judgment files name a model by its output column (make_pairs.py).
        prediction_option=PredictionOption(
            label="VisIT output column",
            help="the CSV column with the model's responses",
            setting="output_column",
            detect=parse.prediction_column,
        ),
        pairwise=PAIRWISE,
        version_context=board.version_context,
    )
)
