"""Every string a crowdworker's workspace shows has a Hindi and a Chinese translation (issue 28).

The strings are found as ``makemessages`` finds them: the workspace's templates through
Django's own ``templatize`` (translate and blocktranslate tags, plurals included) and the
gettext calls of the Python modules whose messages reach the workspace. Each must have a
non-empty translation in the catalogs a page in that language reads (the compiled
locale/<lang>/LC_MESSAGES/django.mo, with Django's own for its words): a string added without
one fails here, naming it, instead of showing English in a Hindi page.
"""

import ast
import re
from pathlib import Path

import pytest
from django.utils.translation import trans_real
from django.utils.translation.template import templatize

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = ("hi", "zh-hans")
TEMPLATES = [
    *sorted((ROOT / "templates/annotator/workspace").glob("*.html")),
    *sorted((ROOT / "templates/annotator/kinds").glob("*.html")),
    ROOT / "templates/base.html",
    ROOT / "templates/registration/login.html",
]
MODULES = [
    ROOT / "annotator/views/workspace.py",
    ROOT / "annotator/services/undoing.py",
    ROOT / "annotator/services/submitting.py",
    ROOT / "annotator/services/claiming.py",
    ROOT / "annotator/services/leases.py",
    ROOT / "annotator/kinds/builtin.py",
]
GETTEXT = {"_", "_lazy", "gettext", "gettext_lazy", "ngettext", "ngettext_lazy"}
STRING = r"u'((?:[^'\\]|\\.)*)'"
CALL = re.compile(rf"\b(n?gettext)\({STRING}(?:, {STRING})?")


def _literal(text: str) -> str:
    return ast.literal_eval("'" + text + "'")


def template_msgids(path: Path) -> set[tuple[str, bool]]:
    """(msgid, plural) of every translatable string in a template."""
    source = templatize(path.read_text(encoding="utf-8"), origin=str(path))
    return {(_literal(m.group(2)), m.group(1) == "ngettext") for m in CALL.finditer(source)}


def module_msgids(path: Path) -> set[tuple[str, bool]]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in GETTEXT or not node.args:
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.add((first.value, node.func.id.startswith("ngettext")))
    return found


def catalog(language: str):
    """The merged catalog Django translates a page in ``language`` with."""
    return trans_real.translation(language)._catalog


def workspace_msgids() -> set[tuple[str, bool]]:
    found: set[tuple[str, bool]] = set()
    for path in TEMPLATES:
        found |= template_msgids(path)
    for path in MODULES:
        found |= module_msgids(path)
    return found


def test_the_scan_finds_the_workspace_strings():
    # The scan itself can fail: it must see plain, blocktranslate, plural and Python strings
    found = workspace_msgids()
    assert ("Skip", False) in found
    assert ("Undo last answer", False) in found
    assert any(plural for _msgid, plural in found)
    assert ("You have no answer to undo on this task.", False) in found
    assert len(found) > 100


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_workspace_string_is_translated(language):
    translations = catalog(language)
    missing = []
    for msgid, plural in sorted(workspace_msgids()):
        key = (msgid, 0) if plural else msgid
        if not translations.get(key):
            missing.append(msgid)
    assert not missing, f"{len(missing)} workspace string(s) untranslated in {language}: {missing}"
