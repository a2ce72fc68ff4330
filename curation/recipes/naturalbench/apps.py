from curation.recipes.framework import appconfig


class NaturalBenchConfig(appconfig.RecipeConfig):
    name = "curation.recipes.naturalbench"
    label = "naturalbench"
    verbose_name = "NaturalBench"
