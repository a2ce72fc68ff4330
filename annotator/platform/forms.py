"""Form pieces the pages of every app share."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core import validators
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models import Model
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy

from . import structured


class FileOrTextForm(forms.Form):
    """A file upload, or the same content pasted: one of the two is required. A subclass names
    the two fields (``file_label``, ``text_label``), sets the text box's ``rows`` and the message
    for neither (``missing``)."""

    file_label = gettext_lazy("File")
    text_label = gettext_lazy("…or paste the content")
    rows = 6
    missing = gettext_lazy("Choose a file or paste its content.")

    file = forms.FileField(required=False)
    text = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"class": "mono", "spellcheck": "false"}),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["file"].label = self.file_label
        self.fields["text"].label = self.text_label
        self.fields["text"].widget.attrs["rows"] = self.rows

    def clean(self):
        data = super().clean()
        if not data.get("file") and not (data.get("text") or "").strip():
            raise forms.ValidationError(self.missing)
        return data


ARCHIVE_TYPES = ".zip,.tar,.gz,.tgz,.bz2,.xz"


def upload_field(*, accept: str, label, help_text="", required: bool = True) -> forms.FileField:
    """A file field whose file picker offers the ``accept`` types (e.g. ARCHIVE_TYPES)."""
    return forms.FileField(
        required=required,
        label=label,
        help_text=help_text,
        widget=forms.ClearableFileInput(attrs={"accept": accept}),
    )


def json_text(raw: str) -> Any:
    """A form field's JSON through the shared parser (depth, size, NaN): a ValidationError on
    the field otherwise, so the page shows the form again with the message under the field."""
    try:
        return structured.loads(raw, max_bytes=structured.max_field_bytes())
    except structured.StructuredTextError as exc:
        raise forms.ValidationError(capfirst(exc.message) + ".") from None


# The range of a PostgreSQL ``integer`` column: a number a person sends that is stored, or used
# as a job parameter stored in one (a seed, a limit), stays inside it.
INT_MIN, INT_MAX = BaseDatabaseOperations.integer_field_ranges["IntegerField"]
ID_MAX = BaseDatabaseOperations.integer_field_ranges["BigAutoField"][1]  # a row's id


def model_range(model: type[Model], name: str) -> tuple[int, int]:
    """The whole numbers a model's integer field stores: its column type's range, narrowed by
    the field's own Min/MaxValueValidators."""
    field = model._meta.get_field(name)
    low, high = BaseDatabaseOperations.integer_field_ranges[field.get_internal_type()]
    for validator in field.validators:
        if isinstance(validator, validators.MinValueValidator):
            low = max(low, validator.limit_value)
        elif isinstance(validator, validators.MaxValueValidator):
            high = min(high, validator.limit_value)
    return low, high


def model_bounds(model: type[Model], name: str, *, low: int | None = None) -> dict[str, int]:
    """``min_value`` / ``max_value`` keywords of a form or serializer field that feeds the model
    field ``name`` (``low`` narrows the lower end, e.g. 0 for a seed)."""
    lowest, highest = model_range(model, name)
    return {"min_value": lowest if low is None else max(low, lowest), "max_value": highest}
