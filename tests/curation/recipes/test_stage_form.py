"""The stage buttons' forms (framework ``StageForm``): their cleaned data becomes ``Job.params``,
JSON only — a model choice as its id, a multiple model choice as the list of its ids."""

from __future__ import annotations

import json

import pytest
from django import forms

from annotator.platform.models import Project
from curation.recipes.framework.forms import StageForm

pytestmark = pytest.mark.django_db


class _Form(StageForm):
    label = forms.CharField(required=False)
    project = forms.ModelChoiceField(queryset=Project.objects.all(), required=False)
    projects = forms.ModelMultipleChoiceField(queryset=Project.objects.all(), required=False)


def test_job_params_give_model_choices_as_ids(project):
    # given a stage form with a single and a multiple model choice, both picked
    other = Project.objects.create(name="Other")
    form = _Form({"label": "v2", "project": project.pk, "projects": [other.pk, project.pk]})
    assert form.is_valid(), form.errors
    # when its Job.params are read
    params = form.job_params()
    # then the choices are ids (JSON), the other fields as cleaned
    assert json.loads(json.dumps(params)) == params
    assert sorted(params.pop("projects_ids")) == sorted([other.pk, project.pk])
    assert params == {"label": "v2", "project_id": project.pk}


def test_job_params_give_empty_choices_as_none_and_empty_list():
    form = _Form({})
    assert form.is_valid(), form.errors
    assert form.job_params() == {"label": "", "project_id": None, "projects_ids": []}
