from curation.recipes.framework import appconfig


class VHExpansionConfig(appconfig.RecipeConfig):
    name = "curation.recipes.vhexpansion"
    label = "vhexpansion"
    verbose_name = "VHExpansion"
