"""Form pieces the pages of every app share."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy


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
