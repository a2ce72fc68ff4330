"""The floor plan (issue 14), checked: files a person can read, one-way layers, generic evaluation.

The import contracts themselves are import-linter's (``[tool.importlinter]`` in pyproject.toml,
run by ``.ci/run`` as ``lint-imports``); these tests hold what import-linter cannot say.
"""

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from django.apps import apps as django_apps

from curation.recipes.framework import registry

ROOT = Path(__file__).resolve().parent.parent
APPS = ("annotator", "curation", "evaluation", "blindspot")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
LONG_REASON = "Long because:"
FAMILY_WORDS = re.compile(
    r"(?-i:Family\.)|family ==|natural ?bench|vlind|visit|vhexpansion|vhx|retrieval", re.IGNORECASE
)


def app_sources() -> list[Path]:
    return sorted(
        path
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts
    )


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_no_application_file_is_over_600_lines():
    long = {
        rel(p): n for p in app_sources() if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES
    }
    assert long == {}, f"Split these files by noun (limit {MAX_FILE_LINES} lines): {long}"


def test_long_functions_say_why():
    unexplained = []
    for path in app_sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = node.end_lineno - node.lineno + 1
            if length <= MAX_FUNCTION_LINES:
                continue
            doc = (ast.get_docstring(node) or "").strip()
            if not doc.startswith(LONG_REASON):
                unexplained.append(f"{rel(path)}:{node.lineno} {node.name} ({length} lines)")
    assert unexplained == [], (
        f"Functions over {MAX_FUNCTION_LINES} lines need a docstring starting "
        f"{LONG_REASON!r}: {unexplained}"
    )


def generic_evaluation_files() -> list[Path]:
    base = ROOT / "evaluation"
    skip = ("families", "metrics", "migrations")
    code = [p for p in base.rglob("*.py") if not set(p.relative_to(base).parts) & set(skip)]
    templates = [
        p for p in (ROOT / "templates" / "evaluation").rglob("*.html") if "families" not in p.parts
    ]
    return sorted(code + templates)


def test_generic_evaluation_names_no_family():
    hits = [
        f"{rel(path)}:{number}: {line.strip()}"
        for path in generic_evaluation_files()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if FAMILY_WORDS.search(line)
    ]
    assert hits == [], "Family-specific code belongs in evaluation/families/<key>/:\n" + "\n".join(
        hits
    )


def importlinter_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def test_import_contracts_list_no_exceptions():
    contracts = importlinter_config()["contracts"]
    assert contracts, "pyproject.toml declares no import contracts"
    for contract in contracts:
        assert not contract.get("ignore_imports"), contract["name"]
        assert not contract.get("unmatched_ignore_imports_alerting"), contract["name"]


ENTRY_POINTS = {"__init__", "apps", "urls", "api_urls", "admin", "management", "recipes"}


def test_every_curation_module_sits_in_a_layer():
    """The curation infrastructure layer is a list of modules: a new one must join it."""
    layers = next(c for c in importlinter_config()["contracts"] if c.get("id") == "layers")
    named = set(re.findall(r"curation\.(\w+)", " ".join(layers["layers"])))
    modules = {
        p.stem if p.is_file() else p.name
        for p in (ROOT / "curation").iterdir()
        if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))
    }
    loose = {
        m for m in modules - named - ENTRY_POINTS if not m.startswith("urls_") and m != "migrations"
    }
    assert loose == set(), f"Add these curation modules to a layer in pyproject.toml: {loose}"


@pytest.mark.slow
def test_import_contracts_are_kept():
    """The same command CI runs; here so that a failing contract also fails ``make test``."""
    linter = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run(
        [str(linter), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_a_relative_import_stays_inside_its_app():
    """One import style: relative inside an app (a recipe app is its own), absolute across apps,
    so a line says whether it crosses an app's border."""
    names = sorted((c.name for c in django_apps.get_app_configs()), key=len, reverse=True)

    def app_of(module: str) -> str | None:
        return next((n for n in names if module == n or module.startswith(f"{n}.")), None)

    leaving = []
    for path in app_sources():
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        package = module.removesuffix(".__init__") if path.name == "__init__.py" else module
        package = package if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*parts, *([node.module] if node.module else [])])
                if app_of(target) != app_of(module):
                    leaving.append(f"{rel(path)}:{node.lineno} {target}")
    assert leaving == [], f"Import these absolutely (they leave their app): {leaving}"


def test_no_module_imports_another_modules_private_names():
    """A name shared between modules is public (no leading underscore): seams are not cut by
    line ranges."""
    private = [
        f"{rel(path)}:{node.lineno} {alias.name}"
        for path in app_sources()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert private == [], f"Make these public where they are shared, or move them: {private}"


def test_recipes_publish_only_through_the_framework():
    """One publish shape: every recipe declares ``Publish`` and its versions are made by the
    framework's ``publish_object`` (NaturalBench's export stage calls it with the items of the
    JSONL it wrote), so no recipe module calls evaluation's ``version_create`` itself."""
    recipes = ROOT / "curation" / "recipes"
    offenders = [
        rel(path)
        for path in sorted(recipes.rglob("*.py"))
        if "framework" not in path.relative_to(recipes).parts
        and re.search(r"\bversion_create\b", path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    assert [r.key for r in registry.recipes() if r.publishes is None] == []
