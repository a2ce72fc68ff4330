"""Every change to evaluation data goes through these functions; each one is atomic.

Imports are all-or-nothing: rows are parsed and validated (with line numbers) before anything is
written, and a published (frozen) version never changes its items. Split by noun: benchmarks
and versions, runs and metrics, imports, pairwise judgments.
"""

from .benchmarks import (
    benchmark_get_or_create,
    benchmark_version_create,
    clean_name,
    item_delete,
    version_create,
    version_items_add,
    version_publish,
)
from .imports import (
    IMPORT_JOB,
    import_enqueue,
    import_run,
    import_validate,
    judgments_import_start,
    run_import_start,
    version_import_start,
)
from .judgments import (
    JUDGMENTS_JOB,
    check_set_label,
    judge_start,
    judgment_record,
    judgment_set_create,
    judgment_set_finish,
    judgment_set_import,
    judgments_compute,
    judgments_compute_enqueue,
    match_judgments,
    require_pairwise,
)
from .runs import (
    COMPUTE_JOB,
    compute_enqueue,
    metrics_compute,
    predictions_validate,
    run_import,
    run_inputs,
)

__all__ = [
    "COMPUTE_JOB",
    "IMPORT_JOB",
    "JUDGMENTS_JOB",
    "benchmark_get_or_create",
    "benchmark_version_create",
    "check_set_label",
    "clean_name",
    "compute_enqueue",
    "import_enqueue",
    "import_run",
    "import_validate",
    "item_delete",
    "judge_start",
    "judgment_record",
    "judgment_set_create",
    "judgment_set_finish",
    "judgment_set_import",
    "judgments_compute",
    "judgments_compute_enqueue",
    "judgments_import_start",
    "match_judgments",
    "metrics_compute",
    "predictions_validate",
    "require_pairwise",
    "run_import",
    "run_import_start",
    "run_inputs",
    "version_create",
    "version_import_start",
    "version_items_add",
    "version_publish",
]
