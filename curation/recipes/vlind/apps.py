from curation.recipes.framework import appconfig


class VLindConfig(appconfig.RecipeConfig):
    name = "curation.recipes.vlind"
    label = "vlind"
    verbose_name = "VLind-Bench"
