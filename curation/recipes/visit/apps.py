from curation.recipes.framework import appconfig


class VisitConfig(appconfig.RecipeConfig):
    name = "curation.recipes.visit"
    label = "visit"
    verbose_name = "VisIT-Bench"
