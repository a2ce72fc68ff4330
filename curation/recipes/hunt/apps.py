from curation.recipes.framework import appconfig


class HuntConfig(appconfig.RecipeConfig):
    name = "curation.recipes.hunt"
    label = "hunt"
    verbose_name = "Hunts"
