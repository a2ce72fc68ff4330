from curation.recipes.framework import appconfig


class ToyConfig(appconfig.RecipeConfig):
    name = "tests.curation.recipes.toy"
    label = "toy"
