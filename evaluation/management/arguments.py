"""The arguments of ``manage.py evaluate``: what a family offers (its prediction option, a scorer,
run options, pairwise judgments) comes from the registry, so no family is named here."""

from __future__ import annotations

import argparse
from functools import partial

from annotator.platform.terminal import add_quiet_argument
from evaluation.registry import LLMRunner, ScorerRunner, choices, families


def _pairwise_labels() -> str:
    return " / ".join(f.label for f in families() if f.pairwise is not None)


def _import_arguments(add) -> None:
    p = add("import-version", help="a benchmark version from its dataset file")
    p.add_argument("family", choices=[key for key, _ in choices()])
    p.add_argument("file")
    p.add_argument("--project", required=True, help="slug of the benchmark's project")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--label", default="v1")
    p.add_argument("--draft", action="store_true", help="do not publish (freeze) yet")
    p = add("import-run", help="a model's predictions on a version")
    p.add_argument("version", type=int)
    p.add_argument("file")
    p.add_argument("--model", required=True)
    p.add_argument("--label", default="")
    options = [f.prediction_option.label for f in families() if f.prediction_option]
    p.add_argument("--option", default="", help=" / ".join(options))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--skip-unmatched",
        action="store_true",
        help="tolerant matching: skip rows that match no item and report them with their line "
        "numbers (default: all or nothing)",
    )
    p.add_argument("--no-compute", action="store_true")
    p.add_argument("--rounds", type=int, default=1000)


def _read_arguments(add) -> None:
    p = add("compute", help="compute the metrics of a run")
    p.add_argument("run", type=int)
    p.add_argument("--rounds", type=int, default=1000)
    p.add_argument("--no-text-metrics", action="store_true")
    p = add("export-predictions", help="a run's predictions in the paper's published layout")
    p.add_argument("run", type=int)
    p.add_argument("--out", default="", help="file to write (default: print)")
    p = add("leaderboard", help="print a version's leaderboard")
    p.add_argument("version", type=int)
    p.add_argument("--sort", default="")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")


def _judgment_arguments(add) -> None:
    p = add("import-judgments", help=f"{_pairwise_labels()} judge battles or crowd votes")
    p.add_argument("version", type=int)
    p.add_argument("file")
    p.add_argument("--kind", choices=["llm", "human"], required=True)
    p.add_argument("--label", required=True)
    p.add_argument("--judge", default="")
    p.add_argument("--with-reference", action="store_true")
    p.add_argument(
        "--reference-player", default="", help="default: the family's (the official files' name)"
    )
    p.add_argument(
        "--alias", action="append", default=[], help="rename a player: 'name in file=new'"
    )
    p.add_argument("--no-compute", action="store_true")
    p.add_argument("--no-text-metrics", action="store_true")
    p.add_argument("--rounds", type=int, default=1000)
    p = add("judgments", help="ratings and agreement of a version's judgment sets")
    p.add_argument("version", type=int)
    p.add_argument("--compute", action="store_true", help="recompute first")
    p.add_argument("--no-text-metrics", action="store_true")
    p.add_argument("--rounds", type=int, default=1000)
    p = add("rank-correlation", help="Spearman rho between two rankings")
    p.add_argument("version", type=int)
    p.add_argument("a", nargs="?", default="")
    p.add_argument("b", nargs="?", default="")


def run_option_names() -> list[str]:
    """Every yes/no run option some family's runner accepts, in family order."""
    names: list[str] = []
    for f in families():
        if isinstance(f.runner, LLMRunner):
            names += [o.name for o in f.runner.options.fields if o.name not in names]
    return names


def _run_arguments(add) -> None:
    p = add("run", help="answer a version's items with a model (LLM gateway)")
    p.add_argument("version", type=int)
    p.add_argument(
        "--provider",
        default="",
        help="LLM provider name or id (default: the default provider, else the offline "
        "blind baseline, which answers from the question text alone)",
    )
    scored = ", ".join(f.label for f in families() if isinstance(f.runner, ScorerRunner))
    p.add_argument("--scorer", type=int, help=f"scorer id ({scored})")
    p.add_argument("--model-name", default="")
    p.add_argument("--label", default="")
    p.add_argument("--limit", type=int)
    p.add_argument("--seed", type=int, default=0)
    for name in run_option_names():
        p.add_argument("--" + name.replace("_", "-"), action="store_true")
    p.add_argument("--rounds", type=int, default=1000)
    p.add_argument("--no-text-metrics", action="store_true")
    judges = [f.pairwise.judge for f in families() if f.pairwise and f.pairwise.judge]
    p = add("judge", help=f"{_pairwise_labels()} LLM judge, both orders (App. F)")
    p.add_argument("version", type=int)
    p.add_argument("--label", default="LLM judge")
    p.add_argument("--model", default="", help="draw pairs for this run's model")
    p.add_argument("--pairs", default="", help="JSONL of {instance_id, a_model, b_model}")
    p.add_argument("--provider", default="")
    p.add_argument("--instances", type=int, default=judges[0].default_instances if judges else 0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-opponents", action="store_true")
    p.add_argument("--with-reference", action="store_true")
    p.add_argument("--rounds", type=int, default=1000)
    p.add_argument("--no-text-metrics", action="store_true")


def add_arguments(parser) -> None:
    """Every action of ``manage.py evaluate`` and its options; each takes ``--user``."""
    person = argparse.ArgumentParser(add_help=False)
    person.add_argument(
        "--user",
        default="",
        help="act as this person: only their projects and what their role allows "
        "(default: the operator, who reaches every project)",
    )
    add_quiet_argument(person)
    sub = parser.add_subparsers(dest="action", required=True)
    add = partial(sub.add_parser, parents=[person])
    _import_arguments(add)
    _read_arguments(add)
    _judgment_arguments(add)
    _run_arguments(add)
    add("list", help="benchmarks, versions and runs")
    p = add("demo", help="synthetic versions and runs for every family")
    p.add_argument("--project", required=True, help="slug of the project to fill")
