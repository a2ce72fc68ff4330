"""The recipes' generic JSON routes, mounted at ``api/recipes/`` (``framework.api``)."""

from django.urls import path

from . import api

urlpatterns = [
    path("", api.RecipeListApi.as_view(), name="api-recipes"),
    path("<slug:key>/objects/", api.RecipeObjectListApi.as_view(), name="api-recipe-objects"),
    path(
        "<slug:key>/objects/<int:object_id>/stages/<slug:stage>/",
        api.RecipeStageApi.as_view(),
        name="api-recipe-stage",
    ),
    path(
        "<slug:key>/objects/<int:object_id>/exports/",
        api.RecipeExportApi.as_view(),
        name="api-recipe-export",
    ),
    path(
        "<slug:key>/objects/<int:object_id>/exports/<int:job_id>/",
        api.RecipeExportFileApi.as_view(),
        name="api-recipe-export-file",
    ),
]
