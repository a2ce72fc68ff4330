"""Form bases of the recipe pages: shape only; the recipe's services check the meaning.

- ``RecipeForm``: a recipe's new form and settings form. Built with ``project=`` (and ``obj=``
  on the settings page and the detail page), so querysets can be scoped.
- ``NameForm``: a new form's name and description (a recipe's own fields follow them).
- ``StageForm``: the extra POST fields of a stage button, turned into ``Job.params``.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform.forms import INT_MAX
from annotator.platform.views import first_error

from .settings import settings_of


class RecipeForm(forms.Form):
    def __init__(self, *args: Any, project=None, obj=None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project
        self.obj = obj

    @classmethod
    def initial_new(cls, project) -> dict:
        """Initial values of the new page."""
        return {}

    @classmethod
    def initial_for(cls, obj) -> dict:
        """Initial values of the settings form: the object's current settings (the value of each
        of the form's fields on the object, many-to-many fields as lists)."""
        return settings_of(obj, cls.base_fields)

    def service_data(self) -> dict:
        """What the recipe's ``create`` / ``update`` receive as keywords."""
        return dict(self.cleaned_data)

    def invalid_message(self) -> str:
        """The one-line message of an invalid settings POST made from the detail page."""
        return _("The settings are not valid: %(e)s") % {"e": first_error(self)}


def count_field(
    label, help_text="", *, low: int = 1, high: int = INT_MAX, **kwargs: Any
) -> forms.IntegerField:
    """A whole number from ``low`` to ``high`` (by default the largest an integer column holds):
    people per item, attempts, votes, seeds; required unless ``kwargs`` say otherwise
    (``required=False``, ``initial=`` …)."""
    return forms.IntegerField(
        min_value=low, max_value=high, label=label, help_text=help_text, **kwargs
    )


class NameForm(RecipeForm):
    name = forms.CharField(max_length=200, label=gettext_lazy("Name"))
    description = forms.CharField(
        required=False, label=gettext_lazy("Description"), widget=forms.Textarea(attrs={"rows": 2})
    )


class StageForm(forms.Form):
    def __init__(self, *args: Any, obj=None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.obj = obj

    @classmethod
    def initial_for(cls, obj) -> dict:
        """Initial values of the form as the detail page shows it."""
        return {}

    def job_params(self) -> dict:
        """``Job.params`` (JSON) from the cleaned data: a model choice ``scorer`` as
        ``scorer_id`` (None when left empty), a multiple one ``scorers`` as ``scorers_ids``."""
        params = {}
        for name, value in self.cleaned_data.items():
            if isinstance(self.fields[name], forms.ModelMultipleChoiceField):
                params[f"{name}_ids"] = [obj.pk for obj in value]
            elif isinstance(self.fields[name], forms.ModelChoiceField):
                params[f"{name}_id"] = value.pk if value is not None else None
            else:
                params[name] = value
        return params

    def invalid_message(self) -> str:
        return first_error(self)
