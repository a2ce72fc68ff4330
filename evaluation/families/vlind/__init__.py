"""VLind-Bench (METRICS.md Sec. 4): counterfactual contexts and images; S_CK … S_LP, CB, LP."""

from evaluation.registry import PredictionOption, declare, register

# prompts registers the family's templates and their offline rules on import.
from . import demo, metric_rows, parse, plots, prompts, runner  # noqa: F401

FAMILY = register(
    declare(
        "vlind",
        "VLind-Bench",
        3,
        parse=parse,
        metric_rows=metric_rows,
        demo=demo,
        runner=runner,
        plots=plots,
        prediction_option=PredictionOption(
            label="VLind model id", help="the {mid} of the '{mid}_pred_*' keys"
        ),
    )
)
